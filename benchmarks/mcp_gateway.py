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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from benchmarks.harness import NOT_BUILT, AreaReport, Budget, Figure, Row, sample_interleaved

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
READY_TIMEOUT_S = 30.0
BUDGET_MS = 1.0


def _present() -> bool:
    try:
        import askgate.mcp.cli  # noqa: F401
    except ImportError:
        return False
    return True


class _Peer:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, method: str) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd, bufsize=0
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.method = method
        self.path = os.path.join(cwd, "src", "main.py")
        init = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip
        self.stdin.write(json.dumps(init).encode() + b"\n")
        self.stdout.readline()
        self._call(-1)

    def _call(self, i: int) -> None:
        if self.method == "tools/call":
            params = {"name": "read_file", "arguments": {"path": self.path}}
            body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        else:
            body = {"jsonrpc": "2.0", "id": i, "method": "ping"}
        self.stdin.write(json.dumps(body).encode() + b"\n")
        got = json.loads(self.stdout.readline())
        if got.get("id") != i or "result" not in got or got["result"].get("isError"):
            raise RuntimeError(f"{self.method} through {self.proc.args[:4]} returned {got!r}")

    def round_trip(self) -> Callable[[int], object]:
        return self._call

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    measured = "tools/call round trip, direct vs through askgate mcp"
    if not _present():
        return AreaReport(
            name=NAME,
            title=TITLE,
            status=NOT_BUILT,
            rows=(Row(measured=measured, ours=Figure(name="askgate mcp", note=NOT_BUILT)),),
            elapsed_s=time.perf_counter() - started,
        )
    budget = (
        Budget(warmup=5, min_samples=30, max_samples=60, seconds=1.0)
        if quick
        else Budget(warmup=50, min_samples=1000, max_samples=4000, seconds=10.0)
    )
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
        env = {
            **os.environ,
            "HOME": tmp,
            "XDG_STATE_HOME": tmp,
            "XDG_CONFIG_HOME": tmp,
            # The review log stays on: every decision writes its line, as in real use.
            "ASKGATE_AUDIT_LOG": os.environ.get("BENCH_AUDIT") or os.path.join(tmp, "review.jsonl"),
            "ASKGATE_MANAGED_POLICY": os.path.join(tmp, "none.toml"),
        }
        gateway = [sys.executable, "-m", "askgate", "mcp", "--config", policy, "--name", "bench"]
        for method, label in (("tools/call", "tools/call (decided)"), ("ping", "ping (passed)")):
            direct = _Peer([sys.executable, server], env, project, method)
            proxied = _Peer([*gateway, "--", sys.executable, server], env, project, method)
            try:
                stats = sample_interleaved(
                    {
                        "gateway": (proxied.round_trip(), budget),
                        "direct": (direct.round_trip(), budget),
                    },
                    rounds=5,
                )
            finally:
                direct.close()
                proxied.close()
            rows.append(
                Row(
                    measured=f"{label}, direct vs through askgate mcp",
                    ours=Figure(name="through askgate mcp", stats=stats["gateway"]),
                    peers=(Figure(name="direct to the server", stats=stats["direct"]),),
                )
            )
            added_ms = (stats["gateway"].median_ns - stats["direct"].median_ns) / 1e6
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
