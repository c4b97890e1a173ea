"""Links a command makes, and the paths that later pass through them.

`ln -s ~ h && cat h/.ssh/id_rsa` reads `~/.ssh/id_rsa`, but nothing named `h` exists
when askgate decides, so resolving symlinks on the filesystem cannot see it. Every
link made by `ln` (any spelling), `link`, `cp -s|-l` (and a link renamed by `mv`) is
recorded; afterwards each unit's paths are rewritten: a path spelled through the link
name is also checked as its target, and a path that may pass through a link in a way
the text does not settle (another directory, a target only known at run time) is ask.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from askgate.policy.model import Action, Unit
from askgate.policy.shell.argv import scan
from askgate.policy.shell.cwd import normalise
from askgate.policy.shell.words import Word

Link = tuple[str, str | None]  # (name as written, target as written or None = unknown)
Made = tuple[str, str | None, int]  # a Link and the index of the unit that made it
LINK_MAKERS = frozenset({"ln", "link", "cp", "mv", "mount"})


def made_links(name: str, args: Sequence[Word], known: Sequence[Made]) -> list[Link]:
    """The links `name args…` makes (cp only with -s/-l; mv only renaming a link)."""
    if name == "mount":
        # `mount --bind SRC DST` (or -B, --rbind, -o bind): DST shows SRC.
        texts = [w.text for w in args]
        binding = any(t in ("--bind", "-B", "--rbind", "-R") or "bind" in t for t in texts)
        operands = [w for w in args if not w.text.startswith("-") and "bind" not in w.text]
        if not binding or len(operands) < 2:
            return []
        shown, mount_point = operands[-2], operands[-1]
        return [
            (
                mount_point.text if mount_point.static else "\x00",
                shown.text if shown.static else None,
            )
        ]
    result = scan(args, "tS", frozenset({"--target-directory", "--suffix", "--backup"}),
                  permute=True)  # fmt: skip
    if name == "cp" and not any(_links(option) for option, _ in result.options):
        return []
    operands = result.operands
    directory = result.values("-t", "--target-directory")
    pairs: list[tuple[Word, str | None]] = []  # (source operand, link name)
    if directory:
        base = directory[-1].text if directory[-1].static else None
        for word in operands:
            pairs.append((word, None if base is None else f"{base}/{_basename(word.text)}"))
    elif len(operands) == 1 and name != "mv":
        pairs.append((operands[0], _basename(operands[0].text)))
    elif len(operands) >= 2:
        last = operands[-1]
        for word in operands[:-1]:
            if not last.static:
                pairs.append((word, None))
                continue
            # `ln -s T NAME` makes NAME, or NAME/T when NAME is a directory: both.
            pairs.append((word, last.text))
            pairs.append((word, f"{last.text}/{_basename(word.text)}"))
    symbolic = any(
        o.startswith("--sym") or (not o.startswith("--") and "s" in o) for o, _ in result.options
    )
    links: list[Link] = []
    for source, link_name in pairs:
        target: str | None = source.text if source.static else None
        if link_name is not None and link_name.endswith(("/~", "/$HOME")):
            link_name = link_name.rsplit("/", 1)[0] + "/\x01"  # named after a home directory
        if (
            symbolic
            and target is not None
            and link_name is not None
            and "/" in link_name
            and not target.startswith(("/", "~", "$HOME"))
        ):
            # A relative symlink target is relative to the link's own directory.
            target = normalise(f"{link_name.rsplit('/', 1)[0]}/{target}") or "."
        if name == "mv":
            previous = _link_target(source.text, known) if source.static else None
            if previous is None:
                continue
            target = previous[1]
        links.append((link_name or "\x00", target))
    return links


def _links(option: str) -> bool:
    """cp's -s/-l (also in a cluster) and --symbolic-link/--link in any abbreviation."""
    if option.startswith("--"):
        return option.startswith(("--sy", "--li")) and (
            "--symbolic-link".startswith(option) or "--link".startswith(option)
        )
    return "s" in option or "l" in option


def _link_target(path: str, links: Sequence[Made]) -> Link | None:
    clean = normalise(path) or "."
    for link in links:
        if (normalise(link[0]) or ".") == clean:
            return link[0], link[1]
    return None


def apply_links(units: Sequence[Unit], links: Sequence[Made]) -> list[Unit]:
    """Every unit but a link's maker sees the link (a loop may run a later maker first)."""
    out: list[Unit] = []
    for index, unit in enumerate(units):
        mine = [(n, t) for n, t, maker in links if maker != index]
        out.append(through_links(unit, mine) if mine else unit)
    return out


def _basename(text: str) -> str:
    return text.rstrip("/").rsplit("/", 1)[-1] or text


def through_links(unit: Unit, links: Sequence[Link]) -> Unit:
    """The unit with paths through links made in the command checked as their targets."""
    names = [(normalise(n) or ".", _basename(n), t) for n, t in links]
    reasons: list[str] = []

    def rewrite(path: str) -> list[str]:
        clean = normalise(path) or "."
        out = [path]
        segments = clean.split("/")
        for name, base, target in names:
            if name.endswith("/\x01"):
                if clean.startswith(name[:-1]):
                    reasons.append(f"`{path}` may pass through a link this command makes")
                continue
            if name == "\x00" or target is None:
                if base in segments or name == "\x00":
                    reasons.append(f"`{path}` may pass through a link this command makes")
                continue
            if clean == name or clean.startswith(name + "/"):
                rest = clean[len(name) :]
                out.append(target.rstrip("/") + rest if rest else target)
            elif base in segments:
                reasons.append(f"`{path}` may pass through the link `{name}` this command makes")
        return out

    def group(paths: Sequence[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for path in paths for p in rewrite(path)))

    reads, writes, operands = group(unit.reads), group(unit.writes), group(unit.operands)
    recursive = group(unit.recursive_reads)
    directories = [d for d in (unit.cwd, *unit.other_cwds) if d]
    for directory in directories:
        if len(rewrite(directory)) > 1:
            reasons.append(f"runs in `{directory}`, through a link this command makes")
    if (reads, writes, operands, recursive) == (
        unit.reads,
        unit.writes,
        unit.operands,
        unit.recursive_reads,
    ) and not reasons:
        return unit
    floor, reason = unit.floor, unit.floor_reason
    if reasons:
        joined = "; ".join(dict.fromkeys(reasons))
        floor, reason = Action.ASK, f"{reason}; {joined}" if reason else joined
    return msgspec.structs.replace(
        unit,
        reads=reads,
        writes=writes,
        operands=operands,
        recursive_reads=recursive,
        floor=floor,
        floor_reason=reason,
    )
