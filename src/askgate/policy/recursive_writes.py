"""Which write rules a directory written with everything below it meets.

`rm -r D`, `mv D x`, `cp -r src D`, `patch -d D` change files below D that the command
does not name. A write deny or ask rule applies to such a write when its pattern can
match below D: a rooted pattern whose literal root lies inside D (`~/.config/git/**`
for `rm -r ~/.config`), or an anywhere-pattern that names D itself by its last segment
(`**/.claude/settings.json` for `mv .claude x`, `**/.git/hooks/**` for `rm -rf .git`).
An anywhere-pattern is not applied to every directory (`rm -r build` could hold a
`.envrc` somewhere below, as any directory could): the same limit as recursive reads.
"""

from __future__ import annotations

import re

from askgate.policy import paths
from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.patterns import Pattern

_GLOB = lazy_compile(r"\[[^\]]*\]|[*?]")


def literal_root(pattern: str) -> str | None:
    """The directory a rooted path pattern cannot match outside of (None: anywhere)."""
    if not pattern.startswith("/"):
        return None
    glob = _GLOB.search(pattern)
    if glob is None:
        return paths.fold_lexically(pattern)
    literal = pattern[: glob.start()]
    root = literal.rsplit("/", 1)[0] if not literal.endswith("/") else literal
    return paths.fold_lexically(root or "/")


def _sample(segment: str) -> str:
    return "x" if segment == "**" else _GLOB.sub("x", segment)


def reaches_below(directory: str, expanded: str, pattern: Pattern) -> bool:
    """Does the (expanded) path pattern reach into `directory`? A rooted pattern does
    when its literal root lies inside `directory`, or when `directory` lies inside that
    root and the pattern matches a file directly below it (`DIR/x`). An anywhere-pattern
    (`**/…`) does only when one of its literal segments names `directory` itself (`**/.git/**`
    for `.git`): files below `directory` it could match elsewhere are not searched."""
    root = literal_root(expanded)
    if root is not None:
        if paths.is_inside(directory, root):
            return True  # the rule's whole tree is inside the directory
        return paths.is_inside(root, directory) and pattern.match(directory.rstrip("/") + "/x")
    if not expanded.startswith("**/"):
        return False
    base = directory.rstrip("/").rpartition("/")[2]
    segments = expanded[3:].split("/")
    for index, segment in enumerate(segments):
        if segment == base and not re.search(r"[*?\[]", segment):
            rest = "/".join(_sample(s) for s in segments[index + 1 :])
            sample = directory.rstrip("/") + ("/" + rest if rest else "")
            if pattern.match(sample):
                return True
    return False
