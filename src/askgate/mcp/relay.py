"""The gateway's asyncio shell: the client on stdio, the server on stdio or Streamable HTTP.

Frames go through `GatewayCore`; its actions are carried out here. A call the policy
settles is decided in the event loop (a few lookups: no thread to start); an ask goes to a
daemon thread (a human may take minutes, and an ask nobody answers must not keep the
gateway alive at exit). A forwarded request that takes longer than `call_timeout` ends
with an error and a cancellation to the server.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from askgate.mcp.core import Action, Answered, Decide, GatewayCore, Log, ToClient, ToServer
from askgate.mcp.frames import Lines, Oversized
from askgate.mcp.gateway import CallDecider
from askgate.outcome import Outcome, Pending, ToolRequest

READ_CHUNK = 256 * 1024


class Upstream(Protocol):
    """Where frames for the server go (a child's stdin, or an HTTP endpoint)."""

    async def send(self, action: ToServer) -> None: ...

    async def close(self) -> None: ...


class Relay:
    """One proxied connection."""

    def __init__(
        self,
        core: GatewayCore,
        decider: CallDecider,
        to_client: Callable[[bytes], Awaitable[None]],
        *,
        call_timeout: float | None = None,
    ) -> None:
        self.core = core
        self.decider = decider
        self.to_client = to_client
        self.upstream: Upstream | None = None
        self.call_timeout = call_timeout
        self.loop = asyncio.get_running_loop()
        self.tasks: set[asyncio.Task[None]] = set()
        self.asks: dict[str, concurrent.futures.Future[dict[str, Any] | None]] = {}
        self._timers: dict[Any, asyncio.TimerHandle] = {}
        self._lock = asyncio.Lock()  # one writer to the client at a time
        self.publisher = Publisher(decider)

    async def perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, ToClient):
                if action.answers is not None and (timer := self._timers.pop(action.answers, None)):
                    timer.cancel()
                async with self._lock:
                    await self.to_client(action.data)
            elif isinstance(action, ToServer):
                if action.is_request and self.call_timeout is not None:
                    self._arm(action.request_id)
                assert self.upstream is not None
                await self.upstream.send(action)
            elif isinstance(action, Decide):
                await self.decide(action)
            elif isinstance(action, Answered):
                future = self.asks.pop(action.ask_id, None)
                if future is not None and not future.done():
                    future.set_result(action.result)
            elif isinstance(action, Log):
                print(action.text[:2000], file=sys.stderr, flush=True)

    def _arm(self, request_id: Any) -> None:
        assert self.call_timeout is not None
        why = f"the server did not answer within {self.call_timeout:g} s (askgate gateway)"

        def fire() -> None:
            self._timers.pop(request_id, None)
            self.spawn(self.perform(self.core.timed_out(request_id, why)))

        old = self._timers.pop(request_id, None)
        if old is not None:
            old.cancel()
        self._timers[request_id] = self.loop.call_later(self.call_timeout, fire)

    def spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def decide(self, action: Decide) -> None:
        request, result = self.decider.preflight(action.tool, action.arguments, action.shape)
        if isinstance(result, Outcome):
            await self._finish(action, request, result)
            return
        self.spawn(self._ask(action, request, result))

    async def _ask(self, action: Decide, request: ToolRequest, pending: Pending) -> None:
        future: asyncio.Future[Outcome] = self.loop.create_future()

        def work() -> None:
            try:
                outcome = self.decider.resolve(pending)
            except BaseException as exc:  # resolve never raises; if it does, deny
                outcome = None
                error: BaseException | None = exc
            else:
                error = None
            with contextlib.suppress(RuntimeError):  # the loop is gone: we are exiting
                self.loop.call_soon_threadsafe(_settle, future, outcome, error)

        threading.Thread(target=work, name="askgate-mcp-ask", daemon=True).start()
        try:
            outcome = await future
        except BaseException as exc:
            await self.perform(self.core.decided(action.key, False, f"askgate: {exc!r}"[:500]))
            raise
        await self._finish(action, request, outcome)

    async def _finish(self, action: Decide, request: ToolRequest, outcome: Outcome) -> None:
        if outcome.allowed:
            # Forward first, record while the server works: the review log line of an
            # allowed call is written by the publisher thread, in decision order.
            reason = outcome.reason
            await self.perform(self.core.decided(action.key, True, reason))
            self.publisher.put(outcome, request)
            return
        self.decider.publish(outcome, request)
        await self.perform(self.core.decided(action.key, False, f"askgate: {outcome.reason}"))

    def send_ask(self, message: str) -> concurrent.futures.Future[dict[str, Any] | None]:
        """From a prompter thread: send an elicitation, get a future of its answer."""
        answer: concurrent.futures.Future[dict[str, Any] | None] = concurrent.futures.Future()

        def start() -> None:
            ask_id, actions = self.core.ask(message)
            self.asks[ask_id] = answer
            self.spawn(self.perform(actions))

        self.loop.call_soon_threadsafe(start)
        return answer

    async def pump(self, read: Callable[[], Awaitable[bytes]], limit: int, side: str) -> None:
        """Feed one direction's bytes through the core until EOF."""
        lines = Lines(limit)
        handle = self.core.from_client if side == "client" else self.core.from_server
        while chunk := await read():
            for frame in lines.feed(chunk):
                await self.perform(handle(frame))
        for frame in lines.end():
            await self.perform(handle(frame))

    async def server_closed(self, why: str) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        await self.perform(self.core.server_closed(why))

    def shutdown(self) -> None:
        self.publisher.close()
        for timer in self._timers.values():
            timer.cancel()
        for task in list(self.tasks):
            task.cancel()
        for future in self.asks.values():
            future.cancel()


class Publisher:
    """Audits and broadcasts allowed calls on one thread, in order, off the call's path."""

    def __init__(self, decider: CallDecider) -> None:
        self.decider = decider
        self._queue: queue.SimpleQueue[tuple[Outcome, ToolRequest] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def put(self, outcome: Outcome, request: ToolRequest) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="askgate-mcp-audit",
                                            daemon=True)  # fmt: skip
            self._thread.start()
        self._queue.put((outcome, request))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            with contextlib.suppress(Exception):  # the gate logs its own failures
                self.decider.publish(*item)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, then stop."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
            self._thread = None


def _settle(
    future: asyncio.Future[Outcome], outcome: Outcome | None, error: BaseException | None
) -> None:
    if future.done():
        return
    if outcome is not None:
        future.set_result(outcome)
    else:
        future.set_exception(error or RuntimeError("no outcome"))


def is_oversized(frame: bytes | Oversized) -> bool:
    return isinstance(frame, Oversized)
