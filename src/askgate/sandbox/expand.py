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

**Data trees** (`DATA_TREES`: `node_modules`, a Python environment's `site-packages`,
`.git/objects`, `target/`, `dist/`, `build/`, caches ...) hold what a registry, a compiler
or git made, often tens of thousands of files. They do not count against the budget: the
walk leaves them for last and searches them breadth first (shallow names such as
`dist/.env` first) within a budget of their own (`MAX_DATA_VISITED` entries, even in one
huge directory, and `MAX_DATA_SECONDS` of the plan's time). What that budget does not
reach is *unsearched*, named in `Expansion.unsearched`, and does not make the expansion
incomplete — the tradeoff is in
docs/sandbox.md ("Data trees"): a secret deep inside such a tree is not hidden by the
kernel (an agent's own read of it is still denied by the rules, a sandboxed command cannot
have copied one there since it cannot read the secrets, and what came from a registry is
public); an unlistable directory inside one still makes the expansion incomplete.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence

import msgspec

from askgate.policy.patterns import Pattern, compile_pattern

MAX_VISITED = 50_000
MAX_MATCHES = 256
MAX_SECONDS = 1.0
MAX_DATA_VISITED = 5_000  # entries of all data trees together, per walk
MAX_DATA_SECONDS = 0.2  # and at most this long (within the plan's MAX_SECONDS)
_GLOB = frozenset("*?")


class Expansion(msgspec.Struct, frozen=True):
    """What one pattern covers. `over_budget` names the budget that ran out, if any."""

    paths: tuple[str, ...]
    whole_tree: bool = False  # the pattern is `PREFIX/**` (or a literal path)
    over_budget: str | None = None
    # Data trees the walk did not finish (their own budget ran out): left to the rules.
    unsearched: tuple[str, ...] = ()


class DataTree(msgspec.Struct, frozen=True):
    """A directory name whose tree is data made by a tool (see the module docstring).
    `inside`: the parent directory's name, when the name alone is too common (`objects`).
    `examples` are data trees, `not_examples` are not (checked at import)."""

    name: str
    why: str
    inside: str | None = None
    examples: tuple[str, ...] = ()
    not_examples: tuple[str, ...] = ()


DATA_TREES: tuple[DataTree, ...] = (
    DataTree("node_modules", "npm, yarn and pnpm packages", examples=("web/node_modules",)),
    DataTree(
        "site-packages",
        "a Python environment's installed packages (.venv, venv, .tox)",
        examples=(".venv/lib/python3.12/site-packages",),
    ),
    DataTree("dist-packages", "Debian's Python packages", examples=("venv/lib/dist-packages",)),
    DataTree(
        "objects",
        "git's content-addressed objects",
        inside=".git",
        examples=(".git/objects",),
        not_examples=("src/objects", "objects"),
    ),
    DataTree("modules", "submodules' git directories", inside=".git", examples=(".git/modules",)),
    DataTree("__pycache__", "Python bytecode", examples=("src/app/__pycache__",)),
    DataTree(".mypy_cache", "mypy's cache", examples=(".mypy_cache",)),
    DataTree(".pytest_cache", "pytest's cache", examples=(".pytest_cache",)),
    DataTree(".ruff_cache", "ruff's cache", examples=(".ruff_cache",)),
    DataTree(".tox", "tox environments", examples=(".tox",)),
    DataTree(".nox", "nox environments", examples=(".nox",)),
    DataTree(".gradle", "Gradle's caches", examples=("android/.gradle",)),
    DataTree("target", "Cargo's and Maven's build output", examples=("target",)),
    DataTree("dist", "build output", examples=("dist", "packages/ui/dist")),
    DataTree("build", "build output", examples=("build",), not_examples=("builds",)),
    DataTree(".next", "Next.js build output", examples=("app/.next",)),
    DataTree(".nuxt", "Nuxt build output", examples=(".nuxt",)),
    DataTree(".turbo", "Turborepo's cache", examples=(".turbo",)),
    DataTree(".parcel-cache", "Parcel's cache", examples=(".parcel-cache",)),
    DataTree("bower_components", "Bower packages", examples=("bower_components",)),
    DataTree("vendor", "vendored dependencies (Go, PHP, Ruby)", examples=("vendor",)),
    DataTree(".yarn", "Yarn's package cache and releases", examples=(".yarn",)),
    DataTree(".pnpm-store", "pnpm's content store", examples=(".pnpm-store",)),
)
_DATA_TREE_PARENTS: dict[str, frozenset[str | None]] = {}
for _tree in DATA_TREES:
    _DATA_TREE_PARENTS[_tree.name] = _DATA_TREE_PARENTS.get(_tree.name, frozenset()) | {
        _tree.inside
    }


def is_data_tree(path: str) -> bool:
    """Is the directory `path` (absolute or relative) the root of a data tree?"""
    parent, name = os.path.split(path)
    parents = _DATA_TREE_PARENTS.get(name)
    if parents is None:
        return False
    return None in parents or os.path.basename(parent) in parents


def _check_data_trees() -> None:
    for tree in DATA_TREES:
        for example in tree.examples:
            if not is_data_tree(example) or os.path.basename(example) != tree.name:
                raise ValueError(f"data tree {tree.name!r}: example {example!r} does not match")
        for example in tree.not_examples:
            if is_data_tree(example):
                raise ValueError(f"data tree {tree.name!r}: {example!r} must not match")


_check_data_trees()


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
    whole_data_trees: frozenset[str] = frozenset(),
    skip: Sequence[str] = (),
    listed: set[str] | None = None,
) -> dict[str, Expansion]:
    """`expand` for several patterns at once: the patterns that search the same roots
    share one walk (a project is read once, not once per `**/…` rule). The budgets hold
    per walk; `deadline` (a `time.monotonic()` value, default now + `MAX_SECONDS`) for
    all of them. `final(pattern, path)`: will this match be masked (so what is below
    needs no search)? Default: yes. `whole_data_trees`: patterns that must search the
    data trees like any directory, on the main budget (past it: incomplete), for a
    caller to whom a match left in a data tree is not acceptable. `skip`: directories the
    walk for the anywhere-patterns never enters (the scratch directories, plan.py), though
    a search root may hold them. `listed`: gets every directory the walk for the
    anywhere-patterns listed (the sandbox watches them for protected names made there)."""
    budget = _Budget(
        MAX_VISITED if max_visited is None else max_visited,
        MAX_MATCHES if max_matches is None else max_matches,
        time.monotonic() + MAX_SECONDS if deadline is None else deadline,
        MAX_DATA_VISITED,
    )
    results: dict[str, Expansion] = {}
    walks: dict[tuple[bool, tuple[str, ...]], list[str]] = {}
    for pattern in dict.fromkeys(patterns):
        prefix, rest = fixed_prefix(pattern)
        if not rest:
            results[pattern] = Expansion((prefix or "/",), whole_tree=True)
        elif rest == "**" and prefix:
            results[pattern] = Expansion((prefix,), whole_tree=True)
        else:
            key = (False, (prefix,)) if prefix else (True, tuple(search_roots))
            walks.setdefault(key, []).append(pattern)
    for (anywhere, roots), group in walks.items():
        whole = frozenset(i for i, pattern in enumerate(group) if pattern in whole_data_trees)
        # `skip` holds for the anywhere-patterns only: a rooted one (`/var/*/key`) is
        # searched from its prefix as written.
        found = _walk(group, roots, budget, final, whole, skip if anywhere else ())
        results.update(found.result())
        if anywhere and listed is not None:
            listed.update(found.listed)
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
    def __init__(self, visited: int, matches: int, deadline: float, data_visited: int) -> None:
        self.visited = visited
        self.matches = matches
        self.deadline = deadline
        self.data_visited = data_visited


def _unlistable(directory: str, error: OSError) -> bool:
    """A directory this user can enter but not list: names inside it can be opened by
    whoever knows them, and the walk cannot know them."""
    return error.errno == errno.EACCES and os.access(directory, os.X_OK)


# A directory still to search: its path, the patterns still looking below it, and the data
# tree it lies in ("" outside any).
_Pending = tuple[str, frozenset[int], str]


class _Walk:
    """One walk from some roots for several patterns (see `_walk`)."""

    def __init__(
        self,
        patterns: Sequence[str],
        budget: _Budget,
        final: Callable[[str, str], bool] | None,
        whole: frozenset[int] = frozenset(),
    ) -> None:
        compiled = [compile_pattern("path", pattern) for pattern in patterns]
        self.whole = whole  # patterns that search data trees on the main budget
        self.patterns = patterns
        self.matchers = [pattern.match for pattern in compiled]
        self.any_of = _any_of(compiled)
        self.budget = budget
        self.final = final
        self.found: list[list[str]] = [[] for _ in patterns]
        self.every = frozenset(range(len(patterns)))
        self.over: str | None = None  # the expansion is incomplete: why
        self.too_many_matches = False
        self.in_data = False  # searching the data trees (a full match list stops that)
        self.seen: set[str] = set()  # roots may nest (the project and a writable root in it)
        self.listed: list[str] = []  # the directories listed, in order
        self.data: list[_Pending] = []  # data trees met by the main walk, searched last
        self.unsearched: list[set[str]] = [set() for _ in patterns]

    def start(self, roots: Sequence[str]) -> list[_Pending]:
        """The roots to walk. A root a pattern matches as a whole (`**` for a read-only
        agent) is one path for that pattern, not a walk of everything below it."""
        stack: list[_Pending] = []
        for root in dict.fromkeys(roots):
            root_hits = frozenset(i for i in self.every if self.matchers[i](root))
            for i in root_hits:
                self.found[i].append(root)
            if self.every - root_hits and os.path.isdir(root):
                stack.append((root, self.every - root_hits, ""))
        return stack

    def listing(self, directory: str, limit: int | None = None) -> list[os.DirEntry[str]] | None:
        """The entries of `directory` (at most `limit` + 1 of them: one more says there are
        more), or None (not listed; `over` says if that matters)."""
        if directory in self.seen:
            return None
        self.seen.add(directory)
        try:
            with os.scandir(directory) as found:
                entries = list(found if limit is None else itertools.islice(found, limit + 1))
            self.listed.append(directory)
            return entries
        except OSError as error:
            if _unlistable(directory, error):
                self.over = f"{directory} can be entered but not listed"
            return None  # neither listable nor enterable here: nor inside the sandbox

    def descend(
        self, entries: Sequence[os.DirEntry[str]], active: frozenset[int]
    ) -> Iterator[tuple[str, frozenset[int]]]:
        """Record the matches among `entries`; yield the directories to search below, with
        the patterns still looking there."""
        any_of, matchers = self.any_of, self.matchers  # locals: this loop is the walk's cost
        for entry in entries:
            path = entry.path
            if any_of is not None and any_of(path) is None:
                rest = active  # most entries match no pattern
            else:
                hits = frozenset(i for i in active if matchers[i](path))
                rest = active - hits | self.record(hits, path)
                if not rest:
                    continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)  # d_type: no stat call
            except OSError:
                continue
            if is_dir:
                yield path, rest

    def record(self, hits: frozenset[int], path: str) -> frozenset[int]:
        """Note `path` for the patterns in `hits`; return those that look on below it (the
        match will not be masked, so what is below still needs searching)."""
        for i in hits:
            if self.in_data and len(self.found[i]) >= self.budget.matches:
                self.too_many_matches = True  # not hidden: the tree is left unsearched
                continue
            self.found[i].append(path)
            if len(self.found[i]) > self.budget.matches:
                self.too_many_matches = True
        if self.final is None:
            return frozenset()
        return frozenset(i for i in hits if not self.final(self.patterns[i], path))

    def main(self, stack: list[_Pending]) -> None:
        """Depth first, everything but the data trees, within the budget."""
        visited = 0
        while stack and self.over is None:
            directory, active, _tree = stack.pop()
            entries = self.listing(directory)
            if entries is None:
                continue
            visited += len(entries)
            if visited > self.budget.visited:
                self.over = f"more than {self.budget.visited} entries searched"
            elif time.monotonic() > self.budget.deadline:
                self.over = f"the search took over {MAX_SECONDS} s"
            else:
                for path, rest in self.descend(entries, active):
                    # Only a directory named like a data tree pays for the full check.
                    # A data tree is left for last — unless a pattern that must search it
                    # whole is looking there: then all of them search it now (one listing).
                    if (
                        path.rpartition("/")[2] in _DATA_TREE_PARENTS
                        and not rest & self.whole
                        and is_data_tree(path)
                    ):
                        self.data.append((path, rest, path))
                    else:
                        stack.append((path, rest, ""))
                if self.too_many_matches:
                    self.over = f"more than {self.budget.matches} matches"

    def data_trees(self) -> None:
        """Breadth first, the data trees, within their own budget: what it does not reach
        is recorded as unsearched (not incomplete)."""
        queue: deque[_Pending] = deque(self.data)
        left = self.budget.data_visited
        # Its own slice of the plan's time: the walks after this one keep theirs.
        deadline = min(self.budget.deadline, time.monotonic() + MAX_DATA_SECONDS)
        self.in_data = True
        while queue and self.over is None:
            if left <= 0 or time.monotonic() > deadline or self.too_many_matches:
                for _directory, active, tree in queue:
                    self.leave(active, tree)
                return
            directory, active, tree = queue.popleft()
            entries = self.listing(directory, limit=left)  # one huge directory: bounded too
            if entries is None:
                continue
            if len(entries) > left:
                entries = entries[:left]
                self.leave(active, tree)
            left -= len(entries)
            queue.extend((path, rest, tree) for path, rest in self.descend(entries, active))
            if self.too_many_matches:
                self.leave(active, tree)

    def leave(self, active: frozenset[int], tree: str) -> None:
        """`tree` is not searched to the end for the patterns in `active`."""
        for i in active:
            self.unsearched[i].add(tree)

    def result(self) -> dict[str, Expansion]:
        if self.over is not None:
            return {
                p: Expansion(tuple(self.found[i]), over_budget=self.over)
                for i, p in enumerate(self.patterns)
            }
        return {
            p: Expansion(tuple(sorted(self.found[i])), unsearched=tuple(sorted(self.unsearched[i])))
            for i, p in enumerate(self.patterns)
        }


def _walk(
    patterns: Sequence[str],
    roots: Sequence[str],
    budget: _Budget,
    final: Callable[[str, str], bool] | None,
    whole: frozenset[int] = frozenset(),
    skip: Sequence[str] = (),
) -> _Walk:
    """One walk from `roots` for all `patterns` (its `result()`, and what it `listed`).
    Below a directory a pattern matched (and `final` confirms will be masked), that
    pattern stops looking (its mount covers the rest); the others go on. The data trees
    are searched last, on their own budget."""
    walk = _Walk(patterns, budget, final, whole)
    walk.seen.update(p for p in skip if p not in roots)  # listed never: not entered
    walk.main(walk.start(roots))
    walk.data_trees()
    return walk
