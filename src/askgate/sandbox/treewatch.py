"""Protected names made *below* the roots, found after the run by what changed there.

A protected file that does not exist at the project root gets a placeholder or a
tripwire (plan.py, tripwires.py). One a command makes in a subdirectory (`sub/.envrc`,
which direnv runs on `cd sub`; `src/.claude/settings.json`, read by an agent started in
`src/`; a nested repository's missing `.git/config`) cannot: a mount needs a name known
in advance, and a placeholder in every directory would be seen by git and by every tool.

What the plan does know is every directory its walk listed (expand.py) to find what the
anywhere-patterns match. Once the run's placeholders stand, the change time (`st_ctime`)
of each is recorded (`snapshot`, unchanged.py's list format). The kernel sets a
directory's ctime whenever an entry is made, renamed or removed in it, and a command
cannot set it back: `touch -d` sets mtime, and moves ctime forward. After the run:

* the prepared wrapper runs askgate's static `unchanged` program on the list (one exec,
  no Python): only when a directory changed does the tail step start;
* the tail (`disarm_watch`) looks in each changed directory for the protected names,
  walks each directory made during the run, and moves aside what the command made at
  one (`NAME.askgate-blocked`, as a tripwire does).

A name through `.git` (a nested repository's `config`, `hooks/`) counts only in a
repository that existed when the command started: one the command made is its own
(docs/sandbox.md). The project's `.git/modules` (submodules' git directories) is watched
too: a repository the command makes there has its configuration moved aside when that
runs programs, since a later run could stage a gitlink to it and `git status` outside
recurses into it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Sequence

from askgate.policy.model import Surface
from askgate.sandbox.expand import fixed_prefix
from askgate.sandbox.planentry import (
    CLOCK_SLACK_S,
    PlanEntry,
    TreeWatch,
    _Source,
    move_aside,
    outside_env,
    symlinks_on_the_way,
)

# Below a `.git`, ordinary work changes these all the time and nothing protected lives in
# them (the objects, the refs and their logs).
GIT_BUSY = frozenset({"objects", "refs", "logs", "lfs"})
# A walk of what the run made: everything, within this (a tree of a million entries made
# in one command is not searched to the end, and the tail says so).
MAX_NEW_VISITED = 1_000_000
MAX_NEW_SECONDS = 30.0
MODULE_CONFIGS = ("config", "config.worktree")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def literal_tails(
    sources: Iterable[_Source], root: str, blocked: Callable[[Surface, str], bool]
) -> list[tuple[str, str]]:
    """(tail, why) for each anywhere-pattern naming a literal path (`**/.envrc`,
    `**/.claude/settings.json`, `**/.codex/**` -> `.codex`): a rule's pattern only where
    the policy blocks a write of that name at the project root."""
    tails: dict[str, str] = {}
    for source in sources:
        if not source.pattern.startswith("**/"):
            continue
        prefix, rest = fixed_prefix(source.pattern[3:])
        if not prefix or rest not in ("", "**"):
            continue
        if source.rule and not blocked(Surface.WRITE, os.path.join(root, prefix)):
            continue
        tails.setdefault(prefix, source.why)
    return sorted(tails.items())


def excluded(directory: str, git_dir: str) -> bool:
    """Not watched: the project's own git directory (its protected parts are holes and
    tripwires of their own) but its `modules`, and the busy parts of any git directory."""
    modules = os.path.join(git_dir, "modules")
    if _under(directory, git_dir) and not _under(directory, modules):
        return True
    parts = directory.split("/")
    if ".git" in parts:
        below = parts[parts.index(".git") + 1 :]
        return any(part in GIT_BUSY for part in below)
    return False


def build(
    *,
    listed: Iterable[str],
    real_roots: Sequence[tuple[str, str]],
    writable: Sequence[str],
    covered: Sequence[str],
    git_dir: str,
    tails: Sequence[tuple[str, str]],
    existing: Iterable[str],
) -> TreeWatch | None:
    """The watch for a plan. `listed`: the directories the walk listed, as it named them;
    `real_roots`: (search root, its real path), to name them as the mounts do;
    `writable`: the writable roots; `covered`: hidden or frozen directories (nothing can
    be made there)."""
    if not tails:
        return None

    def real(path: str) -> str:
        for named, resolved in real_roots:
            if _under(path, named):
                return resolved + path[len(named) :]
        return path

    directories = []
    for directory in sorted(dict.fromkeys(real(p) for p in listed)):
        if not any(_under(directory, root) for root in writable):
            continue  # read-only inside: nothing can be made there
        if any(_under(directory, mask) for mask in covered) or excluded(directory, git_dir):
            continue
        directories.append(directory)
    modules = os.path.join(git_dir, "modules")
    absent: list[str] = []
    if (
        os.path.isdir(git_dir)
        and not os.path.lexists(modules)
        and any(_under(git_dir, root) for root in writable)
    ):
        absent.append(modules)
    if not directories and not absent:
        return None
    return TreeWatch(
        directories=tuple(directories),
        names=tuple(tail for tail, _why in tails),
        whys=tuple(why for _tail, why in tails),
        existing=tuple(sorted({real(p) for p in existing})),
        absent=tuple(absent),
        modules=modules if os.path.isdir(git_dir) else "",
    )


def watch_of(document: object) -> TreeWatch | None:
    """A plan's watch from its JSON document (a sweep reads plans loosely)."""
    import msgspec

    if document is None:
        return None
    try:
        return msgspec.convert(document, type=TreeWatch)
    except (msgspec.ValidationError, TypeError):
        return None


def paths_to_record(watch: TreeWatch | None) -> list[str]:
    return [] if watch is None else [*watch.directories, *watch.absent]


def snapshot(watch: TreeWatch | None, *also: str) -> bytes:
    """The watched directories' change times (and those of `also`), once the run's
    placeholders stand: one list, one wait for the clock."""
    from askgate.sandbox.unchanged import snapshot as record

    return record([*paths_to_record(watch), *also])


def read_snapshot(path: str) -> tuple[bytes | None, float]:
    """A run's snapshot and when it was taken (None and the epoch when it is lost:
    every directory then counts as changed)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(), os.fstat(handle.fileno()).st_mtime
    except OSError:
        return None, 0.0


def disarm_watch(
    watch: TreeWatch | None,
    recorded: bytes | None,
    since: float,
    until: float | None = None,
) -> list[str]:
    """After the run (every process of it gone): move aside each protected name the
    command made in a watched directory that changed, or in a directory it made. One
    line for each. `recorded`: the snapshot (None: lost, so every directory counts as
    changed); `since`: when it was taken; `until`: when the run ended, for a sweep that
    comes later (what was made after it is not the command's)."""
    if watch is None:
        return []
    from askgate.sandbox.unchanged import changed

    try:
        moved = changed(recorded) if recorded is not None else None
    except ValueError:
        moved = None
    if moved is None:
        moved = paths_to_record(watch)
    if not moved:
        return []
    finder = _Finder(watch, since, outside_env(), until)
    for directory in moved:
        finder.look(directory)
    finder.walk_new()
    return finder.lines


class _Finder:
    def __init__(
        self, watch: TreeWatch, since: float, env: dict[str, str], until: float | None
    ) -> None:
        self.until = None if until is None else until + CLOCK_SLACK_S
        self.watch = watch
        self.watched = frozenset(watch.directories)
        self.existing = frozenset(watch.existing)
        self.tails = [
            (tail.split("/"), why) for tail, why in zip(watch.names, watch.whys, strict=True)
        ]
        self.since = since - CLOCK_SLACK_S
        self.env = env
        self.git_dir = os.path.dirname(watch.modules) if watch.modules else ""
        self.lines: list[str] = []
        self.new: list[str] = []
        self.done: set[str] = set()

    def made(self, path: str) -> bool:
        """Made (or changed) during the run: its ctime is not older than the snapshot."""
        try:
            changed = os.lstat(path).st_ctime
        except OSError:
            return False
        return changed >= self.since and (self.until is None or changed <= self.until)

    def look(self, directory: str) -> None:
        """A watched directory that changed: its own names, and what the run made in it."""
        if directory in self.watch.absent:
            if os.path.isdir(directory) and not os.path.islink(directory):
                self.new.append(directory)
            return
        if os.path.islink(directory) or not os.path.isdir(directory):
            return  # replaced or removed: its parent changed too, and is looked at
        self.check(directory)
        try:
            with os.scandir(directory) as entries:
                children = list(entries)
        except OSError:
            return
        for child in children:
            if child.is_symlink() and self.made(child.path):
                self.check_names(child.path)  # a link made here may lead to a protected name
            elif (
                child.is_dir(follow_symlinks=False)
                and child.path not in self.watched
                and not (self.git_dir and excluded(child.path, self.git_dir))
            ):
                self.new.append(child.path)

    def check(self, directory: str) -> None:
        self.check_names(directory)
        if self.watch.modules and _under(directory, self.watch.modules):
            self.check_module(directory)

    def walk_new(self) -> None:
        """Every directory the run made (and what is below), depth first, within the
        budget; symlinks are not followed."""
        stack = list(self.new)
        visited, deadline = 0, time.monotonic() + MAX_NEW_SECONDS
        while stack:
            directory = stack.pop()
            if directory in self.done:
                continue
            self.done.add(directory)
            self.check(directory)
            try:
                with os.scandir(directory) as entries:
                    children = list(entries)
            except OSError:
                continue
            visited += len(children)
            if visited > MAX_NEW_VISITED or time.monotonic() > deadline:
                self.lines.append(
                    "the directories the command made hold too many entries to search "
                    f"them all for protected names (stopped in {directory})"
                )
                return
            for child in children:
                if child.is_symlink():
                    self.check_names(child.path)
                elif child.is_dir(follow_symlinks=False):
                    stack.append(child.path)

    def check_names(self, directory: str) -> None:
        for segments, why in self.tails:
            for start in range(len(segments)):
                if start and not directory.endswith("/" + "/".join(segments[:start])):
                    continue
                path = os.path.join(directory, *segments[start:])
                if ".git" in segments and not self.repository_existed(path, segments):
                    continue
                self.catch(path, why)

    def repository_existed(self, path: str, segments: Sequence[str]) -> bool:
        """A name through `.git` counts only in a repository the plan saw (it listed
        that `.git`): one the command made is its own."""
        git = path
        for _ in range(len(segments) - list(segments).index(".git") - 1):
            git = os.path.dirname(git)
        return git in self.watched

    def catch(self, path: str, why: str) -> None:
        if path in self.done or path in self.existing or not os.path.lexists(path):
            return
        self.done.add(path)
        links = symlinks_on_the_way(os.path.dirname(path))
        if links:
            link = links[0]
            # A symlink the run made on the way (`ln -s /tmp/x sub2`) leads to a
            # protected name elsewhere: the link is what goes (a user's own stays).
            if self.made(link) and link not in self.done:
                self.done.add(link)
                self.move(link, f"it leads to {path}; {why}")
            return
        if self.made(path):
            self.move(path, why)

    def check_module(self, directory: str) -> None:
        """A git directory in `.git/modules` the run made or changed: its configuration
        is moved aside when it runs programs (a gitlink staged later would run it)."""
        from askgate.sandbox.gitconfig import runs_programs

        for name in MODULE_CONFIGS:
            config = os.path.join(directory, name)
            if config in self.done or config in self.existing:
                continue
            with contextlib.suppress(OSError):
                info = os.lstat(config)
                if not stat.S_ISREG(info.st_mode) or not self.made(config):
                    continue
                self.done.add(config)
                if runs_programs(config, self.env):
                    self.move(config, "git: a repository made in .git/modules runs programs")

    def move(self, path: str, why: str) -> None:
        target, error = move_aside(path)
        if target is None:
            self.lines.append(f"removed {path} the command made ({error}); {why}")
        else:
            self.lines.append(f"moved {path} the command made to {target}: {why}")


def entries_of(plan_entries: Iterable[PlanEntry]) -> list[str]:
    """The paths of holes, placeholders and tripwires: never moved aside by the watch."""
    found: list[str] = []
    for entry in plan_entries:
        found += [p for p in (entry.path, entry.named, entry.placeholder) if p]
    return found
