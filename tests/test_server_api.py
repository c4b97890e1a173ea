"""The /v1 API over a real socket, on SQLite and on PostgreSQL: shapes, status codes, the
long-poll woken by a decision, abandon, late approvals, tenants, SSE, OpenAPI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from server_support import LiveServer, create, db_url, key_of, pg_admin_url  # noqa: F401
from waits import wait_until


@pytest.fixture
def live(tmp_path: Path, db_url: str) -> Iterator[LiveServer]:  # noqa: F811
    with LiveServer(tmp_path / "data", db_url) as server:
        yield server


@pytest.fixture
def alice(live: LiveServer) -> httpx.Client:
    return live.client(live.add_user("alice"))


def test_create_answers_201_pending_with_the_input_digest(live: LiveServer, alice) -> None:
    body = create(alice, "git push", cwd="/w", session="s", agent="claude-code", rule="bash ask")
    assert body["status"] == "pending"
    assert body["id"].startswith("appr-")
    assert body["input"] == {"command": "git push"}
    assert body["expires_at"] > time.time()
    from askgate.approvals.canonical import input_digest

    assert body["input_sha256"] == input_digest({"command": "git push"})
    read = alice.get(f"/v1/approvals/{body['id']}").json()
    assert read["status"] == "pending" and read["cwd"] == "/w" and read["agent"] == "claude-code"


def test_long_poll_is_released_by_a_decision(live: LiveServer, alice) -> None:
    approval = create(alice)
    result: dict[str, Any] = {}

    def waiter() -> None:
        with live.client(alice.headers["authorization"].split()[1]) as client:
            result["response"] = client.get(f"/v1/approvals/{approval['id']}?wait=30")

    thread = threading.Thread(target=waiter)
    thread.start()
    # Decide once the long-poll is parked on the server (its waiter is registered).
    wait_until(lambda: live.ctx.waker.waiting > 0, "the long-poll to park")
    decided = alice.post(
        f"/v1/approvals/{approval['id']}/decide", json={"decision": "allow", "reason": "ok"}
    )
    assert decided.status_code == 200
    thread.join(20)
    response = result["response"]
    assert response.status_code == 200
    assert response.json()["status"] == "allow"
    assert response.json()["reason"] == "ok"


def test_long_poll_ends_pending_when_its_wait_ends(live: LiveServer, alice) -> None:
    approval = create(alice)
    response = alice.get(f"/v1/approvals/{approval['id']}?wait=0.2")
    assert response.status_code == 200 and response.json()["status"] == "pending"


def test_decide_with_key_repeat_and_conflict(live: LiveServer, alice) -> None:
    approval = create(alice)
    key = key_of(approval)
    anon = live.client()
    url = f"/v1/approvals/{approval['id']}/decide"
    first = anon.post(url, params={"k": key}, json={"decision": "deny", "reason": "no"})
    assert first.status_code == 200 and first.json()["status"] == "deny"
    again = anon.post(url, params={"k": key}, json={"decision": "deny"})
    assert again.status_code == 200 and again.json()["status"] == "deny"  # second phone: no error
    other = anon.post(url, params={"k": key}, json={"decision": "allow"})
    assert other.status_code == 409
    assert other.json()["approval"]["status"] == "deny"
    assert other.json()["error"] == "already-decided"
    assert alice.get(f"/v1/approvals/{approval['id']}").json()["status"] == "deny"


def test_no_credential_is_401(live: LiveServer, alice) -> None:
    approval = create(alice)
    anon = live.client()
    assert anon.post("/v1/approvals", json={"tool": "T", "input": {}}).status_code == 401
    assert anon.get(f"/v1/approvals/{approval['id']}").status_code == 401
    assert anon.get("/v1/approvals").status_code == 401
    assert anon.get("/v1/me").status_code == 401
    decide = anon.post(f"/v1/approvals/{approval['id']}/decide", json={"decision": "allow"})
    assert decide.status_code == 401
    assert live.client("agt_wrong").get("/v1/me").status_code == 401
    assert alice.get(f"/v1/approvals/{approval['id']}").json()["status"] == "pending"


def test_bad_foreign_and_replayed_keys_are_403(live: LiveServer, alice) -> None:
    one, two = create(alice, "echo one"), create(alice, "echo two")
    anon = live.client()
    for key in ("garbage", key_of(two), key_of(one)[:-2] + "AA"):
        response = anon.post(
            f"/v1/approvals/{one['id']}/decide", params={"k": key}, json={"decision": "allow"}
        )
        assert response.status_code == 403, key
    # Replaying a spent key against its own approval changes nothing (409 with the verdict).
    anon.post(
        f"/v1/approvals/{two['id']}/decide", params={"k": key_of(two)}, json={"decision": "deny"}
    )
    replay = anon.post(
        f"/v1/approvals/{two['id']}/decide", params={"k": key_of(two)}, json={"decision": "allow"}
    )
    assert replay.status_code == 409 and replay.json()["approval"]["status"] == "deny"
    assert alice.get(f"/v1/approvals/{one['id']}").json()["status"] == "pending"


def test_another_user_added_the_default_way_sees_404_and_cannot_decide(
    live: LiveServer, alice
) -> None:
    approval = create(alice)
    mallory = live.client(live.add_user("mallory"))
    assert mallory.get(f"/v1/approvals/{approval['id']}").status_code == 404
    assert mallory.get(f"/v1/approvals/{approval['id']}?wait=1").status_code == 404
    response = mallory.post(f"/v1/approvals/{approval['id']}/decide", json={"decision": "allow"})
    assert response.status_code == 404
    assert mallory.post(f"/v1/approvals/{approval['id']}/abandon").status_code == 404
    assert mallory.get("/v1/approvals").json()["approvals"] == []
    assert alice.get("/v1/approvals/appr-unknown").status_code == 404
    assert alice.get(f"/v1/approvals/{approval['id']}").json()["status"] == "pending"


def test_an_agent_token_cannot_decide(live: LiveServer) -> None:
    live.add_user("bob")
    agent = live.client(live.agent_token("bob"))
    approval = create(agent)
    assert approval["card_url"] is None  # no key handed to the agent side
    response = agent.post(f"/v1/approvals/{approval['id']}/decide", json={"decision": "allow"})
    assert response.status_code == 403
    assert agent.get(f"/v1/approvals/{approval['id']}").json()["status"] == "pending"


def test_past_expiry_is_410_and_recorded_expired(live: LiveServer, alice) -> None:
    approval = create(alice, expires_in=1)
    key = key_of(approval)
    # Wait for the clock, not for a worker: expiry is a pure function of time.
    end = approval["expires_at"] + 0.05
    while time.time() < end:
        threading.Event().wait(end - time.time())
    anon = live.client()
    response = anon.post(
        f"/v1/approvals/{approval['id']}/decide", params={"k": key}, json={"decision": "allow"}
    )
    assert response.status_code == 410
    assert alice.get(f"/v1/approvals/{approval['id']}").json()["status"] == "expired"
    by_token = alice.post(f"/v1/approvals/{approval['id']}/decide", json={"decision": "allow"})
    assert by_token.status_code == 410


def test_abandon_records_timeout_and_stays_decidable(live: LiveServer, alice) -> None:
    approval = create(alice, session="s1")
    gave_up = alice.post(f"/v1/approvals/{approval['id']}/abandon")
    assert gave_up.status_code == 200 and gave_up.json()["status"] == "timeout"
    late = alice.post(f"/v1/approvals/{approval['id']}/decide", json={"decision": "allow"})
    assert late.status_code == 200
    assert late.json()["status"] == "timeout" and late.json()["late"] == "allow"
    # the identical call, asked again, gets that approval once ...
    again = alice.post(
        "/v1/approvals", json={"tool": "Bash", "input": {"command": "echo hi"}, "session": "s1"}
    )
    assert again.status_code == 200 and again.json()["released"] and again.json()["consumed"]
    # ... and only once
    third = alice.post(
        "/v1/approvals", json={"tool": "Bash", "input": {"command": "echo hi"}, "session": "s1"}
    )
    assert third.status_code == 201 and third.json()["status"] == "pending"


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"[]", "application/json"),
        (b'{"tool": 5, "input": {}}', "application/json"),
        (b'{"tool": "Bash", "input": "rm -rf /"}', "application/json"),
        (b'{"tool": "Bash"}', "application/json"),
        (b'{"tool": "Bash", "input": {}, "sneaky": 1}', "application/json"),
        (b'{"tool": "Bash", "input": {}, "expires_in": "soon"}', "application/json"),
        (b'{"tool": "Bash", "input": {}, "expires_in": 0}', "application/json"),
        (b'{"tool": "", "input": {}}', "application/json"),
        (b'{"tool": "Bash", "input": {"x": 1e400}}', "application/json"),
        (b'{"tool": "Bash", "input": {"x": 9007199254740993}}', "application/json"),
        (b'{"tool": "Bash\\u0000", "input": {}}', "application/json"),
    ],
    ids=[
        "not-json",
        "array",
        "tool-int",
        "input-string",
        "input-missing",
        "unknown-field",
        "expires-string",
        "expires-zero",
        "tool-empty",
        "infinity",
        "unsafe-integer",
        "nul",
    ],
)
def test_malformed_create_bodies_are_400_json(
    live: LiveServer, alice, body: bytes, content_type: str
) -> None:
    response = alice.post("/v1/approvals", content=body, headers={"content-type": content_type})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "bad-request"
    assert alice.get("/v1/approvals").json()["approvals"] == []


@pytest.mark.parametrize(
    "body",
    [b'{"decision": "maybe"}', b'{"decision": true}', b'{"decision": "allow", "extra": 1}', b"x"],
    ids=["unknown-decision", "wrong-type", "unknown-field", "not-json"],
)
def test_malformed_decide_bodies_are_400(live: LiveServer, alice, body: bytes) -> None:
    approval = create(alice)
    response = alice.post(
        f"/v1/approvals/{approval['id']}/decide",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert "k=" not in response.text
    assert alice.get(f"/v1/approvals/{approval['id']}").json()["status"] == "pending"


def test_oversized_body_is_413_and_nothing_is_written(live: LiveServer, alice) -> None:
    big = json.dumps({"tool": "Write", "input": {"content": "x" * (2 * 1024 * 1024)}})
    response = alice.post(
        "/v1/approvals", content=big, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert alice.get("/v1/approvals").json()["approvals"] == []


def test_me_and_list(live: LiveServer, alice) -> None:
    me = alice.get("/v1/me").json()
    assert me["name"] == "alice" and me["tenant"] == f"user:{me['id']}"
    assert me["enrolled"] is False and me["approves"] == []
    first, second = create(alice, "a"), create(alice, "b")
    alice.post(f"/v1/approvals/{first['id']}/decide", json={"decision": "allow"})
    listed = [a["id"] for a in alice.get("/v1/approvals").json()["approvals"]]
    assert set(listed) == {first["id"], second["id"]}
    pending = alice.get("/v1/approvals", params={"pending": "true"}).json()["approvals"]
    assert [a["id"] for a in pending] == [second["id"]]


def test_sse_carries_the_decision_payload_to_the_tenant_only(live: LiveServer, alice) -> None:
    approval = create(alice)
    token = alice.headers["authorization"].split()[1]
    other_token = live.add_user("eve")
    seen: list[dict[str, Any]] = []
    other_seen: list[str] = []
    opened = threading.Barrier(3, timeout=20)

    async def listen(tok: str, sink: list[Any], stop_on_decision: bool) -> None:
        async with (
            httpx.AsyncClient(base_url=live.url, timeout=20) as client,
            client.stream("GET", "/v1/events", headers={"Authorization": f"Bearer {tok}"}) as r,
        ):
            assert r.status_code == 200
            await asyncio.to_thread(opened.wait)
            event = ""
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event == "permissions:decision":
                    sink.append(json.loads(line.split(":", 1)[1]))
                    if stop_on_decision:
                        return

    def run_listener(tok: str, sink: list[Any], stop: bool) -> None:
        with contextlib.suppress(TimeoutError):
            asyncio.run(asyncio.wait_for(listen(tok, sink, stop), 15))

    mine = threading.Thread(target=run_listener, args=(token, seen, True))
    theirs = threading.Thread(target=run_listener, args=(other_token, other_seen, False))
    mine.start()
    theirs.start()
    opened.wait()
    alice.post(f"/v1/approvals/{approval['id']}/decide", json={"decision": "deny"})
    mine.join(20)
    assert seen and seen[0]["requestId"] == approval["id"]
    assert seen[0]["result"] == "deny" and seen[0]["resolution"] == "user_denied"
    assert set(seen[0]) >= {"surface", "value", "result", "resolution", "agentName"}
    theirs.join(20)
    assert other_seen == []


def test_events_need_a_credential(live: LiveServer) -> None:
    assert live.client().get("/v1/events").status_code == 401


def test_openapi_and_healthz(live: LiveServer) -> None:
    anon = live.client()
    schema = anon.get("/openapi.json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    for path in ("/v1/approvals", "/v1/approvals/{approval_id}", "/v1/me", "/healthz"):
        assert path in paths, path
    assert "/v1/approvals/{approval_id}/decide" in paths
    assert anon.get("/healthz").json()["ok"] is True


def test_approvals_disabled_is_404_approvals_disabled(tmp_path: Path, db_url: str) -> None:  # noqa: F811
    with LiveServer(tmp_path / "d", db_url, approvals_enabled=False) as live:
        client = live.client(live.add_user("a"))
        response = client.post("/v1/approvals", json={"tool": "T", "input": {}})
        assert response.status_code == 404
        assert response.json()["error"] == "approvals-disabled"


BOUNDS = {"tool": 512, "session": 512, "agent": 200, "surface": 64, "cwd": 4096, "rule": 4096}


@pytest.mark.parametrize("field", sorted(BOUNDS))
def test_every_text_field_is_bounded_with_a_400_that_names_it(
    live: LiveServer, alice, field: str
) -> None:
    base = {"tool": "Bash", "input": {"command": "ls"}}
    # at the bound: stored (the bound lies within the database column, on PostgreSQL too)
    at = alice.post("/v1/approvals", json={**base, field: "x" * BOUNDS[field]})
    assert at.status_code == 201, at.text
    over = alice.post("/v1/approvals", json={**base, field: "x" * (BOUNDS[field] + 1)})
    assert over.status_code == 400, over.text
    assert over.json()["error"] == "bad-request" and over.json()["field"] == field
    nul = alice.post("/v1/approvals", json={**base, field: "a\u0000b"})
    assert nul.status_code == 400 and nul.json()["field"] == field


def test_an_over_long_reason_is_a_400_naming_it(live: LiveServer, alice) -> None:
    approval = create(alice)
    response = alice.post(
        f"/v1/approvals/{approval['id']}/decide", json={"decision": "deny", "reason": "r" * 2001}
    )
    assert response.status_code == 400 and response.json()["field"] == "reason"
    assert alice.get(f"/v1/approvals/{approval['id']}").json()["status"] == "pending"


def test_an_over_long_name_is_refused_at_once_and_the_command_does_not_run(
    live: LiveServer, tmp_path: Path
) -> None:
    from askgate.prompters.base import PromptRequest
    from askgate.prompters.server import ServerPrompter

    token = live.add_user("alice")
    request = PromptRequest(
        request_id="r",
        surface="bash",
        value="ls",
        message="m",
        agent="a" * 500,  # longer than the column: round 1 answered 503 and the hook waited
        session="s",
        tool="Bash",
        tool_input={"command": "ls"},
        cwd="/w",
    )
    started = time.monotonic()
    reply = ServerPrompter(live.url, token, budget=60).prompt(request)
    assert not reply.approved and "HTTP 400" in (reply.detail or "")
    assert time.monotonic() - started < 30  # refused, not waited out (budget 60 s)
