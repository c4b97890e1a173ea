"""Which files below a directory an anywhere-pattern read rule names (issue #22, class 1).

`grep -r SECRET .`, `rg KEY`, `tar c .`, `cp -r . /tmp/x`, `git add -A` read the content
of every file below a directory, including the ones the command never names. A read deny
or ask rule without a literal root (`**/.env*`) can match any of them, so the directory
is walked (bounded, symlinks not followed, as the sandbox's own search does) and each
file a blocking rule names is decided as a read of that file. The walk gives up past a
budget of entries or time, or at a directory it cannot list: the caller then asks.

Programs that list names and never open files (`ls -R`, `find`, `fd`, `du`, `tree`) are
not walked: a name is not a secret. With `[sandbox] bash = "required"` the kernel hides
those files inside the project (sandbox/plan.py), so a directory there is not walked.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

MAX_ENTRIES = 10_000
MAX_SECONDS = 0.1
# Recursive readers that only list names (their `recursive_reads` hold no content).
NAME_LISTERS = frozenset({"ls", "find", "fd", "fdfind", "du", "tree"})


class Walk:
    """What a bounded walk found: matching paths, or why it could not finish."""

    __slots__ = ("incomplete", "matches")

    def __init__(self) -> None:
        self.matches: list[str] = []
        self.incomplete: str | None = None


def matching_below(
    directory: str,
    names: Callable[[str], bool],
    *,
    max_entries: int = MAX_ENTRIES,
    max_seconds: float = MAX_SECONDS,
    max_matches: int = 64,
) -> Walk:
    """Every path below `directory` (itself included) for which `names(path)` holds."""
    walk = Walk()
    deadline = time.monotonic() + max_seconds
    if names(directory.rstrip("/") or "/"):
        walk.matches.append(directory)
    try:
        if not os.path.isdir(directory) or os.path.islink(directory):
            return walk
    except (ValueError, OSError):
        walk.incomplete = f"{directory!r} cannot be examined"
        return walk
    pending: list[str] = [directory]
    seen = 0
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                listed: Sequence[os.DirEntry[str]] = list(entries)
        except (ValueError, OSError) as exc:
            walk.incomplete = f"{current!r} cannot be listed ({exc})"
            return walk
        for entry in listed:
            seen += 1
            if seen > max_entries or (seen % 512 == 0 and time.monotonic() > deadline):
                walk.incomplete = f"{directory!r} holds too many files to search in advance"
                return walk
            path = entry.path
            if names(path):
                walk.matches.append(path)
                if len(walk.matches) >= max_matches:
                    return walk
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(path)
            except OSError:
                walk.incomplete = f"{path!r} cannot be examined"
                return walk
    return walk
