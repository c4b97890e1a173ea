"""The approval server's database: SQLAlchemy Core 2 (async) on SQLite or PostgreSQL.

Tables `approvals`, `users`, `tokens` (SHA-256 of the bearer token, never the token) and
`enrollments`, created and upgraded by the Alembic migrations in `askgate.server.migrations`,
run automatically when a store opens (under an advisory lock on PostgreSQL, so replicas that
start together migrate once).

A decision is written once: ``UPDATE approvals SET … WHERE id = ? AND decided_at IS NULL``,
accepted only when exactly one row changed; the verdict a caller sees is always read back from
the row. Every query that a caller can steer is scoped by tenant.

SQLite runs in WAL mode with a busy timeout; `ASKGATE_DATABASE_URL` (``postgresql://…``) selects
PostgreSQL through asyncpg.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from askgate.server import keys
from askgate.server.sqlite_inline import INLINE_BUSY_MS, InlineConnection, InlineSQLiteEngine

# A connection of either engine: PostgreSQL's async one, or SQLite's inline one.
Connection = AsyncConnection | InlineConnection

metadata = sa.MetaData()

approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("tenant", sa.String(200), nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("session", sa.String(512)),
    sa.Column("agent", sa.String(200)),
    sa.Column("tool", sa.String(512), nullable=False),
    sa.Column("surface", sa.String(64)),
    sa.Column("cwd", sa.Text),
    sa.Column("rule", sa.Text),
    sa.Column("input_json", sa.Text, nullable=False),
    sa.Column("input_sha256", sa.String(64), nullable=False),
    sa.Column("requested_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.BigInteger, nullable=False),
    sa.Column("decided_at", sa.Float),
    sa.Column("decision", sa.String(16)),
    sa.Column("decided_by", sa.String(200)),
    sa.Column("reason", sa.Text),
    sa.Column("waiter_gave_up_at", sa.Float),
    sa.Column("consumed_at", sa.Float),
    # When the waiting call stops waiting (the server's clock): an Approve at or after it is
    # recorded as `timeout` with late = "allow", never as allow for a call already refused.
    sa.Column("wait_until", sa.Float),
    sa.Column("late", sa.String(8)),
)

approver_groups = sa.Table(
    "approver_groups",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("created_at", sa.Float, nullable=False),
)

group_approvers = sa.Table(
    "group_approvers",
    metadata,
    sa.Column(
        "group_name", sa.String(100), sa.ForeignKey("approver_groups.name"), primary_key=True
    ),
    sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), primary_key=True),
    sa.Column("added_at", sa.Float, nullable=False),
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.String(200), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("tenant", sa.String(200), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("token_sha256", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), nullable=False),
    # "user": everything the user may do; "agent": create, read, wait, abandon — never decide,
    # so the token a hook carries in an agent's environment cannot approve its own asks.
    sa.Column("scope", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("revoked_at", sa.Float),
)

enrollments = sa.Table(
    "enrollments",
    metadata,
    sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), primary_key=True),
    sa.Column("enrolled_at", sa.Float, nullable=False),
    sa.Column("ntfy_server", sa.Text, nullable=False),
    # Bumped by a rotation: the topic is derived from (user id, epoch), never stored.
    sa.Column("topic_epoch", sa.Integer, nullable=False, server_default="0"),
    # A per-user access token for a private ntfy server (publishing as that user).
    sa.Column("ntfy_token", sa.Text),
)

identities = sa.Table(
    "identities",
    metadata,
    # provider: the OpenID Connect issuer URL, or "github"; subject: `sub` / the numeric id.
    sa.Column("provider", sa.String(300), primary_key=True),
    sa.Column("subject", sa.String(255), primary_key=True),
    sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), nullable=False),
    sa.Column("display", sa.String(200)),  # the login or e-mail, shown only, never a key
    sa.Column("created_at", sa.Float, nullable=False),
)

devices = sa.Table(
    "devices",
    metadata,
    # A phone enrolled for one-tap decisions: its secret lives only in that browser's
    # HttpOnly, SameSite=Strict cookie; here only its SHA-256. Revocable, listed on /me.
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(200), sa.ForeignKey("users.id"), nullable=False),
    sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("label", sa.String(100), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("last_used_at", sa.Float),
    sa.Column("revoked_at", sa.Float),
)

DATABASE_URL_ENV = "ASKGATE_DATABASE_URL"
BUSY_TIMEOUT_ENV = "ASKGATE_SQLITE_BUSY_MS"
DEFAULT_BUSY_MS = 5000
TOKEN_CACHE_SECONDS = 2.0
TOKEN_CACHE_SIZE = 10_000


class StoreError(Exception):
    """A store operation that cannot be carried out as asked (e.g. unknown user)."""


class Approval(msgspec.Struct, frozen=True, kw_only=True):
    """One row of `approvals`."""

    id: str
    tenant: str
    created_by: str
    session: str | None
    agent: str | None
    tool: str
    surface: str | None
    cwd: str | None
    rule: str | None
    input_json: str
    input_sha256: str
    requested_at: float
    expires_at: int
    decided_at: float | None
    decision: str | None
    decided_by: str | None
    reason: str | None
    waiter_gave_up_at: float | None
    consumed_at: float | None
    wait_until: float | None = None
    late: str | None = None

    def status(self, now: float | None = None) -> str:
        """pending | allow | deny | timeout | expired (a decided row keeps its verdict)."""
        now = time.time() if now is None else now
        if self.decided_at is not None and self.decision in DECISIONS:
            if (
                self.decision == "allow"
                and self.consumed_at is None
                and self.wait_until is not None
                and now >= self.wait_until
            ):
                return "timeout"  # allowed in time, but the call never took it: it was refused
            return self.decision
        if now >= self.expires_at:
            return "expired"
        if self.waiter_gave_up_at is not None or (
            self.wait_until is not None and now >= self.wait_until
        ):
            return "timeout"
        return "pending"

    @property
    def decidable_until(self) -> int:
        return self.expires_at


DECISIONS = ("allow", "deny", "expired", "timeout")


def personal_tenant(user_id: str) -> str:
    """Each person is their own tenant unless placed in a named group."""
    return f"user:{user_id}"


def group_tenant(name: str) -> str:
    return f"group:{name}"


class User(msgspec.Struct, frozen=True, kw_only=True):
    id: str  # durable key (for a GitHub identity: "gh-<numeric id>", never the login)
    name: str
    tenant: str  # where this user's approvals are filed: personal, or a group's
    created_at: float
    scope: str = "user"  # of the token that authenticated this caller
    approves: tuple[str, ...] = ()  # group tenants whose approvals this user may decide

    @property
    def may_decide(self) -> bool:
        return self.scope == "user"

    @property
    def tenants(self) -> tuple[str, ...]:
        """Event streams this user hears: their own approvals, and the groups they approve."""
        own = personal_tenant(self.id)
        return (own, *(t for t in self.approves if t != own))

    def may_read(self, approval: Approval) -> bool:
        if approval.created_by == self.id:
            return True
        return self.may_decide and approval.tenant in self.approves

    def may_decide_on(self, approval: Approval) -> bool:
        """A person decides their own personal approvals; in a group only its approvers do."""
        if not self.may_decide:
            return False
        if approval.tenant in self.approves:
            return True
        return approval.created_by == self.id and approval.tenant == personal_tenant(self.id)


SCOPES = ("user", "agent")

# A token's public id: the first 16 hex digits of its stored SHA-256 (names it for listing and
# revoking; reveals nothing usable about the token).
TOKEN_ID_LENGTH = 16
TOKEN_ID_RE = re.compile(rf"^[0-9a-f]{{{TOKEN_ID_LENGTH}}}$")


def token_id(digest: str) -> str:
    return digest[:TOKEN_ID_LENGTH]


class TokenInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    scope: str
    created_at: float


TokenInfoList = list[TokenInfo]


class DeviceInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    label: str
    created_at: float
    last_used_at: float | None


DeviceInfoList = list[DeviceInfo]
DEVICES_MAX = 20
DEVICE_LABEL_MAX = 100


class Enrollment(msgspec.Struct, frozen=True, kw_only=True):
    ntfy_server: str
    topic_epoch: int = 0
    ntfy_token: str | None = None


GROUP_NAME_MAX = 100


def _approval(row: Any) -> Approval:
    return Approval(**dict(row._mapping))


# Inside Store, `list` names its method `Store.list`: its annotations use this alias.
UserList = list[User]
Names = list[str]


def _user(row: Any) -> User:
    return User(**dict(row._mapping))


def default_data_dir(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    if env.get("ASKGATE_DATA_DIR"):
        return env["ASKGATE_DATA_DIR"]
    base = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or "~", ".local", "share")
    return os.path.join(os.path.expanduser(base), "askgate")


def database_url(data_dir: str, env: Mapping[str, str] | None = None) -> str:
    """`ASKGATE_DATABASE_URL` (postgresql:// becomes postgresql+asyncpg://), else SQLite."""
    env = os.environ if env is None else env
    url = env.get(DATABASE_URL_ENV, "").strip()
    if not url:
        return f"sqlite+aiosqlite:///{os.path.join(data_dir, 'askgate.sqlite3')}"
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+asyncpg://" + url[len(plain) :]
    return url


def is_postgres(url: str) -> bool:
    return url.startswith("postgresql")


def _sqlite_pragmas(busy_ms: int) -> Callable[[Any], None]:
    def on_connect(dbapi_connection: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        # WAL + NORMAL: a commit survives the process being killed (the guarantee the
        # one-execution tests check with SIGKILL); only a power loss can drop the last
        # commits, and never leaves half a decision (the WAL is checksummed).
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return on_connect


def _migrate_sqlite(url: str, busy_ms: int) -> None:
    """Migrations on a short-lived plain connection (before the server takes requests)."""
    engine = sa.create_engine(sa.engine.make_url(url).set(drivername="sqlite"))
    pragmas = _sqlite_pragmas(busy_ms)
    event.listen(engine, "connect", lambda dbapi, _record: pragmas(dbapi))
    try:
        with engine.begin() as conn:
            _run_migrations(conn)
    finally:
        engine.dispose()


def _run_migrations(connection: sa.Connection) -> None:
    import logging

    from alembic import command
    from alembic.config import Config

    logging.getLogger("alembic").setLevel(logging.WARNING)  # no chatter on every start
    if connection.dialect.name == "postgresql":
        # Replicas starting together: one migrates, the others wait and find nothing to do.
        connection.execute(sa.text("SELECT pg_advisory_xact_lock(7264813)"))
    config = Config()
    config.set_main_option("script_location", "askgate.server:migrations")
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


# The hot path's statements, built once: SQLAlchemy memoizes a statement object's cache key,
# so executing a prebuilt statement with bound parameters skips building the expression and
# computing its key on every call (together most of an approval's Python cost). Decisions and
# consumes read the row back with RETURNING in the same statement (SQLite >= 3.35, PostgreSQL),
# so the verdict a caller sees is still the row's, without another round trip.
_c = approvals.c
_NOW = sa.bindparam("b_now", type_=sa.Float)
_GET = approvals.select().where(_c.id == sa.bindparam("b_id"))
_GET_IN_TENANT = _GET.where(_c.tenant == sa.bindparam("b_tenant"))
_INSERT = approvals.insert()
_PAST_WAIT = sa.or_(
    _c.waiter_gave_up_at.is_not(None),
    sa.and_(_c.wait_until.is_not(None), _c.wait_until <= _NOW),
)
_DECIDE = (
    approvals.update()
    .where(_c.id == sa.bindparam("b_id"), _c.decided_at.is_(None))
    .where(_c.expires_at > _NOW)
    .values(
        decided_at=_NOW,
        decided_by=sa.bindparam("b_by", type_=sa.String(200)),
        reason=sa.bindparam("b_why", type_=sa.Text),
        decision=sa.case(
            (_PAST_WAIT, sa.literal("timeout")),
            else_=sa.bindparam("b_verdict", type_=sa.String(16)),
        ),
        late=sa.case((_PAST_WAIT, sa.bindparam("b_verdict", type_=sa.String(16))), else_=sa.null()),
    )
    .returning(*approvals.c)
)
_EXPIRE = (
    approvals.update()
    .where(_c.id == sa.bindparam("b_id"), _c.decided_at.is_(None))
    .values(
        decided_at=_NOW,
        decided_by=sa.bindparam("b_by", type_=sa.String(200)),
        reason=sa.bindparam("b_why", type_=sa.Text),
        decision=sa.literal("expired"),
    )
    .returning(*approvals.c)
)
_CONSUME = (
    approvals.update()
    .where(
        _c.id == sa.bindparam("b_id"),
        _c.created_by == sa.bindparam("b_by", type_=sa.String(200)),
        _c.decision == "allow",
        _c.consumed_at.is_(None),
        _c.expires_at > _NOW,
        sa.or_(_c.wait_until.is_(None), _c.wait_until > _NOW),
    )
    .values(consumed_at=_NOW)
    .returning(*approvals.c)
)
_LATE_CANDIDATES = (
    sa.select(_c.id)
    .where(
        _c.created_by == sa.bindparam("b_by", type_=sa.String(200)),
        _c.tool == sa.bindparam("b_tool"),
        _c.input_sha256 == sa.bindparam("b_digest"),
        _c.cwd.is_not_distinct_from(sa.bindparam("b_cwd", type_=sa.Text)),
        _c.session.is_not_distinct_from(sa.bindparam("b_session", type_=sa.String)),
        _c.agent.is_not_distinct_from(sa.bindparam("b_agent", type_=sa.String)),
        # answered late, or allowed in time but never taken by its call (it gave up
        # first: the two deadlines differ by the request's transit time)
        sa.or_(
            sa.and_(_c.decision == "timeout", _c.late == "allow"),
            sa.and_(
                _c.decision == "allow",
                _c.wait_until.is_not(None),
                _c.wait_until <= _NOW,
            ),
        ),
        _c.consumed_at.is_(None),
        _c.expires_at > _NOW,
    )
    .order_by(_c.decided_at)
    .limit(5)
)
_LATE_CLAIM = (
    approvals.update()
    .where(
        _c.id == sa.bindparam("b_id"),
        _c.consumed_at.is_(None),
        sa.or_(_c.late == "allow", _c.decision == "allow"),
    )
    .values(consumed_at=_NOW)
    .returning(*approvals.c)
)

# On SQLite these run as prepared statements (sqlite_inline.Prepared), compiled once.
_HOT = (_GET, _GET_IN_TENANT, _DECIDE, _EXPIRE, _CONSUME, _LATE_CANDIDATES, _LATE_CLAIM)


class Store:
    """Async access to the approval tables. Open with `Store.open(url)`."""

    def __init__(self, engine: AsyncEngine | InlineSQLiteEngine, url: str) -> None:
        self.engine = engine
        self.url = url
        # SQLite has one writer at a time. Queueing our own writers here, instead of in
        # SQLite's busy handler, keeps a write lock from being held while its commit waits
        # for the event loop, and keeps the busy timeout for other processes.
        self._write_lock: asyncio.Lock | None = None if is_postgres(url) else asyncio.Lock()
        self._tokens: dict[str, tuple[float, User]] = {}
        self._enrolled: dict[str, tuple[float, Enrollment | None]] = {}
        # On PostgreSQL reads run in autocommit and writes through this engine view, at the
        # server's default isolation (see `open`); on SQLite it is the engine itself.
        self._writer: Any = engine

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Connection]:
        """A write transaction (serialised within this process on SQLite)."""
        if self._write_lock is None:
            async with self._writer.begin() as conn:
                yield conn
            return
        async with self._write_lock, self.engine.begin() as conn:
            yield conn

    @classmethod
    async def open(cls, url: str, *, busy_ms: int | None = None) -> Store:
        if url.startswith("sqlite"):
            path = url.split("///", 1)[1] if "///" in url else ""
            if path and path != ":memory:":
                os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
            busy = busy_ms if busy_ms is not None else _env_int(BUSY_TIMEOUT_ENV, DEFAULT_BUSY_MS)
            _migrate_sqlite(url, busy)
            inline = InlineSQLiteEngine(
                url, busy_ms=busy, on_connect=_sqlite_pragmas(min(busy, INLINE_BUSY_MS))
            )
            for statement in _HOT:
                inline.prepare(statement)
            inline.prepare(_INSERT, column_keys=[column.key for column in approvals.c])
            return cls(inline, url)
        # Autocommit by default: a read (every `engine.connect()` block here is one SELECT)
        # and the pool's pre-ping are one round trip each instead of BEGIN, the statement
        # and ROLLBACK (the pre-ping alone was three). Writes take a real transaction at the
        # isolation level the server would have given them (`write`).
        engine = create_async_engine(
            url, pool_size=10, max_overflow=40, pool_pre_ping=True, isolation_level="AUTOCOMMIT"
        )
        store = cls(engine, url)
        try:
            async with engine.connect() as conn:
                level = (await conn.execute(sa.text("SHOW transaction_isolation"))).scalar_one()
            store._writer = engine.execution_options(isolation_level=str(level).upper())
            async with store._writer.begin() as conn:
                await conn.run_sync(_run_migrations)
        except BaseException:
            await engine.dispose()
            raise
        return store

    @property
    def postgres(self) -> bool:
        return is_postgres(self.url)

    async def close(self) -> None:
        await self.engine.dispose()

    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))

    # --- approvals ---------------------------------------------------------------------

    async def create(
        self,
        *,
        tenant: str,
        created_by: str,
        tool: str,
        input_value: Any,
        expires_in: int,
        session: str | None = None,
        agent: str | None = None,
        surface: str | None = None,
        cwd: str | None = None,
        rule: str | None = None,
        wait: float | None = None,
        now: float | None = None,
        canonical: bytes | None = None,
    ) -> Approval:
        """Insert a pending approval (raises keys.CanonicalError for a non-canonical input).
        `wait`: seconds the creating call waits; after that its answer is `timeout`.
        `canonical`: the input's canonical JSON when the caller already has it (the stored
        input and its digest are both taken from it)."""
        now = time.time() if now is None else now
        if canonical is None:
            canonical = keys.canonical_json(input_value)
        values: dict[str, Any] = {
            "id": keys.new_approval_id(),
            "tenant": tenant,
            "created_by": created_by,
            "session": session,
            "agent": agent,
            "tool": tool,
            "surface": surface,
            "cwd": cwd,
            "rule": rule,
            "input_json": canonical.decode("utf-8"),
            "input_sha256": keys.digest_of_canonical(canonical),
            "requested_at": now,
            "expires_at": int(now) + int(expires_in),
            "decided_at": None,
            "decision": None,
            "decided_by": None,
            "reason": None,
            "waiter_gave_up_at": None,
            "consumed_at": None,
            "wait_until": None if wait is None else now + wait,
            "late": None,
        }
        async with self.write() as conn:
            await conn.execute(_INSERT, values)
        return Approval(**values)

    async def get(self, approval_id: str, *, tenant: str | None = None) -> Approval | None:
        """The row, or None when unknown (or, with `tenant`, owned by another tenant)."""
        query, params = (
            (_GET, {"b_id": approval_id})
            if tenant is None
            else (_GET_IN_TENANT, {"b_id": approval_id, "b_tenant": tenant})
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(query, params)).first()
        return None if row is None else _approval(row)

    async def decide(
        self,
        approval_id: str,
        decision: str,
        *,
        decided_by: str,
        reason: str | None = None,
        now: float | None = None,
        conn: Connection | None = None,
    ) -> bool:
        """The once-only write: True when this call recorded the decision."""
        row = await self.decide_row(
            approval_id, decision, decided_by=decided_by, reason=reason, now=now, conn=conn
        )
        return row is not None

    async def decide_row(
        self,
        approval_id: str,
        decision: str,
        *,
        decided_by: str,
        reason: str | None = None,
        now: float | None = None,
        conn: Connection | None = None,
    ) -> Approval | None:
        """The once-only write: the row as recorded when this call decided it, else None.

        An answer that lands at or after the waiter's deadline (or after it gave up) is
        recorded as `timeout`, the human's answer kept in `late`: the call it was asked for
        has already been refused, so it is never stored as allow. Decided in the one UPDATE,
        so no read-then-write race can put an allow past the deadline."""
        if decision not in ("allow", "deny", "expired"):
            raise ValueError(f"not a decision: {decision!r}")
        now = time.time() if now is None else now
        query = _EXPIRE if decision == "expired" else _DECIDE
        params = {"b_id": approval_id, "b_now": now, "b_by": decided_by, "b_why": reason}
        if decision != "expired":
            params["b_verdict"] = decision
        if conn is not None:
            row = (await conn.execute(query, params)).first()
        else:
            async with self.write() as own:
                row = (await own.execute(query, params)).first()
        return None if row is None else _approval(row)

    async def abandon(self, approval_id: str, *, created_by: str, now: float | None = None) -> bool:
        """The waiter gave up. Refused (False) before the deadline the waiter announced: a
        call may not cancel a wait that is still running (its hook would be released by the
        next Approve while that Approve also became a late approval)."""
        now = time.time() if now is None else now
        query = (
            approvals.update()
            .where(
                approvals.c.id == approval_id,
                approvals.c.created_by == created_by,
                approvals.c.decided_at.is_(None),
                approvals.c.waiter_gave_up_at.is_(None),
                sa.or_(approvals.c.wait_until.is_(None), approvals.c.wait_until <= now),
            )
            .values(waiter_gave_up_at=now)
        )
        async with self.write() as conn:
            return (await conn.execute(query)).rowcount == 1

    async def consume(self, approval_id: str, *, created_by: str, now: float | None = None) -> bool:
        """The call that executes takes its allow, once (see `consume_row`)."""
        return await self.consume_row(approval_id, created_by=created_by, now=now) is not None

    async def consume_row(
        self, approval_id: str, *, created_by: str, now: float | None = None
    ) -> Approval | None:
        """The call that executes takes its allow, once: a guarded UPDATE that succeeds for
        one caller only, only for an allow, only before the waiter's deadline and expiry. The
        consumed row, or None when nothing was taken."""
        now = time.time() if now is None else now
        params = {"b_id": approval_id, "b_by": created_by, "b_now": now}
        async with self.write() as conn:
            row = (await conn.execute(_CONSUME, params)).first()
        return None if row is None else _approval(row)

    async def consume_late_approval(
        self,
        *,
        created_by: str,
        tool: str,
        digest: str,
        cwd: str | None,
        session: str | None,
        agent: str | None,
        now: float | None = None,
    ) -> Approval | None:
        """A human approved this exact call after its waiter's deadline: hand that approval
        to the next identical call of the same person, in the same working directory,
        session and agent, once (a guarded UPDATE), or None."""
        now = time.time() if now is None else now
        params = {
            "b_by": created_by,
            "b_tool": tool,
            "b_digest": digest,
            "b_cwd": cwd,
            "b_session": session,
            "b_agent": agent,
            "b_now": now,
        }
        # A read first, outside the write lock: almost every call has no late approval, and
        # the claim below is guarded anyway (a candidate taken meanwhile is simply skipped).
        async with self.engine.connect() as conn:
            found = (await conn.execute(_LATE_CANDIDATES, params)).all()
        if not found:
            return None
        async with self.write() as conn:
            for (approval_id,) in found:
                row = (await conn.execute(_LATE_CLAIM, {"b_id": approval_id, "b_now": now})).first()
                if row is not None:
                    return _approval(row)
        return None

    async def list(
        self, *, user: User, limit: int = 100, pending_only: bool = False
    ) -> list[Approval]:
        """What `user` may read: their own approvals and those of the groups they approve."""
        mine = approvals.c.created_by == user.id
        where = (
            sa.or_(mine, approvals.c.tenant.in_(user.approves))
            if user.may_decide and (user.approves)
            else mine
        )
        query = approvals.select().where(where)
        if pending_only:
            query = query.where(approvals.c.decided_at.is_(None))
        query = query.order_by(approvals.c.requested_at.desc()).limit(limit)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [_approval(r) for r in rows]

    # --- users, tokens, enrollments ----------------------------------------------------

    async def add_user(
        self, name: str, *, group: str | None = None, user_id: str | None = None
    ) -> str:
        """Create a user with a first bearer token; returns the token (shown once). The user
        is their own tenant, or files approvals in `group` (which must exist)."""
        now = time.time()
        user_id = user_id or f"u-{os.urandom(8).hex()}"
        tenant = personal_tenant(user_id) if group is None else group_tenant(group)
        token = keys.new_token()
        async with self.write() as conn:
            existing = (await conn.execute(users.select().where(users.c.name == name))).first()
            if existing is not None:
                raise StoreError(f"user {name!r} exists (rotate its token: askgate user token)")
            if group is not None:
                await self._group_row(conn, group)
            await conn.execute(
                users.insert().values(id=user_id, name=name, tenant=tenant, created_at=now)
            )
            await conn.execute(
                tokens.insert().values(
                    token_sha256=keys.token_hash(token),
                    user_id=user_id,
                    scope="user",
                    created_at=now,
                )
            )
        return token

    async def rotate_token(self, name: str, *, scope: str = "user") -> str:
        """Revoke the user's tokens of `scope` and issue a new one (shown once)."""
        self.forget_tokens()
        if scope not in SCOPES:
            raise StoreError(f"unknown token scope {scope!r}")
        now = time.time()
        token = keys.new_token()
        async with self.write() as conn:
            user = (await conn.execute(users.select().where(users.c.name == name))).first()
            if user is None:
                raise StoreError(f"no user named {name!r}")
            await conn.execute(
                tokens.update()
                .where(
                    tokens.c.user_id == user.id,
                    tokens.c.scope == scope,
                    tokens.c.revoked_at.is_(None),
                )
                .values(revoked_at=now)
            )
            await conn.execute(
                tokens.insert().values(
                    token_sha256=keys.token_hash(token),
                    user_id=user.id,
                    scope=scope,
                    created_at=now,
                )
            )
        return token

    async def user_for_token(self, token: str) -> User | None:
        """The token's user with the groups they approve for (one round trip), remembered for
        TOKEN_CACHE_SECONDS: every API call authenticates, and on SQLite that lookup was a
        third of an approval's cost. A revocation or group change made through this process
        applies at once; one made on another replica within TOKEN_CACHE_SECONDS."""
        digest = keys.token_hash(token)
        now = time.monotonic()
        cached = self._tokens.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        user = await self._user_for_token(digest)
        if user is not None:
            if len(self._tokens) >= TOKEN_CACHE_SIZE:
                self._tokens.clear()
            self._tokens[digest] = (now + TOKEN_CACHE_SECONDS, user)
        return user

    def forget_tokens(self) -> None:
        self._tokens.clear()

    async def _user_for_token(self, digest: str) -> User | None:
        query = (
            sa.select(users, tokens.c.scope, group_approvers.c.group_name)
            .join(tokens, tokens.c.user_id == users.c.id)
            .outerjoin(group_approvers, group_approvers.c.user_id == users.c.id)
            .where(tokens.c.token_sha256 == digest, tokens.c.revoked_at.is_(None))
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        if not rows:
            return None
        fields = dict(rows[0]._mapping)
        fields.pop("group_name", None)
        approves = tuple(sorted({group_tenant(r.group_name) for r in rows if r.group_name}))
        return User(**fields, approves=approves)

    # --- approver groups ---------------------------------------------------------------

    async def _group_row(self, conn: Connection, name: str) -> Any:
        query = approver_groups.select().where(approver_groups.c.name == name)
        row = (await conn.execute(query)).first()
        if row is None:
            raise StoreError(f"no group named {name!r} (askgate group create {name})")
        return row

    async def _user_row(self, conn: Connection, name: str) -> Any:
        row = (await conn.execute(users.select().where(users.c.name == name))).first()
        if row is None:
            raise StoreError(f"no user named {name!r}")
        return row

    async def create_group(self, name: str) -> None:
        if (
            not name
            or len(name) > GROUP_NAME_MAX
            or not name.replace("-", "").replace("_", "").isalnum()
        ):
            raise StoreError("a group name is 1-100 letters, digits, '-' or '_'")
        async with self.write() as conn:
            exists = approver_groups.select().where(approver_groups.c.name == name)
            if (await conn.execute(exists)).first() is not None:
                raise StoreError(f"group {name!r} exists")
            await conn.execute(approver_groups.insert().values(name=name, created_at=time.time()))

    async def add_approver(self, group: str, user_name: str) -> None:
        """`user_name` may read and decide every approval filed in `group`."""
        self.forget_tokens()
        async with self.write() as conn:
            await self._group_row(conn, group)
            user = await self._user_row(conn, user_name)
            already = group_approvers.select().where(
                group_approvers.c.group_name == group, group_approvers.c.user_id == user.id
            )
            if (await conn.execute(already)).first() is None:
                await conn.execute(
                    group_approvers.insert().values(
                        group_name=group, user_id=user.id, added_at=time.time()
                    )
                )

    async def remove_approver(self, group: str, user_name: str) -> None:
        self.forget_tokens()
        async with self.write() as conn:
            user = await self._user_row(conn, user_name)
            await conn.execute(
                group_approvers.delete().where(
                    group_approvers.c.group_name == group, group_approvers.c.user_id == user.id
                )
            )

    async def file_in(self, user_name: str, group: str | None) -> None:
        """Where `user_name`'s new approvals are filed: `group`, or (None) their own tenant."""
        self.forget_tokens()
        async with self.write() as conn:
            user = await self._user_row(conn, user_name)
            tenant = personal_tenant(user.id)
            if group is not None:
                await self._group_row(conn, group)
                tenant = group_tenant(group)
            await conn.execute(users.update().where(users.c.id == user.id).values(tenant=tenant))

    async def groups(self) -> dict[str, Names]:
        """Each group with the names of its approvers."""
        query = (
            sa.select(approver_groups.c.name, users.c.name.label("user"))
            .select_from(approver_groups)
            .outerjoin(group_approvers, group_approvers.c.group_name == approver_groups.c.name)
            .outerjoin(users, users.c.id == group_approvers.c.user_id)
            .order_by(approver_groups.c.name, users.c.name)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        found: dict[str, Names] = {}
        for group_name, user_name in rows:
            found.setdefault(group_name, [])
            if user_name:
                found[group_name].append(user_name)
        return found

    async def user(self, name: str) -> User | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(users.select().where(users.c.name == name))).first()
        return None if row is None else _user(row)

    async def users_of(self, tenant: str) -> UserList:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(users.select().where(users.c.tenant == tenant))).all()
        return [_user(r) for r in rows]

    async def list_users(self) -> UserList:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(users.select().order_by(users.c.name))).all()
        return [_user(r) for r in rows]

    async def enroll(
        self, user_id: str, ntfy_server: str, *, ntfy_token: str | None = None
    ) -> Enrollment:
        """Record (or re-record) the ntfy server a user's phone listens on; keeps the topic
        epoch, so enrolling again does not move the topic."""
        now = time.time()
        self._enrolled.clear()
        async with self.write() as conn:
            old = (
                await conn.execute(enrollments.select().where(enrollments.c.user_id == user_id))
            ).first()
            epoch = int(old.topic_epoch) if old is not None else 0
            await conn.execute(enrollments.delete().where(enrollments.c.user_id == user_id))
            await conn.execute(
                enrollments.insert().values(
                    user_id=user_id,
                    enrolled_at=now,
                    ntfy_server=ntfy_server,
                    topic_epoch=epoch,
                    ntfy_token=ntfy_token,
                )
            )
        return Enrollment(ntfy_server=ntfy_server, topic_epoch=epoch, ntfy_token=ntfy_token)

    async def rotate_topic(self, user_id: str) -> Enrollment | None:
        """A new topic for the user (the old one hears nothing more); None if not enrolled."""
        self._enrolled.clear()
        async with self.write() as conn:
            changed = await conn.execute(
                enrollments.update()
                .where(enrollments.c.user_id == user_id)
                .values(topic_epoch=enrollments.c.topic_epoch + 1, enrolled_at=time.time())
            )
            if changed.rowcount != 1:
                return None
        return await self.enrollment(user_id)

    async def enrollment_cached(self, user_id: str) -> Enrollment | None:
        """`enrollment`, remembered for TOKEN_CACHE_SECONDS (read for every notification)."""
        now = time.monotonic()
        cached = self._enrolled.get(user_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        found = await self.enrollment(user_id)
        if len(self._enrolled) >= TOKEN_CACHE_SIZE:
            self._enrolled.clear()
        self._enrolled[user_id] = (now + TOKEN_CACHE_SECONDS, found)
        return found

    async def enrollment(self, user_id: str) -> Enrollment | None:
        """Where and how a user's phone is reached, or None."""
        query = sa.select(
            enrollments.c.ntfy_server, enrollments.c.topic_epoch, enrollments.c.ntfy_token
        ).where(enrollments.c.user_id == user_id)
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            return None
        return Enrollment(
            ntfy_server=str(row[0]), topic_epoch=int(row[1] or 0), ntfy_token=row[2] or None
        )

    # --- sign-in identities ------------------------------------------------------------

    async def user_for_identity(
        self, provider: str, subject: str, *, display: str, create: bool
    ) -> User | None:
        """The user signed in as (provider, subject): the durable key is the subject (an
        OpenID Connect `sub`, a GitHub numeric id), never a login or e-mail. With `create`, a
        first sign-in makes a new user, their own tenant."""
        query = (
            sa.select(users)
            .join(identities, identities.c.user_id == users.c.id)
            .where(identities.c.provider == provider, identities.c.subject == subject)
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is not None:
            return _user(row)
        if not create:
            return None
        user_id = f"u-{os.urandom(8).hex()}"
        name = f"{display[:150]}@{os.urandom(3).hex()}" if display else user_id
        now = time.time()
        async with self.write() as conn:
            await conn.execute(
                users.insert().values(
                    id=user_id, name=name, tenant=personal_tenant(user_id), created_at=now
                )
            )
            await conn.execute(
                identities.insert().values(
                    provider=provider,
                    subject=subject,
                    user_id=user_id,
                    display=display[:200],
                    created_at=now,
                )
            )
        return await self.user_by_id(user_id)

    async def user_by_id(self, user_id: str) -> User | None:
        async with self.engine.connect() as conn:
            row = (await conn.execute(users.select().where(users.c.id == user_id))).first()
        return None if row is None else _user(row)

    async def issue_token(self, user_id: str, *, scope: str = "user") -> str:
        """A further token for the user (a browser session), without revoking the others."""
        if scope not in SCOPES:
            raise StoreError(f"unknown token scope {scope!r}")
        token = keys.new_token()
        async with self.write() as conn:
            await conn.execute(
                tokens.insert().values(
                    token_sha256=keys.token_hash(token),
                    user_id=user_id,
                    scope=scope,
                    created_at=time.time(),
                )
            )
        return token

    # --- devices (the phone's one-tap credential) -----------------------------------------

    async def add_device(self, user_id: str, label: str) -> tuple[str, str] | None:
        """Enroll a device of `user_id`: (its id, its secret — shown to the browser once, as a
        cookie), or None when the person holds DEVICES_MAX live devices already."""
        secret = keys.new_device_secret()
        the_id = os.urandom(8).hex()
        label = (label.strip() or "phone")[:DEVICE_LABEL_MAX]
        async with self.write() as conn:
            live = sa.select(sa.func.count()).where(
                devices.c.user_id == user_id, devices.c.revoked_at.is_(None)
            )
            if int((await conn.execute(live)).scalar_one()) >= DEVICES_MAX:
                return None
            await conn.execute(
                devices.insert().values(
                    id=the_id,
                    user_id=user_id,
                    secret_sha256=keys.token_hash(secret),
                    label=label,
                    created_at=time.time(),
                )
            )
        return the_id, secret

    async def devices_of(self, user_id: str) -> DeviceInfoList:
        query = (
            sa.select(devices.c.id, devices.c.label, devices.c.created_at, devices.c.last_used_at)
            .where(devices.c.user_id == user_id, devices.c.revoked_at.is_(None))
            .order_by(devices.c.created_at)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [
            DeviceInfo(id=str(r[0]), label=str(r[1]), created_at=float(r[2]), last_used_at=r[3])
            for r in rows
        ]

    async def revoke_device(self, user_id: str, the_id: str) -> bool:
        """Revoke one of `user_id`'s own devices; False when no live device of theirs has
        that id. The device table is read on every use (no cache): at once, on every replica."""
        query = (
            devices.update()
            .where(
                devices.c.user_id == user_id, devices.c.id == the_id, devices.c.revoked_at.is_(None)
            )
            .values(revoked_at=time.time())
        )
        async with self.write() as conn:
            changed = (await conn.execute(query)).rowcount
        return changed == 1

    async def device_owner(self, secret: str) -> tuple[str, str] | None:
        """(user id, device id) of a live device secret, or None."""
        query = sa.select(devices.c.user_id, devices.c.id).where(
            devices.c.secret_sha256 == keys.token_hash(secret), devices.c.revoked_at.is_(None)
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return None if row is None else (str(row[0]), str(row[1]))

    async def device_used(self, device_id: str) -> None:
        async with self.write() as conn:
            await conn.execute(
                devices.update().where(devices.c.id == device_id).values(last_used_at=time.time())
            )

    async def tokens_of(self, user_id: str) -> TokenInfoList:
        """The user's own tokens (never the secret: an id, its scope and when)."""
        query = (
            sa.select(tokens.c.token_sha256, tokens.c.scope, tokens.c.created_at)
            .where(tokens.c.user_id == user_id, tokens.c.revoked_at.is_(None))
            .order_by(tokens.c.created_at)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [
            TokenInfo(id=token_id(str(r[0])), scope=str(r[1]), created_at=float(r[2])) for r in rows
        ]

    async def revoke_token_id(self, user_id: str, the_id: str, *, scope: str | None = None) -> bool:
        """Revoke one of `user_id`'s own tokens by its id (optionally only of `scope`); False
        when no live token of theirs has that id. Takes effect at once in this process and
        within TOKEN_CACHE_SECONDS on other replicas."""
        if not TOKEN_ID_RE.fullmatch(the_id):
            return False
        query = tokens.update().where(
            tokens.c.user_id == user_id,
            tokens.c.token_sha256.startswith(the_id, autoescape=True),
            tokens.c.revoked_at.is_(None),
        )
        if scope is not None:
            query = query.where(tokens.c.scope == scope)
        async with self.write() as conn:
            changed = (await conn.execute(query.values(revoked_at=time.time()))).rowcount
        self.forget_tokens()
        return bool(changed)

    async def revoke_token(self, token: str) -> None:
        self.forget_tokens()
        async with self.write() as conn:
            await conn.execute(
                tokens.update()
                .where(tokens.c.token_sha256 == keys.token_hash(token))
                .values(revoked_at=time.time())
            )


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default
