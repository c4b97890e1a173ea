"""The file headers of a Codex patch (`*** Begin Patch` … `*** End Patch`).

Codex's `apply_patch` (its freeform tool, and the same text given to an `apply_patch`
command in the shell) names every file it changes in a header line:
`*** Add File: P`, `*** Update File: P` (optionally followed by `*** Move to: Q`) and
`*** Delete File: P`. Each named path is written (deleted, created, or replaced).

Two readings, one grammar:

* `header_paths` finds every line that looks like a header, anywhere (a line is read
  with its surrounding blanks removed, as Codex reads a hunk's first line). The Codex
  adapter decides each as a write: a line it counts and Codex does not only makes the
  answer stricter.
* `parse` reads the whole text as Codex's grammar and returns its changes, or None
  when the text is not a well-formed patch or has any character whose reading could
  differ between this reader and Codex's (control characters, Unicode blanks). The
  shell analysis trusts only this reading.

Pure string work: no file is looked at.
"""

from __future__ import annotations

from typing import NamedTuple

from askgate.policy.lazy_regex import lazy_compile

__all__ = ["BEGIN", "END", "Change", "header_paths", "parse"]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
UPDATE = "*** Update File: "
DELETE = "*** Delete File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
_HEADER = lazy_compile(r"^\s*\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$")
_BLANKS = " \t"


class Change(NamedTuple):
    """One file a patch changes: `kind` is "add", "update" or "delete"; `moved_to` is the
    new path of an update that renames (both paths are written)."""

    kind: str
    path: str
    moved_to: str | None = None


def header_paths(patch: str) -> list[str]:
    """Every path a header-looking line names, in order, each once."""
    paths: list[str] = []
    for line in patch.split("\n"):  # as Codex splits: a path may hold other separators
        match = _HEADER.match(line)
        if match and match.group(1) not in paths:
            paths.append(match.group(1))
    return paths


def parse(patch: str) -> list[Change] | None:
    """The changes of a well-formed patch; None for anything else (fail closed)."""
    lines = [line.removesuffix("\r") for line in patch.strip(_BLANKS + "\n\r").split("\n")]
    if any(not _plain(line) for line in lines):
        return None
    if len(lines) < 2 or lines[0].strip(_BLANKS) != BEGIN or lines[-1].strip(_BLANKS) != END:
        return None
    body = lines[1:-1]
    changes: list[Change] = []
    index = 0
    while index < len(body):
        header = body[index].strip(_BLANKS)
        index += 1
        if header.startswith(ADD):
            while index < len(body) and body[index].startswith("+"):
                index += 1
            kind, path = "add", header.removeprefix(ADD)
            moved_to = None
        elif header.startswith(DELETE):
            kind, path, moved_to = "delete", header.removeprefix(DELETE), None
        elif header.startswith(UPDATE):
            kind, path = "update", header.removeprefix(UPDATE)
            moved_to = None
            if index < len(body) and body[index].strip(_BLANKS).startswith(MOVE):
                moved_to = body[index].strip(_BLANKS).removeprefix(MOVE)
                index += 1
            end = _update_end(body, index)
            if end is None or end == index:
                return None  # a line no chunk holds, or no lines at all (Codex rejects it)
            index = end
        else:
            return None  # not a header where one must be
        if not path or (moved_to is not None and not moved_to):
            return None
        changes.append(Change(kind, path, moved_to))
    if not changes:
        return None
    # A line that looks like a header but is content (a context line ` *** Add File: x`)
    # would read differently to a looser reader: not taken literally.
    written = {p for c in changes for p in (c.path, c.moved_to) if p is not None}
    if set(header_paths("\n".join(body))) != written:
        return None
    return changes


def _update_end(body: list[str], index: int) -> int | None:
    """Where an update's chunks end: at the next header (a line starting `***` other
    than `*** End of File`) or the end; None at a line no chunk can hold."""
    while index < len(body):
        line = body[index]
        if line.startswith("***") and line.strip(_BLANKS) != END_OF_FILE:
            break
        if line == "" or line[0] in " +-" or line.startswith("@@") or line == END_OF_FILE:
            index += 1
            continue
        return None
    return index


def _plain(line: str) -> bool:
    """No character another reader might split or trim differently (tabs are fine)."""
    return line.isprintable() or all(c == "\t" or c.isprintable() for c in line)
