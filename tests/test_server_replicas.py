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
    deadline = time.monotonic() + 20
    while first.ctx.waker.waiting == 0:
        assert time.monotonic() < deadline, "the long-poll never parked"
        threading.Event().wait(0.01)
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
            event = ""
            for line in response.iter_lines():
                opened.set()
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
