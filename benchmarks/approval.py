"""Area 3: approval round trip (decide -> waiter released) on SQLite and PostgreSQL,
approvals per second, memory at 5,000 waiters, against a 1 s polling client.

Every measurement runs `python -m askgate.server.bench` in a child process with a timeout, and
that child drives real `askgate serve` processes on 127.0.0.1. PostgreSQL rows need
ASKGATE_BENCH_DATABASE_URL (or ASKGATE_TEST_DATABASE_URL, which scripts/test sets).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from typing import Any

from benchmarks.harness import NOT_BUILT, AreaReport, Figure, Row, Stats, run_process

NAME = "approval"
TITLE = "approval round trip, decide -> waiter released"


def _server_present() -> bool:
    try:
        return importlib.util.find_spec("askgate.server.bench") is not None
    except (ImportError, ValueError):
        return False


def _measure(
    what: str, n: int, *extra: str, timeout: float, sizes: str | None = None
) -> dict[str, Any]:
    done = run_process(
        [sys.executable, "-m", "askgate.server.bench", what, sizes or str(n), *extra],
        timeout=timeout,
    )
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise RuntimeError(f"askgate.server.bench {what} failed: {tail}")
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def _not_built(label: str, peer: str) -> Row:
    return Row(
        measured=label,
        ours=Figure(name="askgate", note=NOT_BUILT),
        peers=(Figure(name=peer, note=NOT_BUILT),),
    )


def _release_row(data: dict[str, Any]) -> Row:
    return Row(
        measured="decision -> waiter released, SQLite (p50, p99)",
        ours=Figure(name="askgate long-poll", stats=Stats.of(data["long_poll_ns"])),
        peers=(Figure(name="1 s polling client", stats=Stats.of(data["polling_ns"])),),
        target="p50 <= 5 ms, p99 <= 50 ms",
    )


def _pg_row(quick: bool) -> Row:
    label = "decision -> waiter released, PostgreSQL, 2 servers (p50, p99)"
    url = os.environ.get("ASKGATE_BENCH_DATABASE_URL") or os.environ.get(
        "ASKGATE_TEST_DATABASE_URL"
    )
    if not url:
        note = "no PostgreSQL (set ASKGATE_BENCH_DATABASE_URL)"
        return Row(measured=label, ours=Figure(name="askgate", note=note))
    data = _measure("pg-release", 2 if quick else 50, url, timeout=90 if quick else 300)
    return Row(
        measured=label,
        ours=Figure(
            name="created on one, decided on the other", stats=Stats.of(data["long_poll_ns"])
        ),
        target="within the SQLite p99",
    )


def _throughput_note(data: dict[str, Any]) -> str:
    """CPU per approval (load-independent), what it implies, and the machine's state."""
    n = int(data["approvals"])
    cpu = float(data.get("server_cpu_s", 0.0))
    if cpu <= 0:
        return ""
    client = float(data.get("client_cpu_s", 0.0))
    seconds = float(data["elapsed_ns"]) / 1e9
    released = Stats.of(data["release_ns"]) if data.get("release_ns") else None
    text = (
        f"server CPU {cpu * 1000 / n:.2f} ms per approval: one server process (one core) "
        f"can carry {n / cpu:,.0f} approvals/s; the driver took {client * 1000 / n:.2f} ms "
        f"per approval (its own core); the neighbours {data.get('others_cpu_s', 0) / seconds:.2f}"
        f" cores; load average {data.get('loadavg_before', 0):.1f} -> "
        f"{data.get('loadavg_after', 0):.1f}"
    )
    if released is not None:
        text += (
            f"; decide -> long-poll answered, under this load: p50 "
            f"{released.median_ns / 1e6:.1f} ms, p99 {released.p99_ns / 1e6:.1f} ms"
        )
    return text


def _throughput_row(data: dict[str, Any], database: str = "SQLite") -> Row:
    workers = int(data.get("workers", 32))
    return Row(
        measured=(
            f"create + long-poll + decide + release + consume, one {database} server, "
            f"{workers} keep-alive agents"
        ),
        ours=Figure(
            name="askgate",
            stats=Stats.of([float(data["elapsed_ns"])]),
            items=int(data["approvals"]),
            item_name="approvals",
            note=_throughput_note(data),
        ),
        target=">= 500 approvals/s on 2 cores, release p99 <= 50 ms"
        if database == "SQLite"
        else "",
    )


def _pg_throughput_row(quick: bool) -> Row | None:
    url = os.environ.get("ASKGATE_BENCH_DATABASE_URL") or os.environ.get(
        "ASKGATE_TEST_DATABASE_URL"
    )
    if not url:
        return None
    sizes = "100,16" if quick else "1000,16"
    data = _measure("throughput", 0, url, timeout=120 if quick else 600, sizes=sizes)
    return _throughput_row(data, "PostgreSQL")


def _waiters_row(data: dict[str, Any]) -> Row:
    n = int(data["waiters"])
    grown = (data["rss_during_kib"] - data["rss_before_kib"]) / 1024
    note = (
        f"{n:,} parked long-polls: server RSS {data['rss_before_kib'] / 1024:.0f} -> "
        f"{data['rss_during_kib'] / 1024:.0f} MiB (+{grown:.1f} MiB, "
        f"{grown * 1024 / n:.1f} KiB each); one decision released all in the time shown"
    )
    return Row(
        measured=(
            f"{n:,} concurrent waiters: RSS +{grown:.1f} MiB "
            f"({grown * 1024 / n:.1f} KiB each); time to release all"
        ),
        ours=Figure(name="askgate", stats=Stats.of([float(data["release_ns"])]), note=note),
        peers=(Figure(name="1 s polling client", note="holds no connection; pays latency"),),
    )


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    if not _server_present():
        rows = (
            _not_built("round trip on SQLite (p50, p99)", "1 s polling client"),
            _not_built("round trip on PostgreSQL (p50, p99)", "1 s polling client"),
            _not_built("approvals per second", "1 s polling client"),
            _not_built("memory at 5,000 concurrent waiters", "1 s polling client"),
        )
        return AreaReport(
            name=NAME,
            title=TITLE,
            status=NOT_BUILT,
            rows=rows,
            notes=(NOT_BUILT,),
            elapsed_s=time.perf_counter() - started,
        )
    sizes = "3,20,100" if quick else "100,3000,5000"
    data = _measure("sqlite", 0, timeout=120 if quick else 900, sizes=sizes)
    rows = [
        _release_row(data["release"]),
        _pg_row(quick),
        _throughput_row(data["throughput"]),
        _waiters_row(data["waiters"]),
    ]
    pg_throughput = _pg_throughput_row(quick)
    if pg_throughput is not None:
        rows.insert(3, pg_throughput)
    throughput_notes = tuple(
        f"{row.measured.split(', ')[1]}: {row.ours.note}"
        for row in rows
        if row.ours.items and row.ours.note
    )
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok",
        rows=tuple(rows),
        notes=(
            "real `askgate serve` processes on 127.0.0.1, socket clients; the polling peer "
            "re-reads the approval every second, the human answers at a random moment",
            "throughput: the driver runs on the same 2 cores (one asyncio process, raw "
            "keep-alive sockets); its CPU, the neighbours' and the load average are shown "
            "beside the server's, whose CPU per approval is the load-independent figure",
            *throughput_notes,
        ),
        elapsed_s=time.perf_counter() - started,
    )
