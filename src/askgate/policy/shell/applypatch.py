"""`apply_patch` in the shell: Codex's patch command, decided as writes of its headers.

Codex models often run their patch as a shell command (`apply_patch <<'PATCH' … PATCH`,
`apply_patch "$(cat <<'EOF' … EOF)"`, `cat <<'EOF' | apply_patch`); Codex applies it
itself, relative to the command's working directory. When the patch text is known
before the command runs (a quoted heredoc, a here-string or argument with no
expansion, the literal output of `cat <<'EOF'` piped straight in) and is a well-formed
patch (askgate.policy.patch_headers.parse), the unit writes exactly the paths of its
headers (`*** Move to:` adds the new path; a deletion is a write). Everything else
floors the unit to ask: a patch only known at run time, a malformed one, a path that is
absolute, climbs with `..`, starts with `~` or holds a glob or escape character, `-` or
a file name for an argument, more than one argument, two patches (argument and stdin).
"""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.patch_headers import parse
from askgate.policy.shell.words import Word

__all__ = ["PATCH_COMMANDS", "patch_writes"]

PATCH_COMMANDS = frozenset({"apply_patch", "applypatch"})  # the names Codex intercepts
_ODD = frozenset("*?[]{}\\\"'`$")  # characters a path here is never read with


def patch_writes(
    args: Sequence[Word], stdin: str | None, has_stdin: bool
) -> tuple[list[str], str | None]:
    """The paths a patch writes, or a floor reason (and no paths) when it is not known.

    `stdin`: the text on standard input when it is literal; `has_stdin`: the command
    has a standard input of its own (pipe, heredoc, here-string, file)."""
    if args:
        if len(args) > 1:
            return [], "apply_patch with more than one argument is not read"
        if has_stdin:
            return [], "apply_patch with both an argument and a standard input is not read"
        if args[0].dynamic is not None:
            return [], f"apply_patch's patch is only known at run time: {args[0].dynamic}"
        text = args[0].text
    elif stdin is not None:
        text = stdin
    elif has_stdin:
        return [], "apply_patch reads a patch only known at run time"
    else:
        return [], "apply_patch without a patch reads whatever its standard input holds"
    changes = parse(text)
    if changes is None:
        return [], "apply_patch's text is not a well-formed patch"
    written: list[str] = []
    for change in changes:
        for path in (change.path, change.moved_to):
            if path is None:
                continue
            reason = _unplaceable(path)
            if reason:
                return [], f"apply_patch path `{path}` {reason}"
            if path not in written:
                written.append(path)
    return written, None


def _unplaceable(path: str) -> str | None:
    """Why a patch path is not decided as a relative path of the unit's cwd."""
    if path.startswith("/"):
        return "is absolute"
    if path.startswith("~"):
        return "starts with `~`"
    if _ODD.intersection(path):
        return "holds a glob, quote or escape character"
    parts = path.split("/")
    if ".." in parts:
        return "climbs with `..`"
    if path.endswith("/") or all(part in ("", ".") for part in parts):
        return "names a directory"
    if path.startswith("-"):
        return "starts with `-`"
    return None
