"""Two replicas on one PostgreSQL database: a decision on one wakes the long-poll and the event
stream on the other (LISTEN/NOTIFY), keys minted by one verify on the other."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from server_support import LiveServer, create, fresh_pg_database, key_of, pg_admin_url  # noqa: F401
from waits import wait_until


@pytest.fixture
def replicas(tmp_path: Path, pg_admin_url: str) -> Iterator[tuple[LiveServer, LiveServer]]:  # noqa: F811
    url, drop = fresh_pg_database(pg_admin_url)
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    try:
        with LiveServer(first_dir, url) as first:
            second_dir.mkdir()
            shutil.copy(first_dir / "secret", second_dir / "secret")  # replicas share the secret
            (second_dir / "secret").chmod(0o600)
            with LiveServer(second_dir, url) as second:
                for live in (first, second):
                    listener = live.ctx.listener
                    assert listener is not None
                    live.call(lambda listener=listener: asyncio.wait_for(listener.ready.wait(), 20))
                yield first, second
    finally:
        drop()


def test_a_decision_on_one_replica_releases_a_long_poll_on_the_other(
    replicas: tuple[LiveServer, LiveServer],
) -> None:
    first, second = replicas
    token = first.add_user("alice")
    approval = create(first.client(token))
    result: dict[str, Any] = {}

    def wait() -> None:
        started = time.monotonic()
        result["response"] = first.client(token).get(f"/v1/approvals/{approval['id']}?wait=60")
        result["waited"] = time.monotonic() - started

    waiter = threading.Thread(target=wait)
    waiter.start()
    wait_until(lambda: first.ctx.waker.waiting > 0, "the long-poll to park")
    # decided on the other replica, with the key the first one minted
    decided = httpx.post(
        f"{second.url}/v1/approvals/{approval['id']}/decide",
        params={"k": key_of(approval)},
        json={"decision": "allow"},
    )
    assert decided.status_code == 200
    waiter.join(60)
    assert result["response"].json()["status"] == "allow"
    assert result["waited"] < 50  # released by the NOTIFY, not by the end of its wait


def test_the_event_stream_on_one_replica_carries_decisions_made_on_the_other(
    replicas: tuple[LiveServer, LiveServer],
) -> None:
    first, second = replicas
    token = first.add_user("bob")
    approval = create(first.client(token))
    seen: list[str] = []
    opened = threading.Event()

    def listen() -> None:
        with (
            httpx.Client(timeout=30) as client,
            client.stream(
                "GET", f"{first.url}/v1/events", headers={"Authorization": f"Bearer {token}"}
            ) as response,
        ):
            assert response.status_code == 200
            opened.set()  # subscribed before the status line: the 200 is enough to go on
            event = ""
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event == "permissions:decision":
                    seen.append(line)
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert opened.wait(20)
    second.client(token).post(
        f"/v1/approvals/{approval['id']}/decide", json={"decision": "deny", "reason": "no"}
    )
    listener.join(30)
    assert seen and approval["id"] in seen[0] and '"user_denied"' in seen[0]


def test_a_notify_is_read_only_when_someone_here_waits_or_listens() -> None:
    """The replica that decided has already released its waiters; its own NOTIFY (and any
    NOTIFY for an approval nobody here waits on or streams) costs no read. A waiter or an
    event-stream subscriber here still gets the row, read once."""
    from askgate.server.context import ServerConfig, ServerContext

    class CountingStore:
        def __init__(self) -> None:
            self.reads = 0

        async def get(self, approval_id: str, *, tenant: str | None = None) -> None:
            self.reads += 1
            return None

    async def go() -> tuple[int, int, int, bool]:
        store = CountingStore()
        config = ServerConfig(data_dir="/nonexistent", database_url="x", secret_path="x")
        ctx = ServerContext(config=config, store=store, secret=b"s" * 32)  # type: ignore[arg-type]
        await ctx.on_remote_decision("user:u", "a1")
        nobody = store.reads
        with ctx.waker.waiter("a1") as woken:
            await ctx.on_remote_decision("user:u", "a1")
            waiter = store.reads
            was_woken = woken.is_set()
        async with ctx.waker.subscription(("user:u",)):
            await ctx.on_remote_decision("user:u", "a2")
        return nobody, waiter, store.reads, was_woken

    nobody, waiter, subscriber, was_woken = asyncio.run(go())
    assert (nobody, waiter, subscriber, was_woken) == (0, 1, 2, True)
