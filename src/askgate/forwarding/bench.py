"""Forwarding round-trip timing for the benchmark suite.

One sample = a child writes a request, the parent sees it, an auto-approving prompter
answers, the parent writes the response, the child sees it and is released. Parent
and child run in this process on separate threads, on a private temporary root.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Literal

from askgate.forwarding.client import ForwardingPrompter
from askgate.forwarding.server import ForwardingServer
from askgate.prompt import PromptReply, PromptRequest, PromptState


class _ApproveAll:
    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        return PromptReply(state=PromptState.APPROVED)


def round_trip_samples(
    n: int, *, mode: Literal["watch", "poll"], poll_interval: float = 0.25
) -> list[int]:
    """`n` round trips in nanoseconds; both sides use `mode` (poll: pi's original loop)."""
    if n <= 0:
        return []
    samples: list[int] = []
    with tempfile.TemporaryDirectory(prefix="askgate-fwd-bench-") as root:
        server = ForwardingServer(
            "bench-parent", _ApproveAll(), root=root, mode=mode, poll_interval=poll_interval
        )
        child = ForwardingPrompter(
            "bench-parent",
            requester_session="bench-child",
            agent_name="bench",
            root=root,
            mode=mode,
            poll_interval=poll_interval,
            check_interval=poll_interval,
        )
        with server:
            for index in range(n):
                request = PromptRequest(
                    request_id=f"bench-{index}", surface="bash", value="true", message="true"
                )
                started = time.perf_counter_ns()
                reply = child.prompt(request, timeout=30)
                samples.append(time.perf_counter_ns() - started)
                if not reply.approved:
                    raise RuntimeError(f"benchmark round trip failed: {reply}")
    return samples


def summary(samples: list[int]) -> dict[str, float]:
    """Median and p99 in milliseconds."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]
    return {"median_ms": statistics.median(ordered) / 1e6, "p99_ms": p99 / 1e6, "n": len(ordered)}


if __name__ == "__main__":  # python -m askgate.forwarding.bench
    for bench_mode in ("watch", "poll"):
        count = 200 if bench_mode == "watch" else 20
        print(bench_mode, summary(round_trip_samples(count, mode=bench_mode)))
