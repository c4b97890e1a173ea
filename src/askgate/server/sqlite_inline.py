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

Prepared statements: the store registers its hot statements (`InlineSQLiteEngine.prepare`).
Each is compiled once by SQLAlchemy for this dialect and then run straight on the DBAPI
connection with its positional parameters (each through the bind processor SQLAlchemy would
apply, e.g. `float` for a Float), skipping SQLAlchemy's per-call execution context. Only
statements whose compiled form needs nothing else from SQLAlchemy at run time take that path:
no result type processing, no expanding or callable parameters; anything else, and any
parameter the compiled form does not name, goes through SQLAlchemy as before. Driver errors
are re-raised as SQLAlchemy's (a 503, as before).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError

INLINE_BUSY_MS = 20
IDLE_KEPT = 4  # connections kept between blocks (one is in use at a time but for busy waits)


class _Row(tuple):
    """A result row: a tuple with `_mapping` (column name -> value), as the store reads it."""

    __slots__ = ()
    _keys: tuple[str, ...] = ()

    @property
    def _mapping(self) -> dict[str, Any]:
        return dict(zip(self._keys, self, strict=True))


class _Result:
    """The part of a SQLAlchemy result the store reads: first(), all(), rowcount."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows, self.rowcount = rows, rowcount

    def first(self) -> Any:
        return self._rows[0] if self._rows else None

    def all(self) -> list[Any]:
        return self._rows


class Prepared:
    """One statement compiled once: its SQL, its parameters in order, fixed values."""

    __slots__ = ("fixed", "names", "processors", "row_class", "sql")

    def __init__(
        self,
        sql: str,
        names: tuple[str, ...],
        fixed: dict[str, Any],
        processors: tuple[Callable[[Any], Any] | None, ...],
    ) -> None:
        self.sql, self.names, self.fixed, self.processors = sql, names, fixed, processors
        self.row_class: type[_Row] | None = None

    @classmethod
    def compile(
        cls, statement: Any, dialect: Any, column_keys: list[str] | None
    ) -> Prepared | None:
        """None when the compiled form needs SQLAlchemy at run time (see the module doc)."""
        try:
            compiled = statement.compile(dialect=dialect, column_keys=column_keys)
            binds = compiled.binds
            names = tuple(compiled.positiontup or ())
            for bind in binds.values():
                if bind.expanding or bind.callable is not None:
                    return None
            for column in compiled._result_columns:
                if column[3]._cached_result_processor(dialect, None) is not None:
                    return None
            if compiled.literal_execute_params or compiled.post_compile_params:
                return None
        except Exception:  # an unexpected compiled form: leave it to SQLAlchemy
            return None
        # a value fixed in the statement (a literal, a LIMIT); required ones come per call
        fixed = {name: binds[name].value for name in names if not binds[name].required}
        processors = tuple(binds[name].type._cached_bind_processor(dialect) for name in names)
        return cls(compiled.string, names, fixed, processors)

    def arguments(self, parameters: dict[str, Any]) -> tuple[Any, ...] | None:
        """Positional arguments, or None when `parameters` holds a name we do not bind (the
        statement SQLAlchemy would build for it differs: let SQLAlchemy build it)."""
        for key in parameters:
            if key not in self.names:
                return None
        fixed = self.fixed
        try:
            values = [
                parameters[name] if name in parameters else fixed[name] for name in self.names
            ]
        except KeyError:
            return None
        for at, process in enumerate(self.processors):
            if process is not None and values[at] is not None:
                values[at] = process(values[at])
        return tuple(values)


class InlineConnection:
    """The part of `AsyncConnection` the store uses, run inline on a sync connection."""

    def __init__(self, conn: sa.Connection, prepared: dict[int, tuple[Any, Prepared]]) -> None:
        self.sync_connection = conn
        self._prepared = prepared
        self._raw: Any = None

    def raw(self) -> Any:
        """The sqlite3 connection under this one."""
        if self._raw is None:
            self._raw = self.sync_connection.connection.dbapi_connection
        return self._raw

    def run_raw(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self.raw().execute(sql, args)
        except sqlite3.Error as exc:
            dialect = self.sync_connection.dialect
            raise DBAPIError.instance(sql, args, exc, dialect.loaded_dbapi.Error) from exc

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        entry = self._prepared.get(id(statement))
        if entry is not None and entry[0] is statement:
            prepared = entry[1]
            args = prepared.arguments(parameters or {})
            if args is not None:
                return self._run_prepared(prepared, args)
        return self.sync_connection.execute(statement, parameters)

    def _run_prepared(self, prepared: Prepared, args: tuple[Any, ...]) -> _Result:
        cursor = self.run_raw(prepared.sql, args)
        try:
            rows = cursor.fetchall()  # every row: an UPDATE ... RETURNING completes here
            if cursor.description is not None and rows:
                row_class = prepared.row_class
                if row_class is None:
                    keys = tuple(d[0] for d in cursor.description)
                    row_class = type("Row", (_Row,), {"__slots__": (), "_keys": keys})
                    prepared.row_class = row_class
                rows = [row_class(row) for row in rows]
            return _Result(rows, cursor.rowcount)
        finally:
            cursor.close()

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
        self._prepared: dict[int, tuple[Any, Prepared]] = {}
        self._idle: list[InlineConnection] = []

        @event.listens_for(self.sync_engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            on_connect(dbapi_connection)

    def prepare(self, statement: Any, column_keys: list[str] | None = None) -> bool:
        """Run `statement` (a module-level constant) through the prepared path from now on;
        False when its compiled form needs SQLAlchemy at run time (it keeps that path)."""
        prepared = Prepared.compile(statement, self.dialect, column_keys)
        if prepared is None:
            return False
        self._prepared[id(statement)] = (statement, prepared)
        return True

    @contextlib.contextmanager
    def _held(self) -> Iterator[InlineConnection]:
        """A connection for one block. One left clean by the prepared path (no transaction
        open, at the driver or in SQLAlchemy's bookkeeping) is kept for the next block
        instead of going back through the pool (its checkout and reset were a tenth of an
        approval's CPU); anything else, and every connection after an error, is closed back
        to the pool, which resets it."""
        inline = self._idle.pop() if self._idle else None
        if inline is None:
            inline = InlineConnection(self.sync_engine.connect(), self._prepared)
        try:
            yield inline
        except BaseException:
            inline.sync_connection.close()
            raise
        conn = inline.sync_connection
        clean = not (conn.invalidated or conn.in_transaction() or inline.raw().in_transaction)
        if clean and len(self._idle) < IDLE_KEPT:
            self._idle.append(inline)
        else:
            conn.close()

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[InlineConnection]:
        with self._held() as inline:
            yield inline

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[InlineConnection]:
        with self._held() as inline:
            await self._begin_immediate(inline)
            try:
                yield inline
            except BaseException:
                inline.run_raw("ROLLBACK")
                raise
            inline.run_raw("COMMIT")

    async def _begin_immediate(self, conn: InlineConnection) -> None:
        deadline = time.monotonic() + self.busy_ms / 1000
        delay = 0.002
        while True:
            try:
                conn.run_raw("BEGIN IMMEDIATE")
                return
            except OperationalError as exc:
                if "locked" not in str(exc.orig) or time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(delay)  # another process writes: let the loop run meanwhile
            delay = min(delay * 2, 0.05)

    async def dispose(self) -> None:
        while self._idle:
            self._idle.pop().sync_connection.close()
        self.sync_engine.dispose()
