"""Waking whoever waits for a decision: long-polls and Server-Sent Event streams.

In one process a decision sets an `asyncio.Event` per waiting request; across replicas on
PostgreSQL the deciding transaction issues ``pg_notify('askgate_decisions', …)`` (delivered only
if it commits) and every replica LISTENs on one dedicated asyncpg connection. Nobody polls the
table: a waiter sleeps until it is woken or its own deadline passes, then reads the row.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any

log = logging.getLogger("askgate.server.wake")

CHANNEL = "askgate_decisions"
SUBSCRIBER_QUEUE = 256


# A payload, or END: the server is shutting down and the stream ends.
END: dict[str, Any] = {"event": None}
SubscriberQueue = asyncio.Queue[dict[str, Any]]


def _put_end(queue: SubscriberQueue) -> None:
    while True:  # a full queue (a stalled reader) drops its oldest event for the end mark
        try:
            queue.put_nowait(END)
            return
        except asyncio.QueueFull:
            queue.get_nowait()


class Wakeup(asyncio.Event):
    """Set when the approval was decided; carries the decided row when the waker has it, so
    a thousand released long-polls do not re-read the same row a thousand times."""

    def __init__(self) -> None:
        super().__init__()
        self.row: Any = None


class Waker:
    """Per-approval events for long-polls, per-tenant queues for SSE subscribers."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[Wakeup]] = {}
        self._subscribers: dict[str, set[SubscriberQueue]] = {}
        self._ending = False  # the server is shutting down: streams end, new ones at once

    @property
    def waiting(self) -> int:
        return sum(len(events) for events in self._waiters.values())

    @contextlib.contextmanager
    def waiter(self, approval_id: str) -> Iterator[Wakeup]:
        """Register before re-reading the row, so a decision in between is not missed."""
        event = Wakeup()
        self._waiters.setdefault(approval_id, set()).add(event)
        try:
            yield event
        finally:
            events = self._waiters.get(approval_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[approval_id]

    def has_waiters(self, approval_id: str) -> bool:
        return bool(self._waiters.get(approval_id))

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscribers)

    def wake(self, approval_id: str, row: Any = None) -> None:
        for event in self._waiters.get(approval_id, ()):
            event.row = row
            event.set()

    def wake_all(self) -> None:
        """After a lost LISTEN connection: every waiter re-reads its row."""
        for events in self._waiters.values():
            for event in events:
                event.set()

    @property
    def subscribers(self) -> int:
        """Live event-stream subscriptions (each counted once, whatever its tenants)."""
        return len({id(q) for queues in self._subscribers.values() for q in queues})

    def subscribe(self, tenants: tuple[str, ...]) -> Subscription:
        """A queue hearing every tenant given, registered now: an event stream subscribes
        before its response starts, so a client acting on the status line misses nothing.
        The caller must close it on every path (`Subscription.close`, idempotent)."""
        return Subscription(self, tenants)

    @contextlib.asynccontextmanager
    async def subscription(self, tenants: tuple[str, ...]) -> AsyncIterator[Subscription]:
        subscription = self.subscribe(tenants)
        try:
            yield subscription
        finally:
            subscription.close()

    def end_streams(self) -> None:
        """At server shutdown: every open event stream ends (uvicorn waits for open
        responses before it stops; a stream would otherwise hold it until its client left)."""
        self._ending = True
        for queues in list(self._subscribers.values()):
            for queue in list(queues):
                _put_end(queue)

    def _unsubscribe(self, tenants: tuple[str, ...], queue: SubscriberQueue) -> None:
        for tenant in tenants:
            queues = self._subscribers.get(tenant)
            if queues is not None:
                queues.discard(queue)
                if not queues:
                    del self._subscribers[tenant]

    def broadcast(self, tenant: str | set[str], payload: dict[str, Any]) -> None:
        """To every subscriber of the tenant(s), once each."""
        tenants = {tenant} if isinstance(tenant, str) else tenant
        queues = {q for t in tenants for q in self._subscribers.get(t, ())}
        for queue in queues:
            with contextlib.suppress(asyncio.QueueFull):  # a stalled reader loses events
                queue.put_nowait(payload)


class Subscription:
    """One event stream's registration with the waker: a bounded queue (a stalled reader
    loses events rather than growing memory) hearing each payload once per tenant it was
    sent to. `close` releases it; if a holder is dropped without closing (a response object
    discarded on a path nobody foresaw), the garbage collector's finalizer releases it."""

    def __init__(self, waker: Waker, tenants: tuple[str, ...]) -> None:
        self.queue: SubscriberQueue = asyncio.Queue(SUBSCRIBER_QUEUE)
        for tenant in tenants:
            waker._subscribers.setdefault(tenant, set()).add(self.queue)
        if waker._ending:
            _put_end(self.queue)
        # The finalizer holds the waker and the queue, never this object.
        self._release = weakref.finalize(self, waker._unsubscribe, tenants, self.queue)

    def close(self) -> None:
        self._release()  # runs the release once; later calls do nothing

    async def next(self, timeout: float) -> dict[str, Any] | None:
        """The next payload, END when the server shuts down, None after `timeout` seconds
        of silence (time for a keep-alive)."""
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None


def notify_payload(tenant: str, approval_id: str) -> str:
    return json.dumps([tenant, approval_id], separators=(",", ":"))


class PostgresListener:
    """One LISTEN connection per replica; reconnects with backoff when it drops."""

    def __init__(
        self,
        dsn: str,
        waker: Waker,
        on_decision: Callable[[str, str], Coroutine[Any, Any, None]],
    ) -> None:
        self._dsn = dsn
        self._waker = waker
        self._on_decision = on_decision
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.ready = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="askgate-pg-listener")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def _received(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            tenant, approval_id = json.loads(payload)
        except (ValueError, TypeError):
            return
        # on_decision reads the row once for this replica, then wakes its waiters with it.
        task = asyncio.create_task(self._on_decision(str(tenant), str(approval_id)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self) -> None:
        import asyncpg

        delay = 0.2
        while True:
            lost = asyncio.Event()
            try:
                conn = await asyncpg.connect(self._dsn)
            except (OSError, asyncpg.PostgresError) as exc:
                log.warning("askgate: cannot LISTEN on PostgreSQL (%s); retrying", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            try:
                conn.add_termination_listener(lambda _c, lost=lost: lost.set())
                await conn.add_listener(CHANNEL, self._received)
                delay = 0.2
                self.ready.set()
                # Anything decided while we were not listening: let waiters re-read.
                self._waker.wake_all()
                await lost.wait()
                log.warning("askgate: the LISTEN connection dropped; reconnecting")
            finally:
                self.ready.clear()
                with contextlib.suppress(Exception):
                    await conn.close()
