"""Helpers for the approval-server tests: real databases and a real server on a socket.

* `pg_admin_url` (session): ASKGATE_TEST_DATABASE_URL, or a throwaway cluster started with
  scripts/start-postgres (Debian's PostgreSQL) and stopped at the end. Without PostgreSQL the
  PostgreSQL cases skip, and fail when CI is set.
* `db_url`: parametrised over SQLite (a file in tmp_path) and PostgreSQL (a fresh database per
  test), so store and API tests run against both.
* `LiveServer`: the Litestar app under uvicorn in a thread, bound to 127.0.0.1:0.

Import the fixtures into a test module: ``from server_support import db_url, pg_admin_url``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from askgate.prompters.base import PromptReply, PromptRequest
from askgate.prompters.server import ServerPrompter
from askgate.server.app import create_app
from askgate.server.context import ServerConfig, ServerContext
from askgate.server.notify import Notifier
from waits import SAFETY_TIMEOUT

REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def _missing_postgres(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required in CI: {why}")
    pytest.skip(f"PostgreSQL unavailable: {why}")


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    url = os.environ.get("ASKGATE_TEST_DATABASE_URL")
    if url:
        yield url
        return
    proc = subprocess.run(
        [str(REPO / "scripts" / "start-postgres")], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        _missing_postgres(proc.stderr.strip()[-300:] or f"exit {proc.returncode}")
    data_dir = next(
        line.split(": ", 1)[1] for line in proc.stderr.splitlines() if line.startswith("pgdata: ")
    )
    try:
        yield proc.stdout.strip()
    finally:
        subprocess.run(
            [str(REPO / "scripts" / "start-postgres"), "--stop", data_dir],
            capture_output=True,
            timeout=60,
        )


async def _pg_admin(admin_url: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def fresh_pg_database(admin_url: str) -> tuple[str, Callable[[], None]]:
    """A new empty database on the cluster; returns its SQLAlchemy URL and a dropper."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    try:
        asyncio.run(_pg_admin(admin_url, f'CREATE DATABASE "{name}"'))
    except (OSError, Exception) as exc:  # asyncpg raises its own hierarchy
        _missing_postgres(f"{type(exc).__name__}: {exc}")
    base = admin_url.rsplit("/", 1)[0]
    url = base.replace("postgresql://", "postgresql+asyncpg://", 1) + f"/{name}"

    def drop() -> None:
        asyncio.run(_pg_admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    return url, drop


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'db' / 'askgate.sqlite3'}"
        return
    admin = request.getfixturevalue("pg_admin_url")
    url, drop = fresh_pg_database(admin)
    try:
        yield url
    finally:
        drop()


def free_socket(host: str = "127.0.0.1") -> socket.socket:
    # IPPROTO_TCP named, as the server's own socket does: asyncio then turns Nagle off on
    # accepted connections (else each keep-alive answer waits for a delayed ACK).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(2048)
    return sock


class LiveServer:
    """The approval server on a real socket, in a background thread with its own loop."""

    def __init__(
        self,
        data_dir: Path,
        database_url: str,
        *,
        notifier: Notifier | None = None,
        **config: Any,
    ) -> None:
        self.sock = free_socket()
        port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.config = ServerConfig(
            data_dir=str(data_dir),
            database_url=database_url,
            secret_path=str(data_dir / "secret"),
            public_url=self.url,
            **config,
        )
        self.app = create_app(self.config, notifier=notifier)
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._thread = threading.Thread(target=self._run, name="askgate-live-server", daemon=True)

    def _run(self) -> None:
        import uvicorn

        live = self

        class _Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                live.loop = asyncio.get_running_loop()
                live._ready.set()

        self._server = _Server(
            # A connection still open at the end of a test (a client's long-poll or
            # keep-alive) is cut after 1 s instead of being waited out (seconds per
            # teardown); the lifespan shutdown still closes the store.
            uvicorn.Config(
                self.app,
                log_level="error",
                access_log=False,
                lifespan="on",
                timeout_graceful_shutdown=1,
            )
        )
        try:
            asyncio.run(self._server.serve(sockets=[self.sock]))
        except BaseException as exc:
            self._failed = exc
        finally:
            self._ready.set()

    def __enter__(self) -> LiveServer:
        self._thread.start()
        assert self._ready.wait(SAFETY_TIMEOUT), "the server did not start"
        if self._failed is not None or self.loop is None:
            raise RuntimeError(f"the server failed to start: {self._failed!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(SAFETY_TIMEOUT)
        self.sock.close()

    @property
    def ctx(self) -> ServerContext:
        ctx: ServerContext = self.app.state["ctx"]
        return ctx

    def call(self, make: Callable[[], Awaitable[T]], timeout: float = 60) -> T:
        """Run a coroutine on the server's loop (store access from the test thread)."""
        assert self.loop is not None

        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def add_user(self, name: str, group: str | None = None) -> str:
        return self.call(lambda: self.ctx.store.add_user(name, group=group))

    def agent_token(self, name: str) -> str:
        return self.call(lambda: self.ctx.store.rotate_token(name, scope="agent"))

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)


def create(client: httpx.Client, command: str = "echo hi", **extra: Any) -> dict[str, Any]:
    response = client.post(
        "/v1/approvals", json={"tool": "Bash", "input": {"command": command}, **extra}
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def key_of(approval: dict[str, Any]) -> str:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(approval["card_url"]).query)["k"][0]


class AutoDecider:
    """A human stand-in on the real API: watches the tenant's event stream and answers every
    new approval with `decision` (None: never answers), through the decide endpoint."""

    def __init__(
        self, live: LiveServer, token: str, decision: str | None, reason: str | None = None
    ):
        self.live = live
        self.token = token
        self.decision = decision
        self.reason = reason
        self.seen: list[str] = []
        self.decided = threading.Event()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with (
            httpx.Client(base_url=self.live.url, timeout=httpx.Timeout(60, read=None)) as client,
            client.stream(
                "GET", "/v1/events", headers={"Authorization": f"Bearer {self.token}"}
            ) as response,
        ):
            self._response = response
            event = ""
            try:
                for line in response.iter_lines():
                    self._ready.set()
                    if self._stop.is_set():
                        return
                    if not line:
                        event = ""
                    elif line.startswith("event:"):
                        event = line.split(":", 1)[1].strip()
                    elif line.startswith("data:") and event == "approval:requested":
                        approval_id = json.loads(line.split(":", 1)[1])["id"]
                        self.seen.append(approval_id)
                        if self.decision is not None:
                            self._decide(client, approval_id)
            except (httpx.HTTPError, RuntimeError, ValueError):
                pass  # closed by __exit__
            finally:
                self._ready.set()

    def _decide(self, client: httpx.Client, approval_id: str) -> None:
        body = {"decision": self.decision}
        if self.reason:
            body["reason"] = self.reason
        client.post(
            f"/v1/approvals/{approval_id}/decide",
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        self.decided.set()

    def __enter__(self) -> AutoDecider:
        self._thread.start()
        assert self._ready.wait(SAFETY_TIMEOUT), "the event stream did not open"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # no decision after the test's block, even if the read lingers
        if self._response is not None:
            # close() alone from this thread neither wakes the reader blocked in recv nor
            # sends the server a FIN (the socket stays open under the read), so the stream
            # lived on until the server's shutdown grace cut it; shutdown() does both.
            stream = self._response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            with contextlib.suppress(Exception):
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
                self._response.close()
        self._thread.join(SAFETY_TIMEOUT)


class Waiting:
    """A gate-side client blocked on the server (ServerPrompter in a thread)."""

    def __init__(
        self,
        live: LiveServer,
        token: str,
        command: str,
        tool_input: dict[str, Any] | None = None,
        budget: float = 60,
        **reported: str,
    ) -> None:
        self.views: list[dict[str, Any]] = []
        self.registered = threading.Event()
        self.reply: PromptReply | None = None

        def on_registered(view: dict[str, Any]) -> None:
            self.views.append(view)
            self.registered.set()

        self.prompter = ServerPrompter(live.url, token, budget=budget, on_registered=on_registered)
        request = PromptRequest(
            request_id="r",
            surface="bash",
            value=command,
            message="m",
            agent="claude-code",
            session="sess-1",
            tool="Bash",
            tool_input={"command": command} if tool_input is None else tool_input,
            cwd=reported.get("cwd", "/home/me/project"),
            rule=reported.get("rule", 'bash "git push *" = ask (user)'),
        )
        self.thread = threading.Thread(target=self._run, args=(request,), daemon=True)
        self.thread.start()
        assert self.registered.wait(SAFETY_TIMEOUT), "the ask never reached the server"

    def _run(self, request: PromptRequest) -> None:
        self.reply = self.prompter.prompt(request)

    @property
    def card_url(self) -> str:
        return str(self.views[0]["card_url"])

    def result(self) -> PromptReply:
        self.thread.join(SAFETY_TIMEOUT)
        assert self.reply is not None, "the waiting client was not released"
        return self.reply
