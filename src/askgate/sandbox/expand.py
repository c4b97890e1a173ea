"""Turn a path glob into the concrete paths a mount can cover.

A kernel sandbox hides or freezes concrete paths, not patterns. A pattern is split into
its fixed prefix (the leading segments without `*` or `?`) and the rest:

* no rest: the path itself (which may not exist yet);
* rest `/**`: the whole directory (`~/.ssh/**` -> `~/.ssh`);
* anything else: the existing paths that match, found by walking from the fixed prefix —
  or, for a pattern that starts with `**` (anywhere), from the given search roots, never
  from `/`. The walk does not follow symlinked directories, stops descending into a
  directory that matched *and will be masked* (its mount covers what is below; a match
  the policy excepts, such as a directory named `.env.example/`, is walked on), and gives
  up past a budget of visited entries, matches or time (a slow disk or a huge tree must
  not stall every command), or at a directory it can enter but not list (`chmod 311`: a
  name inside can be opened but not found): the caller must then ask instead of guessing.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Callable, Sequence

import msgspec

from askgate.policy.patterns import Pattern, compile_pattern

MAX_VISITED = 50_000
MAX_MATCHES = 256
MAX_SECONDS = 1.0
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
    deadline: float | None = None,
    final: Callable[[str, str], bool] | None = None,
) -> Expansion:
    """The concrete paths `pattern` (absolute, or starting with `**`) covers."""
    found = expand_all(
        [pattern],
        search_roots,
        max_visited=max_visited,
        max_matches=max_matches,
        deadline=deadline,
        final=final,
    )
    return found[pattern]


def expand_all(
    patterns: Sequence[str],
    search_roots: Sequence[str],
    *,
    max_visited: int | None = None,
    max_matches: int | None = None,
    deadline: float | None = None,
    final: Callable[[str, str], bool] | None = None,
) -> dict[str, Expansion]:
    """`expand` for several patterns at once: the patterns that search the same roots
    share one walk (a project is read once, not once per `**/…` rule). The budgets hold
    per walk; `deadline` (a `time.monotonic()` value, default now + `MAX_SECONDS`) for
    all of them. `final(pattern, path)`: will this match be masked (so what is below
    needs no search)? Default: yes."""
    budget = _Budget(
        MAX_VISITED if max_visited is None else max_visited,
        MAX_MATCHES if max_matches is None else max_matches,
        time.monotonic() + MAX_SECONDS if deadline is None else deadline,
    )
    results: dict[str, Expansion] = {}
    walks: dict[tuple[str, ...], list[str]] = {}
    for pattern in dict.fromkeys(patterns):
        prefix, rest = fixed_prefix(pattern)
        if not rest:
            results[pattern] = Expansion((prefix or "/",), whole_tree=True)
        elif rest == "**" and prefix:
            results[pattern] = Expansion((prefix,), whole_tree=True)
        else:
            walks.setdefault((prefix,) if prefix else tuple(search_roots), []).append(pattern)
    for roots, group in walks.items():
        results.update(_walk(group, roots, budget, final))
    return results


def _any_of(compiled: Sequence[Pattern]) -> Callable[[str], object] | None:
    """One regex for all the patterns: most entries match none, and one test of the
    alternation is much cheaper than one test per pattern. None: test one by one."""
    if len(compiled) < 2:
        return None
    try:
        union = "|".join(f"(?:{pattern.regex.pattern})" for pattern in compiled)
        return re.compile(union, re.DOTALL).fullmatch
    except re.error:
        return None


class _Budget:
    def __init__(self, visited: int, matches: int, deadline: float) -> None:
        self.visited = visited
        self.matches = matches
        self.deadline = deadline


def _unlistable(directory: str, error: OSError) -> bool:
    """A directory this user can enter but not list: names inside it can be opened by
    whoever knows them, and the walk cannot know them."""
    return error.errno == errno.EACCES and os.access(directory, os.X_OK)


def _walk(
    patterns: Sequence[str],
    roots: Sequence[str],
    budget: _Budget,
    final: Callable[[str, str], bool] | None,
) -> dict[str, Expansion]:
    """One walk from `roots` for all `patterns`. Below a directory a pattern matched (and
    `final` confirms will be masked), that pattern stops looking (its mount covers the
    rest); the others go on."""
    compiled = [compile_pattern("path", pattern) for pattern in patterns]
    matchers = [pattern.match for pattern in compiled]
    any_of = _any_of(compiled)
    found: list[list[str]] = [[] for _ in patterns]
    every = frozenset(range(len(patterns)))
    stack: list[tuple[str, frozenset[int]]] = []
    for root in dict.fromkeys(roots):
        # A search root a pattern matches as a whole (`**` for a read-only agent) is one
        # path for that pattern, not a walk of everything below it.
        root_hits = frozenset(i for i in every if matchers[i](root))
        for i in root_hits:
            found[i].append(root)
        if every - root_hits and os.path.isdir(root):
            stack.append((root, every - root_hits))
    visited = 0
    over: str | None = None
    seen: set[str] = set()  # roots may nest (the project and a writable root inside it)
    while stack and over is None:
        directory, active = stack.pop()
        if directory in seen:
            continue
        seen.add(directory)
        try:
            entries = list(os.scandir(directory))
        except OSError as error:
            if _unlistable(directory, error):
                over = f"{directory} can be entered but not listed"
                break
            continue  # neither listable nor enterable here: nor inside the sandbox
        visited += len(entries)
        if visited > budget.visited:
            over = f"more than {budget.visited} entries searched"
        elif time.monotonic() > budget.deadline:
            over = f"the search took over {MAX_SECONDS} s"
        for entry in entries if over is None else ():
            path = entry.path
            if any_of is not None and any_of(path) is None:
                hits: frozenset[int] = frozenset()
            else:
                hits = frozenset(i for i in active if matchers[i](path))
            for i in hits:
                found[i].append(path)
                if len(found[i]) > budget.matches:
                    over = f"more than {budget.matches} matches"
            rest = active - hits
            if final is not None:
                rest |= frozenset(i for i in hits if not final(patterns[i], path))
            if not rest:
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)  # d_type: no stat call
            except OSError:
                continue
            if is_dir:
                stack.append((path, rest))
    if over is not None:
        return {p: Expansion(tuple(found[i]), over_budget=over) for i, p in enumerate(patterns)}
    return {p: Expansion(tuple(sorted(found[i]))) for i, p in enumerate(patterns)}
