"""How the tests wait: on a condition or an event, never on a sleep as synchronisation, and
under one generous safety bound that only keeps a broken run from hanging pytest for ever. A
slow machine makes a wait longer, never a failure: no functional test asserts an upper bound
on time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

SAFETY_TIMEOUT = 600.0


def wait_until(
    condition: Callable[[], object], what: str = "", timeout: float = SAFETY_TIMEOUT
) -> object:
    """The first truthy value of `condition()`, looked at every 10 ms; fails (naming `what`)
    only once the safety bound has passed."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        pause.wait(0.01)
