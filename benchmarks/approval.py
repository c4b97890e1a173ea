"""Area 3: approval round trip (decide -> waiter released) on SQLite and PostgreSQL,
approvals per second, memory at 5,000 waiters, against a 1 s polling client.

The approval server is built by a later issue; until `askgate.server` imports this
area reports "not built yet" and measures nothing.
"""

from __future__ import annotations

import importlib.util
import time

from benchmarks.harness import NOT_BUILT, AreaReport, Figure, Row

NAME = "approval"
TITLE = "approval round trip, decide -> waiter released"

_PLANNED = (
    "round trip on SQLite (p50, p99)",
    "round trip on PostgreSQL (p50, p99)",
    "approvals per second",
    "memory at 5,000 concurrent waiters",
)


def _server_present() -> bool:
    try:
        return importlib.util.find_spec("askgate.server") is not None
    except (ImportError, ValueError):
        return False


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    if _server_present():
        note = "askgate.server is present; its benchmark rows land with the approval-server issue"
        status = "partial"
    else:
        note = NOT_BUILT
        status = NOT_BUILT
    rows = tuple(
        Row(
            measured=label,
            ours=Figure(name="askgate", note=NOT_BUILT),
            peers=(Figure(name="1 s polling client", note=NOT_BUILT),),
        )
        for label in _PLANNED
    )
    return AreaReport(
        name=NAME,
        title=TITLE,
        status=status,
        rows=rows,
        notes=(note,),
        elapsed_s=time.perf_counter() - started,
    )
