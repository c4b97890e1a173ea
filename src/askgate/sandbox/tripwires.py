"""Tripwires: protected files that did not exist when the command started.

A missing protected file whose placeholder would be seen by ordinary work (`.envrc`,
`.npmrc`, `.gitattributes`, `.git/commondir` — git lists a placeholder as untracked and
`git add -A` commits it; an empty `commondir` stops git altogether) is watched instead of
held: once the command is over — under bubblewrap every process of it is gone by then
(its PID namespace ended) — whatever appeared at such a name is moved aside to
`NAME.askgate-blocked[-N]`, never run by anything, and one line says so. Its parent
directory is pinned (`plan.pinned_ancestors`), so the name cannot have been reached
through a renamed directory either.

A run of `askgate sandbox` (the CLI) arms its tripwires in askgate's state directory
(hidden inside every sandbox) before bwrap starts, as `armed/PID-START.json`, and removes
the record once it has disarmed them itself. When the CLI is killed (SIGKILL, an OOM
kill) bwrap dies with it (`--die-with-parent`) and the record stays: the next askgate
process's sweep (`sweep_armed`) finds its process gone and moves aside what appeared at
those names while the run lasted — as the sweep does for a hook-prepared run
(`placeholders._disarm_interrupted`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence

import msgspec

from askgate.sandbox.plan import PlanEntry
from askgate.sandbox.procstat import process_start

SUFFIX = ".askgate-blocked"
ARMED = "armed"
# What a sweep counts as made while the run lasted: changed after the record was written,
# less this much (file times are coarser than the clock on some filesystems).
CLOCK_SLACK_S = 1.0


class Armed(msgspec.Struct, frozen=True, kw_only=True):
    """The tripwires of one running `askgate sandbox`, for a sweep after it was killed."""

    pid: int
    start: str  # the process's start time (`/proc/PID/stat` field 22): PID reuse
    started: float  # time.time() when armed
    tripwires: tuple[PlanEntry, ...]


def sprung(tripwires: Sequence[PlanEntry]) -> list[PlanEntry]:
    return [entry for entry in tripwires if os.path.lexists(entry.path)]


def disarm(tripwires: Sequence[PlanEntry]) -> list[str]:
    """Move aside what the command created at a tripwire; one line for each."""
    lines: list[str] = []
    for entry in sprung(tripwires):
        target = entry.path + SUFFIX
        for number in range(1, 100):
            if not os.path.lexists(target):
                break
            target = f"{entry.path}{SUFFIX}-{number}"
        try:
            os.rename(entry.path, target)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)  # cannot be kept aside: it must not stay in place
            lines.append(
                f"removed {entry.path} the command created ({error.strerror}); {entry.why}"
            )
            continue
        lines.append(f"moved {entry.path} the command created to {target}: {entry.why}")
    return lines


def shell_test(tripwires: Sequence[PlanEntry]) -> str | None:
    """A bash condition (builtins only) true when any tripwire sprung, or None."""
    import shlex

    if not tripwires:
        return None
    # One `[` for all of them (each is absolute, so no operand reads as an operator):
    # half the wrapper's tail cost of a `[ ] || [ ]` chain.
    tests = [f"-e {shlex.quote(e.path)} -o -L {shlex.quote(e.path)}" for e in tripwires]
    return f"[ {' -o '.join(tests)} ]"


def _process_start(pid: int) -> str | None:
    return process_start(pid, zombie_is_gone=True)


def arm(state_dir: str, tripwires: Sequence[PlanEntry]) -> str | None:
    """Record this process's tripwires before its sandbox starts; the record's path (to
    pass to `unarm`), or None when there is nothing to watch. Raises OSError when the
    record cannot be written (the caller refuses: an unrecorded tripwire could outlive a
    kill)."""
    if not tripwires:
        return None
    me = os.getpid()
    directory = os.path.join(state_dir, ARMED)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    record = Armed(
        pid=me, start=_process_start(me) or "", started=time.time(), tripwires=tuple(tripwires)
    )
    path = os.path.join(directory, f"{me}-{record.start}.json")
    temporary = f"{path}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(msgspec.json.encode(record))
    os.replace(temporary, path)
    return path


def unarm(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def sweep_armed(state_dir: str) -> list[str]:
    """Disarm the tripwires of every `askgate sandbox` run that died before it could (its
    process is gone, so is its sandbox): what was made at them since the run was armed
    is moved aside. One line for each."""
    directory = os.path.join(state_dir, ARMED)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    lines: list[str] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as handle:
                record = msgspec.json.decode(handle.read(), type=Armed)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            if name.endswith(".tmp") and _process_start(_pid_of(name)) is not None:
                continue  # being written by a live run
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        if record.start and _process_start(record.pid) == record.start:
            continue  # still running: it disarms its own
        made = []
        for entry in record.tripwires:
            with contextlib.suppress(OSError):
                if os.lstat(entry.path).st_ctime >= record.started - CLOCK_SLACK_S:
                    made.append(entry)
        lines += disarm(made)
        unarm(path)
    return lines


def _pid_of(name: str) -> int:
    head = name.split("-", 1)[0]
    return int(head) if head.isdigit() else 0
