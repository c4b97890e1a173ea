"""How the tests wait: on a condition or an event, never on a sleep as synchronisation, and
under one generous safety bound that only keeps a broken run from hanging pytest for ever. A
slow machine makes a wait longer, never a failure: no functional test asserts an upper bound
on time."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

SAFETY_TIMEOUT = 600.0
T = TypeVar("T")
POLL_INTERVAL = 0.01  # how often a condition is looked at again; never a bound on anything
# Only for the failure message of a process that exited early: a child of it may still hold
# its pipes open, and the message is not worth a second hang.
_OUTPUT_READ_TIMEOUT = 10.0


def wait_until(
    condition: Callable[[], T],
    what: str = "",
    timeout: float = SAFETY_TIMEOUT,
    *,
    process: subprocess.Popen[Any] | None = None,
) -> T:
    """The first truthy value of `condition()`, looked at every 10 ms; fails (naming `what`)
    only once the safety bound has passed or, when `process` is given, as soon as that
    process has exited with the condition still false (its output in the message: it will
    never make the condition true now)."""
    wait = _Wait(condition, what, timeout, process)
    pause = threading.Event()
    while not wait.over():
        pause.wait(POLL_INTERVAL)
    return wait.value


async def wait_until_async(
    condition: Callable[[], T], what: str = "", timeout: float = SAFETY_TIMEOUT
) -> T:
    """`wait_until` for a coroutine: the event loop runs (the condition's maker may be a task
    on it) between two looks at the condition."""
    wait = _Wait(condition, what, timeout, None)
    while not wait.over():
        await asyncio.sleep(POLL_INTERVAL)
    return wait.value


class _Wait(Generic[T]):
    """One look at a condition after another, shared by the thread and the coroutine form."""

    def __init__(
        self,
        condition: Callable[[], T],
        what: str,
        timeout: float,
        process: subprocess.Popen[Any] | None,
    ) -> None:
        self.condition, self.what, self.process = condition, what or str(condition), process
        self.deadline = time.monotonic() + timeout
        self.value: T  # the condition's last value, set by every look

    def over(self) -> bool:
        """True once the condition holds; raises once it never will (or the bound passed)."""
        self.value = self.condition()
        if self.value:
            return True
        if self.process is not None and self.process.poll() is not None:
            self.value = self.condition()  # made true by the process just before it exited
            if self.value:
                return True
            raise AssertionError(_ended_before(self.process, self.what))
        if time.monotonic() > self.deadline:
            raise AssertionError(f"timed out waiting for {self.what}")
        return False


def _ended_before(process: subprocess.Popen[Any], what: str) -> str:
    """What a failure says of a process that exited: its status and whatever it printed."""
    try:
        out, err = process.communicate(timeout=_OUTPUT_READ_TIMEOUT)
    except subprocess.TimeoutExpired:
        out = err = "(not read: a child of it still holds the pipe open)"
    said = "" if out is None and err is None else f" (stdout: {out!r}, stderr: {err!r})"
    return f"{process.args!r} exited with status {process.returncode} before {what}{said}"
