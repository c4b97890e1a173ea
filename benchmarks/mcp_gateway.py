"""Area: MCP gateway overhead — what `askgate mcp` adds to one `tools/call`.

A minimal stdio MCP server (a Python process that answers every `tools/call` at once) is
driven with raw JSON-RPC frames, directly and through `askgate mcp -- <the same server>`,
taking turns. The call is `read_file` with a path argument inside the project, allowed by
an `mcp` rule: the gateway decides the name and the path (both symlink forms) through the
gate and writes the review log line, then forwards the frame. A second row times a frame
the gateway passes without deciding (`ping`). The budget (issue 27): ≤ 1 ms added, median.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable

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

NAME = "mcp"
TITLE = "MCP gateway, one tools/call round trip (instant stdio server)"
SERVER = (
    "import json, sys\n"
    "for line in sys.stdin.buffer:\n"
    "    m = json.loads(line)\n"
    "    if 'id' not in m:\n"
    "        continue\n"
    "    r = {'content': [{'type': 'text', 'text': 'ok'}]} if m.get('method') == 'tools/call'"
    " else {}\n"
    "    sys.stdout.buffer.write(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r})"
    ".encode() + b'\\n')\n"
    "    sys.stdout.buffer.flush()\n"
)
POLICY = '[mcp]\n"bench:*" = "allow"\n'
BUDGET_MS = 1.0
Call = Callable[[LinePeer, int], None]


def _peer(argv: list[str], env: dict[str, str], cwd: str, call: Call) -> LinePeer:
    """An MCP server (direct or behind the gateway), initialized and answering `call`."""
    peer = LinePeer(argv, env, cwd)
    init = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip
    peer.exchange(json.dumps(init).encode() + b"\n")
    call(peer, -1)
    return peer


def _caller(method: str, path: str) -> Call:
    def call(peer: LinePeer, i: int) -> None:
        if method == "tools/call":
            params = {"name": "read_file", "arguments": {"path": path}}
            body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        else:
            body = {"jsonrpc": "2.0", "id": i, "method": "ping"}
        got = json.loads(peer.exchange(json.dumps(body).encode() + b"\n"))
        if got.get("id") != i or "result" not in got or got["result"].get("isError"):
            raise RuntimeError(f"{method} through {peer.argv[:4]} returned {got!r}")

    return call


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    measured = "tools/call round trip, direct vs through askgate mcp"
    if not importable("askgate.mcp.cli"):
        return not_built(NAME, TITLE, measured, "askgate mcp", started)
    budget = round_trip_budget(quick)
    rows: list[Row] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="askgate-bench-mcp-") as tmp:
        project = os.path.join(tmp, "project")
        os.makedirs(os.path.join(project, ".git"))
        os.makedirs(os.path.join(project, "src"))
        with open(os.path.join(project, "src", "main.py"), "w", encoding="utf-8") as out:
            out.write("print('hi')\n")
        server = os.path.join(tmp, "server.py")
        with open(server, "w", encoding="utf-8") as out:
            out.write(SERVER)
        policy = os.path.join(tmp, "policy.toml")
        with open(policy, "w", encoding="utf-8") as out:
            out.write(POLICY)
        # The review log stays on: every decision writes its line, as in real use.
        review = os.environ.get("BENCH_AUDIT") or os.path.join(tmp, "review.jsonl")
        env = bench_env(tmp, ASKGATE_AUDIT_LOG=review)
        gateway = [sys.executable, "-m", "askgate", "mcp", "--config", policy, "--name", "bench"]
        for method, label in (("tools/call", "tools/call (decided)"), ("ping", "ping (passed)")):
            call = _caller(method, os.path.join(project, "src", "main.py"))

            proxy, direct = proxy_overhead(
                lambda: _peer([sys.executable, server], env, project, call),  # noqa: B023
                lambda: _peer([*gateway, "--", sys.executable, server], env, project, call),  # noqa: B023
                call,
                budget,
            )
            rows.append(
                Row(
                    measured=f"{label}, direct vs through askgate mcp",
                    ours=Figure(name="through askgate mcp", stats=proxy),
                    peers=(Figure(name="direct to the server", stats=direct),),
                )
            )
            added_ms = (proxy.median_ns - direct.median_ns) / 1e6
            verdict = "within" if added_ms <= BUDGET_MS else "OVER"
            notes.append(
                f"{label}: the gateway adds {added_ms * 1000:.0f} µs (median; {verdict} the "
                f"{BUDGET_MS:g} ms budget)"
            )
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok",
        rows=tuple(rows),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )
