"""Abuse and failure, each one a test: a thousand concurrent deciders over HTTP (SQLite and
PostgreSQL), a locked SQLite, a PostgreSQL that goes away, a server killed mid-wait and
restarted, a notifier that fails or hangs."""

from __future__ import annotations

import asyncio
import http.server
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from askgate.prompters.base import PromptRequest, PromptState
from askgate.prompters.server import ServerPrompter
from askgate.server.notify import Notifier
from server_support import REPO, LiveServer, create, db_url, key_of, pg_admin_url  # noqa: F401


def test_one_thousand_concurrent_deciders_over_http_one_wins(
    tmp_path: Path,
    db_url: str,  # noqa: F811
) -> None:
    with LiveServer(tmp_path / "d", db_url) as live:
        token = live.add_user("alice")
        approval = create(live.client(token))
        key = key_of(approval)
        url = f"{live.url}/v1/approvals/{approval['id']}/decide"

        async def race() -> list[httpx.Response]:
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=0)
            async with httpx.AsyncClient(limits=limits, timeout=120) as client:
                return await asyncio.gather(
                    *[
                        client.post(
                            url,
                            params={"k": key},
                            json={
                                "decision": "allow" if i % 2 else "deny",
                                "reason": f"decider-{i}",
                            },
                        )
                        for i in range(1000)
                    ]
                )

        responses = asyncio.run(race())
        final = live.client(token).get(f"/v1/approvals/{approval['id']}").json()
    assert {r.status_code for r in responses} <= {200, 409}
    winner = int(final["reason"].split("-")[1])
    assert final["status"] == ("allow" if winner % 2 else "deny")
    # Everyone saw the one recorded verdict: the same decision answers 200, the other 409.
    for i, response in enumerate(responses):
        body = response.json()
        body = body.get("approval", body)  # a 409 carries the recorded approval
        assert body["status"] == final["status"] and body["reason"] == final["reason"]
        same = ("allow" if i % 2 else "deny") == final["status"]
        assert response.status_code == (200 if same else 409)


def test_a_locked_sqlite_answers_503_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASKGATE_SQLITE_BUSY_MS", "200")
    db_file = tmp_path / "locked.sqlite3"
    with LiveServer(tmp_path / "d", f"sqlite+aiosqlite:///{db_file}") as live:
        token = live.add_user("alice")
        client = live.client(token)
        pending = create(client, "before the lock")
        locker = sqlite3.connect(db_file, timeout=0.1, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        try:
            created = client.post("/v1/approvals", json={"tool": "T", "input": {"n": 1}})
            assert created.status_code == 503
            assert created.json()["error"] == "database-unavailable"
            decided = client.post(
                f"/v1/approvals/{pending['id']}/decide", json={"decision": "allow"}
            )
            assert decided.status_code == 503
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        rows = client.get("/v1/approvals").json()["approvals"]
        assert [(r["id"], r["status"]) for r in rows] == [(pending["id"], "pending")]
        # and it works again once the lock is gone
        assert (
            client.post(f"/v1/approvals/{pending['id']}/decide", json={"decision": "deny"}).json()[
                "status"
            ]
            == "deny"
        )


def _pg_ctl(data_dir: str, *args: str) -> None:
    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
    argv = [str(bindir / "pg_ctl"), "-D", f"{data_dir}/data", *args]
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--", *argv]
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


@pytest.fixture
def own_cluster() -> Iterator[tuple[str, str]]:
    """A cluster this test may stop and start (URL, data dir)."""
    proc = subprocess.run(
        [str(REPO / "scripts" / "start-postgres")], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required in CI: {proc.stderr[-300:]}")
        pytest.skip(f"PostgreSQL unavailable: {proc.stderr[-300:]}")
    data_dir = next(
        line.split(": ", 1)[1] for line in proc.stderr.splitlines() if line.startswith("pgdata: ")
    )
    try:
        yield proc.stdout.strip(), data_dir
    finally:
        subprocess.run([str(REPO / "scripts" / "start-postgres"), "--stop", data_dir], timeout=60)


def test_postgres_gone_answers_503_and_recovers_with_nothing_half_written(
    tmp_path: Path, own_cluster: tuple[str, str]
) -> None:
    url, data_dir = own_cluster
    sa_url = url.replace("postgresql://", "postgresql+asyncpg://", 1)
    with LiveServer(tmp_path / "d", sa_url) as live:
        token = live.add_user("alice")
        client = live.client(token)
        pending = create(client, "survives the outage")
        _pg_ctl(data_dir, "-m", "immediate", "stop")
        try:
            created = client.post("/v1/approvals", json={"tool": "T", "input": {"n": 2}})
            assert created.status_code == 503
            decided = client.post(
                f"/v1/approvals/{pending['id']}/decide", json={"decision": "allow"}
            )
            assert decided.status_code == 503
            assert client.get("/healthz").status_code == 503
        finally:
            _pg_ctl(data_dir, "-l", f"{data_dir}/server.log", "-w", "start")
        assert client.get("/healthz").status_code == 200
        rows = client.get("/v1/approvals").json()["approvals"]
        assert [(r["id"], r["status"]) for r in rows] == [(pending["id"], "pending")]
        done = client.post(f"/v1/approvals/{pending['id']}/decide", json={"decision": "allow"})
        assert done.json()["status"] == "allow"


def _serve(port: int, data_dir: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "askgate",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if k != "ASKGATE_DATABASE_URL"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # printed once the database is migrated and the port bound
    assert "askgate approval server: http://127.0.0.1:" in line, (
        proc.stderr.read()[-2000:] if proc.stderr else line
    )
    return proc


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_server_killed_mid_wait_and_restarted_the_waiter_gets_the_decision(
    tmp_path: Path,
) -> None:
    port, data_dir = _free_port(), tmp_path / "data"
    server = _serve(port, data_dir)
    token = subprocess.run(
        [sys.executable, "-m", "askgate", "user", "add", "alice", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()[-1]
    views: list[dict[str, Any]] = []
    registered = threading.Event()
    replies: list[Any] = []

    def on_registered(view: dict[str, Any]) -> None:
        views.append(view)
        registered.set()

    prompter = ServerPrompter(
        f"http://127.0.0.1:{port}", token, budget=60, on_registered=on_registered
    )
    request = PromptRequest(
        request_id="r",
        surface="bash",
        value="make",
        message="m",
        tool="Bash",
        tool_input={"command": "make deploy"},
    )
    waiter = threading.Thread(target=lambda: replies.append(prompter.prompt(request)))
    waiter.start()
    try:
        assert registered.wait(20)
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(10)
        server = _serve(port, data_dir)  # same port, same database
        decided = httpx.post(
            views[0]["card_url"].replace("/approvals/", "/v1/approvals/").split("?")[0] + "/decide",
            params={"k": key_of(views[0])},
            json={"decision": "allow"},
            timeout=10,
        )
        assert decided.status_code == 200 and decided.json()["status"] == "allow"
        waiter.join(60)
        assert replies and replies[0].state is PromptState.APPROVED
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(10)


class _BadNtfy(http.server.BaseHTTPRequestHandler):
    """A notification endpoint that fails (500) or hangs (never answers)."""

    mode = "fail"
    hanging = threading.Event()

    def do_POST(self) -> None:
        if self.mode == "hang":
            self.hanging.wait(30)
            return
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("mode", ["fail", "hang"])
def test_a_failing_or_hanging_notifier_leaves_the_approval_decidable(
    tmp_path: Path, mode: str
) -> None:
    handler = type("H", (_BadNtfy,), {"mode": mode, "hanging": threading.Event()})
    ntfy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=ntfy.serve_forever, daemon=True).start()
    ntfy_url = f"http://127.0.0.1:{ntfy.server_address[1]}"
    notifier = Notifier(ntfy_url=ntfy_url, webhook_url=ntfy_url + "/hook", attempt_timeout=20)
    try:
        with LiveServer(
            tmp_path / "d", f"sqlite+aiosqlite:///{tmp_path / 'n.db'}", notifier=notifier
        ) as live:
            token = live.add_user("alice")
            user = live.call(lambda: live.ctx.store.user("alice"))
            assert user is not None
            live.call(lambda: live.ctx.store.enroll(user.id, ntfy_url))
            client = live.client(token)
            approval = create(client)  # answers at once: delivery runs in the background
            page = httpx.get(approval["card_url"], timeout=10)
            assert page.status_code == 200 and "Approve" in page.text
            form = httpx.post(
                f"{live.url}/approvals/{approval['id']}/decide",
                data={"decision": "allow", "k": key_of(approval)},
                headers={"Origin": live.url},
            )
            assert form.status_code == 303
            assert client.get(f"/v1/approvals/{approval['id']}").json()["status"] == "allow"
    finally:
        handler.hanging.set()
        ntfy.shutdown()
        ntfy.server_close()
