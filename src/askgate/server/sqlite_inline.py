"""SQLite for the approval server without a thread hop per call.

aiosqlite runs every DBAPI call (cursor, execute, fetch, close, commit, rollback) on a worker
thread and wakes the event loop with the answer: five to seven GIL hand-offs per statement. On
the create -> decide -> release -> consume path that hopping was a quarter of the server's CPU
(profiled with py-spy, see docs/server.md). A statement on a local SQLite file in WAL mode runs
in tens of microseconds, less than one hop, so this engine runs it inline on the event loop, on
a plain `sqlite3` connection, behind the same `async with engine.connect()/begin()` and
`await conn.execute(...)` surface the store uses for PostgreSQL.

Never blocking the loop for long: a statement's busy handler waits at most INLINE_BUSY_MS. A
write transaction starts with ``BEGIN IMMEDIATE`` (the write lock is taken at once, so a
statement inside it never meets a busy database), and while another *process* holds the lock
that BEGIN is retried with asyncio sleeps up to the configured busy timeout, then fails
(OperationalError -> 503, never a half-written row). Writers of this process are already
queued by the store's asyncio lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

INLINE_BUSY_MS = 20


class InlineConnection:
    """The part of `AsyncConnection` the store uses, run inline on a sync connection."""

    def __init__(self, conn: sa.Connection) -> None:
        self.sync_connection = conn

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        return self.sync_connection.execute(statement, parameters)

    async def run_sync(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(self.sync_connection, *args)


class InlineSQLiteEngine:
    """`create_async_engine` look-alike for a SQLite file (see the module docstring)."""

    def __init__(self, url: str, *, busy_ms: int, on_connect: Callable[[Any], None]) -> None:
        sync_url = make_url(url).set(drivername="sqlite")
        # Autocommit at the driver: the store's transactions are its own BEGINs below.
        self.sync_engine = sa.create_engine(
            sync_url, pool_size=4, max_overflow=28, isolation_level="AUTOCOMMIT"
        )
        self.busy_ms = busy_ms
        self.dialect = self.sync_engine.dialect

        @event.listens_for(self.sync_engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            on_connect(dbapi_connection)

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[InlineConnection]:
        with self.sync_engine.connect() as conn:
            yield InlineConnection(conn)

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[InlineConnection]:
        with self.sync_engine.connect() as conn:
            await self._begin_immediate(conn)
            try:
                yield InlineConnection(conn)
            except BaseException:
                conn.exec_driver_sql("ROLLBACK")
                raise
            conn.exec_driver_sql("COMMIT")

    async def _begin_immediate(self, conn: sa.Connection) -> None:
        deadline = time.monotonic() + self.busy_ms / 1000
        delay = 0.002
        while True:
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return
            except OperationalError as exc:
                if "locked" not in str(exc.orig) or time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(delay)  # another process writes: let the loop run meanwhile
            delay = min(delay * 2, 0.05)

    async def dispose(self) -> None:
        self.sync_engine.dispose()
