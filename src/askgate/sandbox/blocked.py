"""After a failed command: which path did the sandbox block, and which rule put it there?

The kernel reports a blocked operation only as an errno text in the program's own error
output. These are the texts each mechanism produces (reference: sandboxes.md §4):

    bwrap mask, read        a hidden file reads as empty (no error); a file in a hidden
                            directory: No such file or directory
    outside writable roots  Read-only file system
    rename/remove a mask    Device or resource busy
    Landlock                Permission denied, Invalid cross-device link (EXDEV)
    seccomp / no caps       Operation not permitted

`explain_failure` scans the tail of stderr for lines with one of them, pulls out the words
that look like paths — first the one the errno text belongs to (`PROG: NAME: Read-only file
system`, `… 'NAME': …`, `…: 'NAME'`), never the program that printed the line (`/bin/bash:
line 1: …`) — and maps the first one the plan covers back to its rule. A hidden file that
reads as empty produces no errno text: a failing command whose errors mention a hidden
path gets a line saying so. Pure.
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
_PROGRAM = re.compile(r"^\s*([^\s:]+): ")  # `cp: …`, `/bin/bash: line 1: …`
_QUOTED = re.compile(r"['\"`‘’]([^'\"`‘’]+)['\"`‘’]")


def _candidates(line: str, cwd: str) -> Iterable[str]:
    for token in _SPLIT.split(line):
        token = token.rstrip(":;,.") if not token.endswith("..") else token
        if not token or "\x00" in token:
            continue
        if token.startswith("/"):
            yield fold_lexically(token)
        elif "/" in token or token.startswith("."):
            yield fold_lexically(os.path.join(cwd, token))


def _absolute(token: str, cwd: str) -> str | None:
    token = token.strip()
    if not token or "\x00" in token:
        return None
    return fold_lexically(token if token.startswith("/") else os.path.join(cwd, token))


def _named_by_errno(line: str, at: int, cwd: str) -> str | None:
    """The name the errno text is about: `…: NAME: Read-only file system` (perror's
    format) or the last quoted name before it (`cannot create regular file 'x': …`)."""
    head = line[:at]
    if not head.endswith(": "):
        return None
    segment = head[:-2]
    segment = segment[segment.rfind(": ") + 2 :] if ": " in segment else segment
    quoted = _QUOTED.findall(segment)
    if quoted:
        return _absolute(quoted[-1], cwd)
    if " " in segment.strip() and not segment.strip().startswith("/"):
        return None
    if _PROGRAM.match(line) and line.strip().startswith(segment.strip() + ":"):
        return None  # `bash: Permission denied`: the program, not a file
    return _absolute(segment, cwd)


def _ordered_candidates(line: str, lowered: str, cwd: str) -> list[str]:
    """Paths nearest the errno text first: the name it is about, after it
    (`Permission denied: '/p'`), then before it, closest first — never the program that
    printed the line."""
    at = min(i for i in (lowered.find(t) for t in DENIAL_TEXTS) if i >= 0)
    program = _PROGRAM.match(line)
    skip = _absolute(program.group(1), cwd) if program else None
    named = _named_by_errno(line, at, cwd)
    after = list(_candidates(line[at:], cwd))
    before = [p for p in _candidates(line[:at], cwd) if p != skip]
    found = ([named] if named is not None else []) + after + before[::-1]
    return list(dict.fromkeys(found))


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
    return _mentions_hidden(plan, stderr_tail)


def _mentions_hidden(plan: SandboxPlan, stderr_tail: str) -> str | None:
    """A hidden file reads as empty: no errno, but the program's complaint names it."""
    for line in stderr_tail.splitlines()[-200:]:
        for path in _candidates(line, plan.cwd):
            entry = _covering(path, plan.read_denies)
            if entry is not None:
                return f"{path} is hidden (it reads as empty inside the sandbox): {entry.why}"
    return None
