"""Area: ACP proxy pass-through latency — what `askgate acp` adds to every message that is
not a permission request.

An echo "agent" (a Python process that writes back each line it reads) is driven over
stdio with a ~1 KB JSON-RPC request, and the round trip is timed directly against the
agent and through `askgate acp -- <the same agent>`. Both run in the same benchmark, taking
turns, so the ratio compares like with like.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

from benchmarks.harness import (
    AreaReport,
    Figure,
    LinePeer,
    Row,
    bench_env,
    importable,
    not_built,
    proxy_overhead,
    round_trip_budget,
)

NAME = "acp"
TITLE = "ACP proxy, round trip of one ~1 KB message (echo agent)"
ECHO_AGENT = (
    "import sys\n"
    "for line in sys.stdin.buffer:\n"
    "    sys.stdout.buffer.write(line)\n"
    "    sys.stdout.buffer.flush()\n"
)


def _message(i: int) -> bytes:
    text = "x" * 900
    prompt = [{"type": "text", "text": text}]
    body = {"jsonrpc": "2.0", "id": i, "method": "session/prompt", "params": {"prompt": prompt}}
    return json.dumps(body).encode() + b"\n"


def _echo(peer: LinePeer, i: int) -> None:
    line = _message(i)
    got = peer.exchange(line)
    if got != line:
        raise RuntimeError(f"echo through {peer.argv[:3]} returned {got[:80]!r}")


def _started(argv: list[str], env: dict[str, str]) -> LinePeer:
    peer = LinePeer(argv, env)
    _echo(peer, -1)
    return peer


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    measured = "round trip, direct vs through askgate acp"
    if not importable("askgate.adapters.acp.cli"):
        return not_built(NAME, TITLE, measured, "askgate acp", started)
    with tempfile.TemporaryDirectory(prefix="askgate-bench-acp-") as tmp:
        agent = os.path.join(tmp, "echo_agent.py")
        with open(agent, "w", encoding="utf-8") as out:
            out.write(ECHO_AGENT)
        env = bench_env(tmp, ASKGATE_AUDIT_LOG="off")
        proxy, direct = proxy_overhead(
            lambda: _started([sys.executable, agent], env),
            lambda: _started(
                [sys.executable, "-m", "askgate", "acp", "--", sys.executable, agent], env
            ),
            _echo,
            round_trip_budget(quick),
        )
    row = Row(
        measured=measured,
        ours=Figure(name="through askgate acp", stats=proxy),
        peers=(Figure(name="direct to the agent", stats=direct),),
    )
    added = (proxy.median_ns - direct.median_ns) / 1000
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok",
        rows=(row,),
        notes=(f"the proxy adds {added:.0f} µs per round trip (median; two hops)",),
        elapsed_s=time.perf_counter() - started,
    )
