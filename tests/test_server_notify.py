"""Notifications: the ntfy message shape and limits, the phone's Approve/Deny actions against
the real server, retries, and the signed webhook."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.server import keys
from askgate.server.notify import (
    MESSAGE_LIMIT,
    Notifier,
    ntfy_message,
    truncate_utf8,
    verify_webhook_signature,
)
from askgate.server.store import Approval
from ntfy_standin import NtfyStandIn, validate
from server_support import LiveServer, Waiting
from waits import SAFETY_TIMEOUT

FAST = (0.01, 0.02, 0.05)


def approval(command: str = "git push", **extra: Any) -> Approval:
    values: dict[str, Any] = {
        "id": "appr-1",
        "tenant": "t",
        "created_by": "u",
        "session": "s",
        "agent": "claude-code",
        "tool": "Bash",
        "surface": "bash",
        "cwd": "/p",
        "rule": 'bash "git push *" = ask (user)',
        "input_json": json.dumps({"command": command}, ensure_ascii=False),
        "input_sha256": "ab" * 32,
        "requested_at": 0.0,
        "expires_at": 3600,
        "decided_at": None,
        "decision": None,
        "decided_by": None,
        "reason": None,
        "waiter_gave_up_at": None,
        "consumed_at": None,
    }
    values.update(extra)
    return Approval(**values)


def message_for(command: str) -> dict[str, Any]:
    return ntfy_message(
        approval(command),
        topic="ag-abc",
        card_url="https://h/approvals/appr-1",
        now=0,
    )


def test_the_approval_notification_shape() -> None:
    body = message_for("git push origin main")
    assert validate(body) is None
    assert body["priority"] == 4 and body["click"] == "https://h/approvals/appr-1"
    assert body["tags"] and "approval needed" in body["title"]
    assert "$ git push origin main" in body["message"] and "appr-1" in body["message"]
    approve, deny, details = body["actions"]
    assert (approve["label"], deny["label"], details["label"]) == ("Approve…", "Deny…", "Details")
    for action in (approve, deny, details):
        # only links to the card, where deciding needs the person: the topic decides nothing
        assert action["action"] == "view" and action["url"].startswith("https://h/approvals/appr-1")
        assert "k=" not in action["url"] and "headers" not in action and "body" not in action
    assert "k=" not in json.dumps(body)


def test_a_huge_command_is_truncated_with_a_marker_within_4096_bytes() -> None:
    body = message_for("echo " + "é€😀" * 3000)
    raw = body["message"].encode("utf-8")
    assert len(raw) <= MESSAGE_LIMIT
    assert "[truncated; sha256 abababababab]" in body["message"]
    assert body["message"].endswith("📎 appr-1")  # the tail survives the cut
    assert validate(body) is None


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=3000), st.integers(min_value=0, max_value=5000))
def test_truncation_never_splits_a_utf8_sequence(text: str, limit: int) -> None:
    cut = truncate_utf8(text, limit, " …")
    encoded = cut.encode("utf-8")  # would raise on a lone surrogate half
    assert len(encoded) <= max(limit, len(" …".encode()))
    if len(text.encode("utf-8")) <= limit:
        assert cut == text
    else:
        assert cut.endswith(" …") and text.startswith(cut[: -len(" …")])


def test_an_invalid_topic_is_refused() -> None:
    with pytest.raises(ValueError):
        ntfy_message(approval(), topic="has space", card_url="u")
    with pytest.raises(ValueError):  # a key must never ride in a notification
        ntfy_message(approval(), topic="ag-x", card_url="https://h/approvals/a?k=K")


@pytest.fixture
def ntfy() -> Iterator[NtfyStandIn]:
    stand_in = NtfyStandIn().start()
    try:
        yield stand_in
    finally:
        stand_in.close()


def _enrolled_server(tmp_path: Path, notifier: Notifier) -> tuple[LiveServer, str, str]:
    live = LiveServer(
        tmp_path / "d", f"sqlite+aiosqlite:///{tmp_path / 'n.db'}", notifier=notifier
    ).__enter__()
    token = live.add_user("alice")
    user = live.call(lambda: live.ctx.store.user("alice"))
    assert user is not None
    live.call(lambda: live.ctx.store.enroll(user.id, notifier.ntfy_url or ""))
    return live, token, user.id


def test_whoever_reads_the_topic_cannot_decide_and_the_person_can(
    tmp_path: Path, ntfy: NtfyStandIn
) -> None:
    live, token, user_id = _enrolled_server(tmp_path, Notifier(ntfy_url=ntfy.url, backoff=FAST))
    try:
        waiting = Waiting(live, token, "git push origin main")
        message = ntfy.wait()
        assert message["topic"] == keys.ntfy_topic(live.ctx.secret, user_id)
        anyone = live.client(follow_redirects=False)
        for action in message["actions"]:
            opened = anyone.get(action["url"].split("#")[0])
            assert opened.status_code in (302, 303) and "/login" in opened.headers["location"]
        approval_id = waiting.views[0]["id"]
        forged = anyone.post(f"/v1/approvals/{approval_id}/decide", json={"decision": "allow"})
        assert forged.status_code == 401
        assert live.client(token).get(f"/v1/approvals/{approval_id}").json()["status"] == "pending"
        # the person, signed in, decides; the waiting agent is released and runs
        decided = live.client(token).post(
            f"/v1/approvals/{approval_id}/decide", json={"decision": "allow"}
        )
        assert decided.status_code == 200
        assert waiting.result().state.value == "approved"
    finally:
        live.stop()


def test_the_ntfy_server_recorded_at_enrollment_is_the_one_published_to(tmp_path: Path) -> None:
    configured, private = NtfyStandIn().start(), NtfyStandIn().start()
    try:
        notifier = Notifier(ntfy_url=configured.url, ntfy_token="tk_operator", backoff=FAST)
        with LiveServer(
            tmp_path / "d", f"sqlite+aiosqlite:///{tmp_path / 'r.db'}", notifier=notifier
        ) as live:
            token = live.add_user("alice")
            user = live.call(lambda: live.ctx.store.user("alice"))
            assert user is not None
            store = live.ctx.store
            live.call(lambda: store.enroll(user.id, private.url, ntfy_token="tk_alice"))
            live.client(token).post("/v1/approvals", json={"tool": "T", "input": {"a": 1}})
            first = private.wait()
            # her own token, to her own server; the operator's token never leaves for it
            assert private.authorizations == ["Bearer tk_alice"]
            assert configured.attempts == 0
            rotated = live.call(lambda: store.rotate_topic(user.id))
            assert rotated is not None and rotated.topic_epoch == 1
            private.received.clear()
            live.client(token).post("/v1/approvals", json={"tool": "T", "input": {"a": 2}})
            second = private.wait()
            assert second["topic"] != first["topic"]
            assert second["topic"] == keys.user_topic(live.ctx.secret, user.id, 1)
    finally:
        configured.close()
        private.close()


def test_publishing_is_retried_with_backoff(tmp_path: Path) -> None:
    ntfy = NtfyStandIn(fail_first=2).start()
    try:
        live, token, _ = _enrolled_server(tmp_path, Notifier(ntfy_url=ntfy.url, backoff=FAST))
        try:
            live.client(token).post("/v1/approvals", json={"tool": "T", "input": {"a": 1}})
            assert ntfy.wait()["topic"].startswith("ag-")
            assert ntfy.attempts == 3  # two failures retried, the third delivered
        finally:
            live.stop()
    finally:
        ntfy.close()


def test_a_user_not_enrolled_gets_no_phone_notification(tmp_path: Path, ntfy: NtfyStandIn) -> None:
    notifier = Notifier(ntfy_url=ntfy.url, backoff=FAST)
    with LiveServer(
        tmp_path / "d", f"sqlite+aiosqlite:///{tmp_path / 'e.db'}", notifier=notifier
    ) as live:
        client = live.client(live.add_user("bob"))
        created = client.post("/v1/approvals", json={"tool": "T", "input": {}})
        assert created.status_code == 201
        live.call(lambda: notifier.drain(5))
    assert ntfy.messages == [] and ntfy.attempts == 0


def test_the_webhook_is_signed(tmp_path: Path) -> None:
    got: list[tuple[bytes, str]] = []
    arrived = threading.Event()

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(
                (
                    self.rfile.read(int(self.headers["content-length"])),
                    self.headers["X-Askgate-Signature"],
                )
            )
            self.send_response(204)
            self.end_headers()
            arrived.set()

        def log_message(self, *args: Any) -> None:
            pass

    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    secret = b"w" * 32
    notifier = Notifier(
        webhook_url=f"http://127.0.0.1:{receiver.server_address[1]}/hook",
        webhook_secret=secret,
        backoff=FAST,
    )
    try:
        with LiveServer(
            tmp_path / "d", f"sqlite+aiosqlite:///{tmp_path / 'w.db'}", notifier=notifier
        ) as live:
            client = live.client(live.add_user("carol"))
            created = client.post("/v1/approvals", json={"tool": "Bash", "input": {"c": "x"}})
            assert arrived.wait(SAFETY_TIMEOUT)
    finally:
        receiver.shutdown()
        receiver.server_close()
    [(body, signature)] = got
    assert verify_webhook_signature(secret, signature, body)
    assert not verify_webhook_signature(b"x" * 32, signature, body)
    assert not verify_webhook_signature(secret, signature, body + b" ")
    payload = json.loads(body)
    assert payload["type"] == "approval.requested"
    assert payload["approval"]["id"] == created.json()["id"]
    assert "?k=" in payload["decide_url"]


def test_the_ntfy_web_app_may_decide_cross_origin_with_the_key_only(tmp_path: Path) -> None:
    import httpx

    with LiveServer(tmp_path / "d", f"sqlite+aiosqlite:///{tmp_path / 'c.db'}") as live:
        token = live.add_user("dora")
        created = (
            live.client(token)
            .post("/v1/approvals", json={"tool": "Bash", "input": {"command": "x"}})
            .json()
        )
        decide = f"{live.url}/v1/approvals/{created['id']}/decide"
        origin = {"Origin": "https://ntfy.sh"}
        preflight = httpx.options(
            decide,
            headers={
                **origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        assert preflight.status_code in (200, 204)
        assert preflight.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in preflight.headers
        k = parse_qs(urlsplit(created["card_url"]).query)["k"][0]
        done = httpx.post(decide, params={"k": k}, json={"decision": "deny"}, headers=origin)
        assert done.status_code == 200 and done.headers["access-control-allow-origin"] == "*"
