"""Area 4: subagent forwarding round trip — the watcher-based file protocol against
the same protocol polled every 250 ms (the pi permission system's interval).

Samples come from `askgate.forwarding.bench.round_trip_samples(n, mode=...,
poll_interval=...)`, run in a child process with a timeout so a stuck watcher can
never hang the suite. Samples are nanoseconds (ints); floats are read as seconds.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time

from benchmarks.harness import NOT_BUILT, AreaReport, Figure, Row, Stats, run_process

NAME = "forwarding"
TITLE = "forwarding round trip, child request -> parent answer -> child released"

POLL_INTERVAL = 0.25

_SCRIPT = """\
import json, sys
from askgate.forwarding.bench import round_trip_samples
n, mode, interval = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
samples = round_trip_samples(n, mode=mode, poll_interval=interval)
print(json.dumps([float(s) if isinstance(s, float) else int(s) for s in samples]))
"""


def _present() -> bool:
    try:
        return importlib.util.find_spec("askgate.forwarding.bench") is not None
    except (ImportError, ValueError):
        return False


def _to_ns(samples: list[float | int]) -> list[float]:
    if samples and all(isinstance(s, float) for s in samples):
        return [s * 1e9 for s in samples]
    return [float(s) for s in samples]


def _samples(n: int, mode: str, timeout: float) -> Stats:
    done = run_process(
        [sys.executable, "-c", _SCRIPT, str(n), mode, str(POLL_INTERVAL)], timeout=timeout
    )
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise RuntimeError(f"round_trip_samples(mode={mode!r}) failed: {tail}")
    lines = done.stdout.decode().strip().splitlines()
    return Stats.of(_to_ns(json.loads(lines[-1])))


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    measured = f"round trip, watcher vs {POLL_INTERVAL * 1000:.0f} ms polling"
    if not _present():
        return AreaReport(
            name=NAME,
            title=TITLE,
            status=NOT_BUILT,
            rows=(
                Row(
                    measured=measured,
                    ours=Figure(name="askgate", note=NOT_BUILT),
                    peers=(Figure(name="250 ms polling", note=NOT_BUILT),),
                ),
            ),
            elapsed_s=time.perf_counter() - started,
        )
    n_watch, n_poll = (5, 1) if quick else (200, 60)
    try:
        watch = _samples(n_watch, "watch", timeout=20 if quick else 60)
        poll = _samples(n_poll, "poll", timeout=20 if quick else 60)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"forwarding benchmark timed out after {exc.timeout} s") from exc
    row = Row(
        measured=measured,
        ours=Figure(name="askgate watch", stats=watch),
        peers=(Figure(name=f"{POLL_INTERVAL * 1000:.0f} ms polling", stats=poll),),
    )
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok",
        rows=(row,),
        notes=("both modes run askgate's file protocol; only the wake-up differs",),
        elapsed_s=time.perf_counter() - started,
    )
