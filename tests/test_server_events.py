"""`/v1/events` on a real server (uvicorn on 127.0.0.1, httpx): a stream hears every event
published once its client has the status line, and its subscription is released however the
stream ends (the client gone, gone before the first body byte, the server shutting down)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from server_support import LiveServer, create, db_url, pg_admin_url  # noqa: F401 (fixtures)
from waits import SAFETY_TIMEOUT, wait_until

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


@pytest.fixture
def live(tmp_path: Path, db_url: str) -> Iterator[LiveServer]:  # noqa: F811
    with LiveServer(tmp_path / "data", db_url) as server:
        yield server


def subscribers(live: LiveServer) -> int:
    async def count() -> int:
        return live.ctx.waker.subscribers

    return live.call(count)


def stream_client(live: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=live.url, timeout=httpx.Timeout(30, read=SAFETY_TIMEOUT))


def events_of(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event, data) for each event on the stream, comments and keep-alives skipped."""
    event = ""
    for line in lines:
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:") and event:
            yield event, json.loads(line.split(":", 1)[1])
        elif not line:
            event = ""


def hook_events_route(live: LiveServer, hook: Callable[[ASGIApp, Any, Any, Any], Any]) -> None:
    """Run `hook(app, scope, receive, send)` in place of the app for GET /v1/events (the
    app as built, its routes and handlers untouched; other paths pass through)."""
    inner: ASGIApp = live.app.asgi_handler

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/events":
            await hook(inner, scope, receive, send)
        else:
            await inner(scope, receive, send)

    live.app.asgi_handler = handler  # type: ignore[method-assign]


def test_an_approval_created_as_the_status_line_goes_out_reaches_the_stream(
    live: LiveServer,
) -> None:
    """The gap made deterministic: the approval is created (through the API) right after
    the server sent the stream's status line and before any byte of its body."""
    token = live.add_user("alice")
    created: list[str] = []

    async def create_after_the_status_line(app: ASGIApp, scope: Any, receive: Any, send: Any):
        async def send_then_create(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.start" and not created:
                async with httpx.AsyncClient(base_url=live.url, timeout=30) as client:
                    response = await client.post(
                        "/v1/approvals",
                        json={"tool": "Bash", "input": {"command": "make deploy"}},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                created.append(response.json()["id"])

        await app(scope, receive, send_then_create)

    hook_events_route(live, create_after_the_status_line)
    with (
        stream_client(live) as client,
        client.stream("GET", "/v1/events", headers={"Authorization": f"Bearer {token}"}) as r,
    ):
        assert r.status_code == 200
        lines = r.iter_lines()
        assert next(lines) == ": askgate events"
        # a second approval, made once the body has begun, bounds the wait: if the first one
        # was lost, this is the first the stream carries
        with live.client(token) as alice:
            later = create(alice, "make later")
        first = next(
            data["id"] for event, data in events_of(lines) if event == "approval:requested"
        )
        assert created and first == created[0], "the approval made at the status line was lost"
        assert first != later["id"]


def test_events_published_as_soon_as_the_client_has_the_headers_are_delivered(
    live: LiveServer,
) -> None:
    token = live.add_user("alice")
    alice = live.client(token)
    before = subscribers(live)
    with (
        stream_client(live) as client,
        client.stream("GET", "/v1/events", headers={"Authorization": f"Bearer {token}"}) as r,
    ):
        assert r.status_code == 200
        # subscribed by the time the status line arrived, not as the body starts
        assert subscribers(live) == before + 1
        approval = create(alice, "npm publish")  # before reading a byte of the body
        alice.post(f"/v1/approvals/{approval['id']}/decide", json={"decision": "deny"})
        heard: list[str] = []
        for event, data in events_of(r.iter_lines()):
            heard.append(event)
            if event == "approval:requested":
                assert data["id"] == approval["id"]
            if event == "permissions:decision":  # on PostgreSQL through the NOTIFY
                assert data["requestId"] == approval["id"] and data["result"] == "deny"
                break
        assert heard == ["approval:requested", "permissions:decision"]
    alice.close()


def close_under_the_read(response: httpx.Response) -> None:
    """Shut the stream's socket down (a FIN to the server), as a closed browser tab does."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    assert sock is not None
    sock.shutdown(socket.SHUT_RDWR)


def test_a_client_that_leaves_releases_its_subscription(live: LiveServer) -> None:
    token = live.add_user("alice")
    before = subscribers(live)
    with stream_client(live) as client:
        for _ in range(3):
            with client.stream(
                "GET", "/v1/events", headers={"Authorization": f"Bearer {token}"}
            ) as r:
                assert r.status_code == 200 and subscribers(live) == before + 1
                lines = r.iter_lines()
                assert next(lines) == ": askgate events"  # the body has started
                close_under_the_read(r)
            wait_until(lambda: subscribers(live) == before, "the subscription released")


def test_a_client_gone_before_the_first_body_byte_releases_its_subscription(
    live: LiveServer,
) -> None:
    """The server hears the disconnect before the stream's body starts, so the body's
    generator never runs (no `finally` of its own): the response releases it."""
    token = live.add_user("alice")
    before = subscribers(live)
    seen_subscribed: list[int] = []

    async def gone_at_once(app: ASGIApp, scope: Any, receive: Any, send: Any) -> None:
        async def disconnected() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        async def send_noting(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen_subscribed.append(live.ctx.waker.subscribers)
            await send(message)

        await app(scope, disconnected, send_noting)

    hook_events_route(live, gone_at_once)
    with stream_client(live) as client:
        for _ in range(3):
            with (
                contextlib.suppress(httpx.HTTPError),
                client.stream(
                    "GET", "/v1/events", headers={"Authorization": f"Bearer {token}"}
                ) as r,
            ):
                assert r.status_code == 200
                r.read()  # the server ends the response: nobody is listening
            wait_until(lambda: subscribers(live) == before, "the subscription released")
    assert seen_subscribed == [before + 1] * 3


def askgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "askgate", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_askgate_serve_ends_open_streams_when_it_is_told_to_stop(tmp_path: Path) -> None:
    """uvicorn waits for open responses before stopping: without ending the event streams,
    one open browser tab kept a SIGTERM'd server running until the tab closed."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
    }
    data = str(tmp_path / "data")
    added = askgate("user", "add", "alice", "--data-dir", data, env=env)
    assert added.returncode == 0, added.stderr
    token = added.stdout.splitlines()[-1]
    server = subprocess.Popen(
        [sys.executable, "-m", "askgate", "serve", "--port", "0", "--data-dir", data],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None
        announced = server.stdout.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+)/", announced)
        assert url, announced + (server.stderr.read() if server.poll() is not None else "")
        with (
            httpx.Client(base_url=url.group(1), timeout=httpx.Timeout(30, read=None)) as client,
            client.stream("GET", "/v1/events", headers={"Authorization": f"Bearer {token}"}) as r,
        ):
            assert r.status_code == 200
            lines = r.iter_lines()
            assert next(lines) == ": askgate events"
            server.send_signal(signal.SIGTERM)
            rest = list(lines)  # the server ends the stream: the read returns
            assert not [line for line in rest if line.startswith("event:")], rest
        # uvicorn re-raises the signal it caught once it has shut down gracefully
        assert server.wait(SAFETY_TIMEOUT) in (0, -signal.SIGTERM)
        assert "Traceback" not in (server.stderr.read() if server.stderr else "")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_the_subscription_is_released_if_building_the_response_fails(live: LiveServer) -> None:
    """An error between the subscription and the first byte (here: the response cannot be
    turned into its ASGI form) leaves no subscriber behind."""
    from askgate.server import api

    user_token = live.add_user("alice")
    before = subscribers(live)

    async def build_and_fail() -> tuple[int, int]:
        user = await live.ctx.store.user_for_token(user_token)
        assert user is not None
        subscription = live.ctx.waker.subscribe(user.tenants)
        response = api.EventStream(subscription)
        during = live.ctx.waker.subscribers
        with pytest.raises(TypeError):
            response.to_asgi_response(None, object(), not_an_option=True)  # type: ignore[arg-type]
        return during, live.ctx.waker.subscribers

    during, after = live.call(build_and_fail)
    assert (during, after) == (before + 1, before)
