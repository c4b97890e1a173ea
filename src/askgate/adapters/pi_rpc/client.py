"""An asyncio client for one pi `--mode rpc` worker (the imperative shell of the codec).

It spawns the worker with askgate's own secrets removed from the environment, writes
commands, matches each `response` to its command by id (with a per-command timeout),
hands every other frame to subscribers, keeps the worker's stderr in a bounded buffer
for error reports, and stops the worker in seed 004's order: end its stdin, wait, then
SIGKILL (at most once).

"Settled" is `agent_settled` on workers that send it (pi 1.6+, recognised by the
`prompt` response's `disposition` or by the frame itself) and `agent_end` otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from askgate.adapters.pi_rpc.frames import (
    DEFAULT_MAX_LINE_BYTES,
    AgentEnd,
    AgentSettled,
    Command,
    ExtensionUIResponse,
    Frame,
    FrameDecoder,
    Response,
    encode,
)

READ_SIZE = 64 * 1024
DEFAULT_COMMAND_TIMEOUT = 30.0
DEFAULT_STDERR_LIMIT = 64 * 1024
DEFAULT_STOP_GRACE = 5.0

# askgate's secrets never reach a worker: the worker runs a model's commands.
_SECRET_NAME = re.compile(
    r"^ASKGATE_.*(TOKEN|SECRET|KEY|PASSWORD|PASSWD|CREDENTIAL|DATABASE_URL|COOKIE)", re.I
)

Subscriber = Callable[[Frame], None]

logger = logging.getLogger("askgate.pi_rpc")


class WorkerError(RuntimeError):
    """The worker could not be started, died, or did not answer in time."""


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: ours) without askgate's secrets (ASKGATE_TOKEN and the like)."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if not _SECRET_NAME.match(k)}


class BoundedBuffer:
    """Keeps the last `limit` bytes written (the end of a log says why it failed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._data = bytearray()
        self.dropped = 0

    def write(self, data: bytes) -> None:
        self._data += data
        excess = len(self._data) - self.limit
        if excess > 0:
            del self._data[:excess]
            self.dropped += excess

    def text(self) -> str:
        prefix = f"[… {self.dropped} bytes dropped …]\n" if self.dropped else ""
        return prefix + self._data.decode("utf-8", errors="replace")


class PiRpcClient:
    """One worker process. Use `async with PiRpcClient(argv) as client:` or
    `start()` / `stop()`."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        stderr_limit: int = DEFAULT_STDERR_LIMIT,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        if not argv:
            raise ValueError("empty worker command")
        self.argv = list(argv)
        self.env = scrubbed_env(env)
        self.cwd = cwd
        self.command_timeout = command_timeout
        self.stderr = BoundedBuffer(stderr_limit)
        self.decoder = FrameDecoder(max_line_bytes)
        self.responses_matched = 0
        self.responses_unmatched = 0
        self.frames_received = 0
        self.sends_settled: bool | None = None  # unknown until the worker shows it
        self._process: asyncio.subprocess.Process | None = None
        self._pending: dict[str, asyncio.Future[Response]] = {}
        self._subscribers: list[Subscriber] = []
        self._ids = itertools.count(1)
        self._tasks: list[asyncio.Task[None]] = []
        self._settled: asyncio.Future[Frame] | None = None
        self._exited = asyncio.Event()
        self._killed = False
        self._write_lock = asyncio.Lock()

    # -- lifecycle

    async def start(self) -> None:
        if self._process is not None:
            raise WorkerError("worker already started")
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # our terminal's Ctrl-C is ours to relay
            )
        except OSError as exc:
            raise WorkerError(f"cannot start {self.argv[0]!r}: {exc.strerror or exc}") from exc
        self._settled = asyncio.get_running_loop().create_future()
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name="pi-rpc-stdout"),
            asyncio.create_task(self._read_stderr(), name="pi-rpc-stderr"),
        ]

    async def __aenter__(self) -> PiRpcClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    @property
    def malformed_frames(self) -> int:
        return self.decoder.malformed

    async def stop(self, grace: float = DEFAULT_STOP_GRACE) -> int | None:
        """End the worker's stdin and wait up to `grace`; then SIGKILL (once) — seed 004's
        orderly stop. Safe to call again: a second call only waits for the same exit.
        The worker's exit status (negative: killed by that signal)."""
        process = self._process
        if process is None:
            return None
        if process.returncode is None:
            self._close_stdin()
            if not await self._wait_exit(grace):
                self._kill()
                await self._wait_exit(grace)
        for task in self._tasks:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(task, grace)
        self._fail_pending(WorkerError("worker stopped"))
        return process.returncode

    async def write_input(self, data: bytes) -> None:
        """Raw bytes to the worker's stdin (the stdio transport's prompt)."""
        process = self._process
        if process is None or process.stdin is None or process.stdin.is_closing():
            raise WorkerError("worker's stdin is not open")
        try:
            process.stdin.write(data)
            await process.stdin.drain()
        except (ConnectionError, BrokenPipeError) as exc:
            raise WorkerError(f"worker stopped reading: {exc}") from exc

    def end_input(self) -> None:
        """End the worker's stdin (no more commands or input follow)."""
        if self._process is not None:
            self._close_stdin()

    async def wait_exit(self, timeout: float | None = None) -> int:
        """The worker's exit status once it exits by itself. WorkerError on timeout."""
        if self._process is None:
            raise WorkerError("worker not started")
        try:
            return await asyncio.wait_for(self._process.wait(), timeout)
        except TimeoutError:
            raise WorkerError(f"the worker did not finish within {timeout:g} s") from None

    def _close_stdin(self) -> None:
        assert self._process is not None
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    async def _wait_exit(self, timeout: float) -> bool:
        assert self._process is not None
        try:
            await asyncio.wait_for(self._process.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _signal(self, signum: int) -> None:
        assert self._process is not None
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signum)

    def _kill(self) -> None:
        if self._killed:  # kill-once guard: a second SIGKILL could hit a reused pid
            return
        self._killed = True
        self._signal(signal.SIGKILL)

    # -- subscribers

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback(frame)` for every frame that is not a matched response.
        Returns an unsubscribe function."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    # -- writing

    async def send(self, frame: ExtensionUIResponse | Command | dict[str, Any]) -> None:
        """Write one frame (no response expected)."""
        process = self._process
        if process is None or process.stdin is None:
            raise WorkerError("worker not started")
        if process.stdin.is_closing():
            raise WorkerError("worker's stdin is closed")
        async with self._write_lock:
            try:
                process.stdin.write(encode(frame))
                await process.stdin.drain()
            except (ConnectionError, BrokenPipeError) as exc:
                raise WorkerError(f"worker stopped reading: {exc}") from exc

    async def request(
        self, command: Command | dict[str, Any], timeout: float | None = None
    ) -> Response:
        """Send a command with a fresh id and wait for its response. Raises WorkerError
        on timeout or when the worker exits first; a `success: false` response is
        returned as is."""
        command_id = f"askgate-{next(self._ids)}"
        if isinstance(command, dict):
            command = {**command, "id": command_id}
        else:
            command = msgspec.structs.replace(command, id=command_id)
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._pending[command_id] = future
        try:
            await self.send(command)
            limit = self.command_timeout if timeout is None else timeout
            try:
                return await asyncio.wait_for(asyncio.shield(future), limit)
            except TimeoutError:
                raise WorkerError(f"no response to {command_id} within {limit:g} s") from None
        finally:
            self._pending.pop(command_id, None)

    async def wait_settled(self, timeout: float | None = None) -> Frame:
        """The frame that settled the agent (`agent_settled` or `agent_end`)."""
        if self._settled is None:
            raise WorkerError("worker not started")
        try:
            return await asyncio.wait_for(asyncio.shield(self._settled), timeout)
        except TimeoutError:
            raise WorkerError(f"the agent did not settle within {timeout:g} s") from None

    def reset_settled(self) -> None:
        """Before the next prompt: forget the previous settle."""
        if self._settled is not None and self._settled.done():
            self._settled = asyncio.get_running_loop().create_future()

    # -- reading

    async def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        try:
            while chunk := await stdout.read(READ_SIZE):
                self._dispatch(self.decoder.feed(chunk))
            self._dispatch(self.decoder.close())
        finally:
            await self._process.wait()
            self._exited.set()
            error = WorkerError(f"worker exited with status {self._process.returncode}")
            self._fail_pending(error)
            if self._settled is not None and not self._settled.done():
                self._settled.set_exception(error)
                self._settled.exception()  # retrieved: no "never retrieved" warning

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while chunk := await self._process.stderr.read(READ_SIZE):
            self.stderr.write(chunk)

    def _fail_pending(self, error: Exception) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
                future.exception()

    def _dispatch(self, frames: list[Frame]) -> None:
        for frame in frames:
            self.frames_received += 1
            if isinstance(frame, Response):
                self._on_response(frame)
                continue
            if isinstance(frame, AgentSettled):
                self.sends_settled = True
                self._settle(frame)
            elif isinstance(frame, AgentEnd) and not self.sends_settled:
                self._settle(frame)
            self._publish(frame)

    def _on_response(self, response: Response) -> None:
        if isinstance(response.data, dict) and "disposition" in response.data:
            self.sends_settled = True  # pi 1.6+: agent_settled follows agent_end
        future = self._pending.get(response.id) if response.id is not None else None
        if future is None or future.done():
            self.responses_unmatched += 1
            self._publish(response)
            return
        self.responses_matched += 1
        future.set_result(response)

    def _settle(self, frame: Frame) -> None:
        if self._settled is not None and not self._settled.done():
            self._settled.set_result(frame)

    def _publish(self, frame: Frame) -> None:
        for callback in list(self._subscribers):
            try:
                callback(frame)
            except Exception:
                # One broken subscriber must not stop the reader (and strand dialogs).
                logger.exception("pi rpc subscriber failed on a %s frame", type(frame).__name__)
