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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from benchmarks.harness import NOT_BUILT, AreaReport, Budget, Figure, Row, sample_interleaved

NAME = "acp"
TITLE = "ACP proxy, round trip of one ~1 KB message (echo agent)"
ECHO_AGENT = (
    "import sys\n"
    "for line in sys.stdin.buffer:\n"
    "    sys.stdout.buffer.write(line)\n"
    "    sys.stdout.buffer.flush()\n"
)
READY_TIMEOUT_S = 30.0


def _present() -> bool:
    try:
        import askgate.adapters.acp.cli  # noqa: F401
    except ImportError:
        return False
    return True


def _message(i: int) -> bytes:
    text = "x" * 900
    prompt = [{"type": "text", "text": text}]
    body = {"jsonrpc": "2.0", "id": i, "method": "session/prompt", "params": {"prompt": prompt}}
    return json.dumps(body).encode() + b"\n"


class _Peer:
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self._check(-1, deadline=time.monotonic() + READY_TIMEOUT_S)

    def _check(self, i: int, deadline: float | None = None) -> None:
        line = _message(i)
        self.stdin.write(line)
        got = self.stdout.readline()
        if got != line:
            raise RuntimeError(f"echo through {self.proc.args[:3]} returned {got[:80]!r}")

    def round_trip(self) -> Callable[[int], object]:
        return self._check

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    measured = "round trip, direct vs through askgate acp"
    if not _present():
        return AreaReport(
            name=NAME,
            title=TITLE,
            status=NOT_BUILT,
            rows=(Row(measured=measured, ours=Figure(name="askgate acp", note=NOT_BUILT)),),
            elapsed_s=time.perf_counter() - started,
        )
    budget = (
        Budget(warmup=5, min_samples=30, max_samples=60, seconds=1.0)
        if quick
        else Budget(warmup=50, min_samples=1000, max_samples=4000, seconds=10.0)
    )
    with tempfile.TemporaryDirectory(prefix="askgate-bench-acp-") as tmp:
        agent = os.path.join(tmp, "echo_agent.py")
        with open(agent, "w", encoding="utf-8") as out:
            out.write(ECHO_AGENT)
        env = {
            **os.environ,
            "HOME": tmp,
            "XDG_STATE_HOME": tmp,
            "ASKGATE_AUDIT_LOG": "off",
            "ASKGATE_MANAGED_POLICY": os.path.join(tmp, "none.toml"),
        }
        direct = _Peer([sys.executable, agent], env)
        proxied = _Peer([sys.executable, "-m", "askgate", "acp", "--", sys.executable, agent], env)
        try:
            stats = sample_interleaved(
                {
                    "proxy": (proxied.round_trip(), budget),
                    "direct": (direct.round_trip(), budget),
                },
                rounds=5,
            )
        finally:
            direct.close()
            proxied.close()
    row = Row(
        measured=measured,
        ours=Figure(name="through askgate acp", stats=stats["proxy"]),
        peers=(Figure(name="direct to the agent", stats=stats["direct"]),),
    )
    added = (stats["proxy"].median_ns - stats["direct"].median_ns) / 1000
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok",
        rows=(row,),
        notes=(f"the proxy adds {added:.0f} µs per round trip (median; two hops)",),
        elapsed_s=time.perf_counter() - started,
    )
