"""Turn a path glob into the concrete paths a mount can cover.

A kernel sandbox hides or freezes concrete paths, not patterns. A pattern is split into
its fixed prefix (the leading segments without `*` or `?`) and the rest:

* no rest: the path itself (which may not exist yet);
* rest `/**`: the whole directory (`~/.ssh/**` -> `~/.ssh`);
* anything else: the existing paths that match, found by walking from the fixed prefix —
  or, for a pattern that starts with `**` (anywhere), from the given search roots, never
  from `/`. The walk does not follow symlinked directories, stops descending into a
  directory that matched (its mount covers what is below), and gives up past a budget of
  visited entries or matches: the caller must then ask instead of guessing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

import msgspec

from askgate.policy.patterns import compile_pattern

MAX_VISITED = 50_000
MAX_MATCHES = 256
_GLOB = frozenset("*?")


class Expansion(msgspec.Struct, frozen=True):
    """What one pattern covers. `over_budget` names the budget that ran out, if any."""

    paths: tuple[str, ...]
    whole_tree: bool = False  # the pattern is `PREFIX/**` (or a literal path)
    over_budget: str | None = None


def fixed_prefix(pattern: str) -> tuple[str, str]:
    """(`/a/b`, `rest`) for `/a/b/rest...`; ("", pattern) for an anywhere pattern."""
    segments = pattern.split("/")
    fixed: list[str] = []
    for index, segment in enumerate(segments):
        if _GLOB & set(segment):
            rest = "/".join(segments[index:])
            return "/".join(fixed), rest
        fixed.append(segment)
    return pattern, ""


def expand(
    pattern: str,
    search_roots: Sequence[str],
    *,
    max_visited: int | None = None,
    max_matches: int | None = None,
) -> Expansion:
    """The concrete paths `pattern` (absolute, or starting with `**`) covers."""
    max_visited = MAX_VISITED if max_visited is None else max_visited
    max_matches = MAX_MATCHES if max_matches is None else max_matches
    prefix, rest = fixed_prefix(pattern)
    if not rest:
        return Expansion((prefix or "/",), whole_tree=True)
    if rest == "**" and prefix:
        return Expansion((prefix,), whole_tree=True)
    roots = [prefix] if prefix else list(search_roots)
    matcher = compile_pattern("path", pattern).match
    found: list[str] = []
    visited = 0
    # A search root the pattern matches as a whole (`**` for a read-only agent) is one
    # path, not a walk of everything below it.
    found += [root for root in roots if matcher(root)]
    stack = [root for root in roots if os.path.isdir(root) and root not in found]
    seen_roots: set[str] = set()
    while stack:
        directory = stack.pop()
        if directory in seen_roots:
            continue
        seen_roots.add(directory)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue  # unreadable here means unreadable inside the sandbox too
        visited += len(entries)
        if visited > max_visited:
            return Expansion(tuple(found), over_budget=f"more than {max_visited} entries searched")
        for entry in entries:
            path = entry.path
            if matcher(path):
                found.append(path)
                if len(found) > max_matches:
                    return Expansion(tuple(found), over_budget=f"more than {max_matches} matches")
                continue
            try:
                is_dir = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
            except OSError:
                continue
            if is_dir:
                stack.append(path)
    return Expansion(tuple(sorted(found)))
