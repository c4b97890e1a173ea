"""The stdio transport: one prompt on pi's JSON print mode (`pi --mode json`), seed 004's
other worker transport.

The prompt goes to the worker's stdin, which then ends (pi prepends piped stdin to the
first prompt, so a prompt that starts with `@` or `-` is never read as a file or an
option); the worker streams the same session events as RPC mode, strict JSONL, and exits
when the prompt is done. There is no channel back: in JSON mode pi's extensions have no
UI (`ctx.hasUI` is false, dialog methods are no-ops), so no dialog can be answered by
askgate, asked of a human, or auto-confirmed — what an extension does without a UI is
its own rule. Steering needs RPC.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from askgate.adapters.pi_rpc.client import DEFAULT_STOP_GRACE, PiRpcClient, WorkerError
from askgate.adapters.pi_rpc.frames import Frame
from askgate.adapters.pi_rpc.runner import (
    DEFAULT_SETTLE_TIMEOUT,
    FrameTally,
    RunSummary,
    StopRequest,
    until_stopped,
)


def stdio_argv(pi_command: str, model: str | None = None) -> list[str]:
    """`pi_command` split as a shell would, plus ``--mode json --no-session`` (and
    ``--model M``). Raises ValueError on an empty or unbalanced command."""
    argv = shlex.split(pi_command)
    if not argv:
        raise ValueError("--pi-command is empty")
    argv += ["--mode", "json", "--no-session"]
    if model:
        argv += ["--model", model]
    return argv


class StdioWorkerRun:
    """One worker in JSON print mode, one prompt."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        settle_timeout: float = DEFAULT_SETTLE_TIMEOUT,
        stop_grace: float = DEFAULT_STOP_GRACE,
        on_frame: Callable[[Frame], None] | None = None,
    ) -> None:
        self.client = PiRpcClient(argv, env=env, cwd=cwd)
        self.stop_grace = stop_grace
        self.settle_timeout = settle_timeout
        self.on_frame = on_frame
        self.tally = FrameTally()

    def counters(self) -> dict[str, Any]:
        return {
            "malformedFrames": self.client.malformed_frames,
            "framesReceived": self.client.frames_received,
        }

    async def run(self, message: str, stop: StopRequest | None = None) -> RunSummary:
        error: str | None = None
        stopped = False
        try:
            self.client.subscribe(self._on_frame)
            await self.client.start()
            stopped = await until_stopped(self._converse(message), stop)
        except WorkerError as exc:
            error = str(exc)
        finally:
            status = await self.client.stop(self.stop_grace)
        return self.tally.summary(
            error,
            stopped=stopped,
            stop=stop,
            status=status,
            dialogs="none",
            counters=self.counters(),
            stderr_tail=self.client.stderr.text()[-4000:],
            transport="stdio",
        )

    async def _converse(self, message: str) -> None:
        await self.client.write_input(message.encode("utf-8", "surrogateescape"))
        self.client.end_input()
        await self.client.wait_exit(self.settle_timeout)

    def _on_frame(self, frame: Frame) -> None:
        self.tally.count(frame)
        if self.on_frame is not None:
            self.on_frame(frame)
