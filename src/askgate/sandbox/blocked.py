"""After a failed command: which path did the sandbox block, and which rule put it there?

The kernel reports a blocked operation only as an errno text in the program's own error
output. These are the texts each mechanism produces (reference: sandboxes.md §4):

    bwrap mask, read        Permission denied (mode 000), No such file or directory
    outside writable roots  Read-only file system
    rename/remove a mask    Device or resource busy
    Landlock                Permission denied, Invalid cross-device link (EXDEV)
    seccomp / no caps       Operation not permitted

`explain_failure` scans the tail of stderr for lines with one of them, pulls out the words
that look like paths, and maps the first one the plan covers back to its rule. Pure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from askgate.policy.paths import fold_lexically, is_inside
from askgate.sandbox.plan import PlanEntry, SandboxPlan

DENIAL_TEXTS = (
    "permission denied",
    "read-only file system",
    "operation not permitted",
    "device or resource busy",
    "invalid cross-device link",
    "no such file or directory",
    "eacces",
    "erofs",
    "eperm",
)
_SPLIT = re.compile(r"[\s'\"`‘’(),\[\]{}<>]+|: ")


def _candidates(line: str, cwd: str) -> Iterable[str]:
    for token in _SPLIT.split(line):
        token = token.rstrip(":;,.") if not token.endswith("..") else token
        if not token or "\x00" in token:
            continue
        if token.startswith("/"):
            yield fold_lexically(token)
        elif "/" in token or token.startswith("."):
            yield fold_lexically(os.path.join(cwd, token))


def _ordered_candidates(line: str, lowered: str, cwd: str) -> list[str]:
    """Paths nearest the errno text first: after it (`Permission denied: '/p'`), then
    before it, closest first (`bash: line 1: /p: Read-only file system`)."""
    at = min(i for i in (lowered.find(t) for t in DENIAL_TEXTS) if i >= 0)
    after = list(_candidates(line[at:], cwd))
    before = list(_candidates(line[:at], cwd))
    return after + before[::-1]


def _covering(path: str, entries: Iterable[PlanEntry]) -> PlanEntry | None:
    for entry in entries:
        if is_inside(path, entry.path) or (entry.named and is_inside(path, entry.named)):
            return entry
    return None


def explain_failure(plan: SandboxPlan, stderr_tail: str) -> str | None:
    """One line naming the blocked path and its rule, or None when nothing matches."""
    writable = [entry.path for entry in plan.writable]
    for line in stderr_tail.splitlines()[-200:]:
        lowered = line.lower()
        if not any(text in lowered for text in DENIAL_TEXTS):
            continue
        for path in _ordered_candidates(line, lowered, plan.cwd):
            entry = _covering(path, plan.read_denies)
            if entry is not None:
                return f"blocked reading {path}: hidden by {entry.why}"
            entry = _covering(path, plan.write_holes)
            if entry is not None:
                return f"blocked writing {path}: read-only by {entry.why}"
            if "read-only file system" in lowered and not any(
                is_inside(path, root) for root in writable
            ):
                return (
                    f"blocked writing {path}: outside the writable directories "
                    "(no write allow rule or [sandbox] writable covers it)"
                )
    return None
