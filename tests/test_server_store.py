"""The store on real SQLite and real PostgreSQL: migrations, once-only decisions, tenants,
hashed tokens, late approvals."""

from __future__ import annotations

import asyncio
import time

import pytest
import sqlalchemy as sa

from askgate.server import keys
from askgate.server.store import DEVICES_MAX, Store, StoreError, devices, tokens
from server_support import db_url, pg_admin_url  # noqa: F401


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def _opened(url: str) -> Store:
    return await Store.open(url)


def test_migrations_run_at_open_and_again_do_nothing(db_url: str) -> None:  # noqa: F811
    async def go() -> list[str]:
        store = await Store.open(db_url)
        await store.close()
        store = await Store.open(db_url)  # second start: already at head
        async with store.engine.connect() as conn:
            version = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).all()
            names = await conn.run_sync(lambda c: sa.inspect(c).get_table_names())
        await store.close()
        assert [v[0] for v in version] == ["0004"]
        return sorted(names)

    assert {"approvals", "users", "tokens", "enrollments", "approver_groups"} <= set(run(go()))


def test_one_thousand_concurrent_deciders_one_winner(db_url: str) -> None:  # noqa: F811
    async def go() -> tuple[int, str | None, str | None]:
        store = await Store.open(db_url)
        try:
            approval = await store.create(
                tenant="t", created_by="u", tool="Bash", input_value={"c": 1}, expires_in=60
            )
            results = await asyncio.gather(
                *[
                    store.decide(
                        approval.id,
                        "allow" if i % 2 else "deny",
                        decided_by=f"decider-{i}",
                    )
                    for i in range(1000)
                ]
            )
            row = await store.get(approval.id)
            assert row is not None
            return sum(results), row.decision, row.decided_by
        finally:
            await store.close()

    winners, decision, decided_by = run(go())
    assert winners == 1
    assert decided_by is not None
    # The recorded verdict is the winner's own choice (odd deciders allowed, even denied).
    number = int(decided_by.split("-")[1])
    assert decision == ("allow" if number % 2 else "deny")


def test_status_pending_timeout_expired_and_decided(db_url: str) -> None:  # noqa: F811
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            now = time.time()
            row = await store.create(
                tenant="t", created_by="u", tool="T", input_value={}, expires_in=30, now=now
            )
            assert row.status(now) == "pending"
            assert row.status(now + 31) == "expired"
            assert not await store.abandon(row.id, created_by="someone-else")
            assert await store.abandon(row.id, created_by="u")
            assert not await store.abandon(row.id, created_by="u")  # recorded once
            gave_up = await store.get(row.id)
            assert gave_up is not None and gave_up.status() == "timeout"
            # still decidable until expiry: a late human answer is recorded as a late answer
            assert await store.decide(row.id, "allow", decided_by="u")
            late = await store.get(row.id)
            assert late is not None and late.status() == "timeout" and late.late == "allow"
            # past expiry the guarded update refuses a decision
            old = await store.create(
                tenant="t", created_by="u", tool="T", input_value={}, expires_in=1, now=now - 10
            )
            assert not await store.decide(old.id, "allow", decided_by="u")
            assert await store.decide(old.id, "expired", decided_by="askgate")
        finally:
            await store.close()

    run(go())


def test_a_user_lists_only_their_own_approvals_and_their_groups(db_url: str) -> None:  # noqa: F811
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            await store.add_user("alice", user_id="u-alice")
            await store.add_user("bob", user_id="u-bob")
            alice = await store.user_for_token(await store.rotate_token("alice"))
            bob = await store.user_for_token(await store.rotate_token("bob"))
            assert alice is not None and bob is not None
            assert alice.tenant != bob.tenant  # each person is their own tenant
            mine = await store.create(
                tenant=alice.tenant, created_by=alice.id, tool="T", input_value={}, expires_in=30
            )
            assert [r.id for r in await store.list(user=bob)] == []
            assert not bob.may_read(mine) and not bob.may_decide_on(mine)
            assert not await store.abandon(mine.id, created_by=bob.id)
            assert not await store.consume(mine.id, created_by=bob.id)
            # sharing is explicit: a group with a named approver
            await store.create_group("team")
            await store.file_in("alice", "team")
            await store.add_approver("team", "bob")
            alice = await store.user_for_token(await store.rotate_token("alice"))
            bob = await store.user_for_token(await store.rotate_token("bob"))
            assert alice is not None and bob is not None and bob.approves == ("group:team",)
            shared = await store.create(
                tenant=alice.tenant, created_by=alice.id, tool="T", input_value={}, expires_in=30
            )
            assert [r.id for r in await store.list(user=bob)] == [shared.id]
            assert bob.may_decide_on(shared) and not bob.may_decide_on(mine)
            assert alice.may_read(shared) and not alice.may_decide_on(shared)  # approvers decide
            with pytest.raises(StoreError):
                await store.file_in("alice", "nope")
        finally:
            await store.close()

    run(go())


def test_tokens_are_stored_hashed_and_rotate(db_url: str) -> None:  # noqa: F811
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            token = await store.add_user("alice", user_id="gh-42")
            async with store.engine.connect() as conn:
                stored = [r[0] for r in (await conn.execute(sa.select(tokens.c.token_sha256)))]
            assert token not in stored and keys.token_hash(token) in stored
            user = await store.user_for_token(token)
            assert user is not None and user.id == "gh-42" and user.may_decide
            agent = await store.rotate_token("alice", scope="agent")
            agent_user = await store.user_for_token(agent)
            assert agent_user is not None and not agent_user.may_decide
            assert await store.user_for_token(token) is not None  # other scope untouched
            new = await store.rotate_token("alice")
            assert await store.user_for_token(token) is None
            assert await store.user_for_token(new) is not None
            with pytest.raises(StoreError):
                await store.add_user("alice")
            with pytest.raises(StoreError):
                await store.rotate_token("nobody")
        finally:
            await store.close()

    run(go())


BINDING = {"cwd": "/w/a", "session": "s1", "agent": "claude-code"}


def test_a_late_approval_is_handed_out_once_and_only_where_it_was_asked(
    db_url: str,  # noqa: F811
) -> None:
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            row = await store.create(
                tenant="t",
                created_by="u",
                tool="Bash",
                input_value={"command": "make"},
                expires_in=60,
                wait=0.0,  # the waiter's deadline has already passed
                **BINDING,
            )
            assert await store.decide(row.id, "allow", decided_by="u")
            stored = await store.get(row.id)
            assert stored is not None and stored.decision == "timeout" and stored.late == "allow"
            args = {"created_by": "u", "tool": "Bash", "digest": row.input_sha256, **BINDING}
            for other in (
                {"cwd": "/w/b"},
                {"cwd": None},
                {"session": "s2"},
                {"agent": "codex"},
                {"created_by": "v"},
                {"digest": "0" * 64},
                {"tool": "Write"},
            ):
                assert await store.consume_late_approval(**{**args, **other}) is None, other
            claimed = await asyncio.gather(
                *[store.consume_late_approval(**args) for _ in range(20)]
            )
            assert sum(c is not None for c in claimed) == 1
            assert await store.consume_late_approval(**args) is None
        finally:
            await store.close()

    run(go())


def test_an_approve_at_the_deadline_is_stored_as_timeout_not_allow(db_url: str) -> None:  # noqa: F811
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            now = time.time()
            row = await store.create(
                tenant="t",
                created_by="u",
                tool="T",
                input_value={},
                expires_in=60,
                wait=5,
                now=now,
            )
            assert await store.decide(row.id, "allow", decided_by="h", now=now + 5)  # exactly
            stored = await store.get(row.id)
            assert stored is not None
            assert stored.decision == "timeout" and stored.status() == "timeout"
            assert not await store.consume(row.id, created_by="u")
        finally:
            await store.close()

    run(go())


def test_an_allow_is_consumed_exactly_once_by_its_own_call(db_url: str) -> None:  # noqa: F811
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            row = await store.create(
                tenant="t", created_by="u", tool="T", input_value={}, expires_in=60, wait=60
            )
            assert not await store.consume(row.id, created_by="u")  # nothing decided yet
            assert not await store.abandon(row.id, created_by="u")  # still inside its wait
            assert await store.decide(row.id, "allow", decided_by="h")
            assert not await store.consume(row.id, created_by="v")
            taken = await asyncio.gather(
                *[store.consume(row.id, created_by="u") for _ in range(50)]
            )
            assert sum(taken) == 1
            # and it is no late approval for anyone afterwards
            late = await store.consume_late_approval(
                created_by="u",
                tool="T",
                digest=row.input_sha256,
                cwd=None,
                session=None,
                agent=None,
            )
            assert late is None
        finally:
            await store.close()

    run(go())


def test_a_late_denial_or_an_answered_wait_is_no_pass(db_url: str) -> None:  # noqa: F811
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            denied = await store.create(
                tenant="t",
                created_by="u",
                tool="Bash",
                input_value={"c": 1},
                expires_in=60,
                wait=0.0,
            )
            await store.decide(denied.id, "deny", decided_by="u")
            answered = await store.create(
                tenant="t", created_by="u", tool="Bash", input_value={"c": 2}, expires_in=60
            )
            await store.decide(answered.id, "allow", decided_by="u")  # in time: not late
            for row in (denied, answered):
                late = await store.consume_late_approval(
                    created_by="u",
                    tool="Bash",
                    digest=row.input_sha256,
                    cwd=None,
                    session=None,
                    agent=None,
                )
                assert late is None
        finally:
            await store.close()

    run(go())


def test_device_credentials_are_stored_hashed_per_person_and_revoked_at_once(
    db_url: str,  # noqa: F811
) -> None:
    async def body() -> None:
        store = await Store.open(db_url)
        try:
            await store.add_user("alice")
            await store.add_user("bob")
            alice, bob = await store.user("alice"), await store.user("bob")
            assert alice is not None and bob is not None
            added = await store.add_device(alice.id, "phone")
            assert added is not None
            the_id, secret = added
            async with store.engine.connect() as conn:
                stored = (await conn.execute(sa.select(devices))).all()
            assert [r.secret_sha256 for r in stored] == [keys.token_hash(secret)]
            assert secret not in str(stored)
            assert await store.device_owner(secret) == (alice.id, the_id)
            assert await store.revoke_device(bob.id, the_id) is False  # not bob's to revoke
            assert await store.device_owner(secret) == (alice.id, the_id)
            assert await store.revoke_device(alice.id, the_id) is True
            assert await store.device_owner(secret) is None
            assert await store.devices_of(alice.id) == []
            for n in range(DEVICES_MAX):
                assert await store.add_device(alice.id, f"d{n}") is not None
            assert await store.add_device(alice.id, "one too many") is None
        finally:
            await store.close()

    run(body())


def test_sqlite_runs_every_hot_statement_prepared(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The once-only, tenant and digest tests above exercise the prepared path on SQLite only
    if every hot statement takes it; one that silently fell back would be tested elsewhere."""
    from askgate.server import store as store_module
    from askgate.server.sqlite_inline import InlineSQLiteEngine

    async def go() -> int:
        store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'a.sqlite3'}")
        try:
            engine = store.engine
            assert isinstance(engine, InlineSQLiteEngine)
            hot = [*store_module._HOT, store_module._INSERT]
            assert all(engine._prepared.get(id(s), (None,))[0] is s for s in hot)
            # and an unregistered statement still goes through SQLAlchemy
            async with engine.connect() as conn:
                one = (await conn.execute(sa.text("SELECT 1"))).scalar_one()
            return int(one)
        finally:
            await store.close()

    assert run(go()) == 1


def test_sqlite_keeps_only_clean_connections_between_blocks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A connection is kept for the next block only with no transaction open; a block that
    fails rolls back and its connection goes back to the pool: nothing half-written leaks
    into the next write."""
    from askgate.server.sqlite_inline import InlineSQLiteEngine

    async def go() -> tuple[int, int, bool, bool]:
        store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'a.sqlite3'}")
        try:
            engine = store.engine
            assert isinstance(engine, InlineSQLiteEngine)
            async with engine.connect() as conn:  # through SQLAlchemy: its bookkeeping opens
                await conn.execute(sa.text("SELECT 1"))
            after_fallback = len(engine._idle)
            await store.get("appr-none")  # prepared: left clean, kept
            after_prepared = len(engine._idle)
            with pytest.raises(RuntimeError):
                async with store.write() as conn:
                    await conn.execute(sa.text("INSERT INTO approver_groups VALUES ('g', 1.0)"))
                    raise RuntimeError("fails mid-transaction")
            approval = await store.create(
                tenant="t", created_by="u", tool="Bash", input_value={"c": 1}, expires_in=60
            )
            async with engine.connect() as conn:
                groups = await conn.execute(sa.text("SELECT count(*) FROM approver_groups"))
                no_group = groups.scalar_one() == 0
            return (
                after_fallback,
                after_prepared,
                no_group,
                await store.get(approval.id) is not None,
            )
        finally:
            await store.close()

    assert run(go()) == (0, 1, True, True)
