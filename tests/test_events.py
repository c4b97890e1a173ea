"""The event bus, payload shapes on the wire, the JSON Schema, and the caller helpers."""

from __future__ import annotations

import asyncio
import json
import logging
import threading

import msgspec
import pytest

from askgate import events
from askgate.events import (
    CHANNEL_DECISION,
    CHANNEL_READY,
    CHANNEL_RPC_CHECK,
    CHANNEL_RPC_PING,
    CHANNEL_RPC_PROMPT,
    PERMISSIONS_PROTOCOL_VERSION,
    EventBus,
    PermissionDecisionEvent,
    PermissionsCheckReplyData,
    PermissionsCheckRequest,
    PermissionsPingReplyData,
    PermissionsPromptReplyData,
    PermissionsPromptRequest,
    PermissionsReadyEvent,
    error_reply,
    ok_reply,
    reply_channel,
    request,
    request_sync,
    to_json,
)

# ------------------------------------------------------------------ bus


def test_emit_reaches_every_handler_in_order_and_unsubscribe_is_idempotent() -> None:
    bus = EventBus()
    seen: list[tuple[str, object]] = []
    off_a = bus.on("c", lambda d: seen.append(("a", d)))
    bus.on("c", lambda d: seen.append(("b", d)))
    bus.on("other", lambda d: seen.append(("x", d)))
    bus.emit("c", {"n": 1})
    assert seen == [("a", {"n": 1}), ("b", {"n": 1})]
    off_a()
    off_a()
    bus.emit("c", 2)
    assert seen[-1] == ("b", 2) and len(seen) == 3
    assert bus.listener_count("c") == 1 and not bus.has_listeners("nobody")


def test_same_handler_twice_is_two_subscriptions() -> None:
    bus = EventBus()
    calls: list[int] = []

    def handler(data: int) -> None:
        calls.append(data)

    off_first = bus.on("c", handler)
    bus.on("c", handler)
    bus.emit("c", 1)
    off_first()
    bus.emit("c", 2)
    assert calls == [1, 1, 2]


def test_failing_handler_is_logged_and_never_stops_the_others(caplog) -> None:
    bus = EventBus()
    seen: list[int] = []

    def broken(_: object) -> None:
        raise RuntimeError("subscriber bug")

    bus.on("c", broken)
    bus.on("c", seen.append)
    with caplog.at_level(logging.ERROR, logger="askgate.events"):
        bus.emit("c", 7)
    assert seen == [7]
    assert any("subscriber bug" in (r.exc_text or "") for r in caplog.records)
    assert all(r.name == "askgate.events" for r in caplog.records)


def test_handlers_may_unsubscribe_and_emit_reentrantly() -> None:
    bus = EventBus()
    seen: list[str] = []
    offs: list = []

    def once(_: object) -> None:
        seen.append("once")
        offs[0]()
        bus.emit("inner", None)

    offs.append(bus.on("c", once))
    bus.on("inner", lambda _: seen.append("inner"))
    bus.emit("c", None)
    bus.emit("c", None)
    assert seen == ["once", "inner"]


def test_bus_is_thread_safe_under_concurrent_subscribe_and_emit() -> None:
    bus = EventBus()
    counter = 0
    lock = threading.Lock()

    def count(_: object) -> None:
        nonlocal counter
        with lock:
            counter += 1

    bus.on("c", count)

    def churn() -> None:
        for _ in range(300):
            off = bus.on("c", lambda _: None)
            bus.emit("c", None)
            off()

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert counter == 4 * 300
    assert bus.listener_count("c") == 1


# ------------------------------------------------------------------ wire shapes


def test_channel_names_and_protocol_version() -> None:
    assert PERMISSIONS_PROTOCOL_VERSION == 1
    assert CHANNEL_READY == "permissions:ready"
    assert CHANNEL_DECISION == "permissions:decision"
    assert CHANNEL_RPC_CHECK == "permissions:rpc:check"
    assert CHANNEL_RPC_PROMPT == "permissions:rpc:prompt"
    assert CHANNEL_RPC_PING == "permissions:rpc:ping"
    assert reply_channel(CHANNEL_RPC_CHECK, "r1") == "permissions:rpc:check:reply:r1"


def test_ready_and_decision_payload_keys() -> None:
    assert msgspec.to_builtins(PermissionsReadyEvent(protocol_version=1)) == {"protocolVersion": 1}
    event = PermissionDecisionEvent(
        surface="bash",
        value="git push",
        result="deny",
        resolution="policy_deny",
        origin=None,
        agent_name=None,
        matched_pattern=None,
        request_id="r1",
    )
    wire = msgspec.to_builtins(event)
    # Nullable fields are present as null, never left out.
    assert wire == {
        "surface": "bash",
        "value": "git push",
        "result": "deny",
        "resolution": "policy_deny",
        "origin": None,
        "agentName": None,
        "matchedPattern": None,
        "requestId": "r1",
    }


def test_request_and_reply_payload_keys() -> None:
    check = msgspec.to_builtins(PermissionsCheckRequest(request_id="r", surface="bash"))
    assert check == {"requestId": "r", "surface": "bash"}  # optional fields left out
    full = PermissionsCheckRequest(request_id="r", surface="bash", value="ls", agent_name="a")
    assert set(msgspec.to_builtins(full)) == {"requestId", "surface", "value", "agentName"}
    prompt = PermissionsPromptRequest(
        request_id="r", surface="bash", value="ls", message="m", agent_name="a", session_label="l"
    )
    assert set(msgspec.to_builtins(prompt)) == {
        "requestId",
        "surface",
        "value",
        "message",
        "agentName",
        "sessionLabel",
    }
    reply = PermissionsCheckReplyData(result="ask", matched_pattern=None, origin=None)
    assert msgspec.to_builtins(reply) == {"result": "ask", "matchedPattern": None, "origin": None}
    answer = PermissionsPromptReplyData(
        approved=False, state="denied_with_reason", denial_reason="x"
    )
    assert msgspec.to_builtins(answer) == {
        "approved": False,
        "state": "denied_with_reason",
        "denialReason": "x",
    }
    assert msgspec.to_builtins(PermissionsPingReplyData(protocol_version=1)) == {
        "protocolVersion": 1
    }


def test_envelopes() -> None:
    assert ok_reply() == {"success": True, "protocolVersion": 1}
    assert ok_reply(PermissionsPingReplyData(protocol_version=1)) == {
        "success": True,
        "protocolVersion": 1,
        "data": {"protocolVersion": 1},
    }
    assert error_reply("no_ui") == {"success": False, "protocolVersion": 1, "error": "no_ui"}


def test_to_json_is_one_call_for_structs_and_bus_dicts() -> None:
    event = PermissionsReadyEvent(protocol_version=1)
    assert json.loads(to_json(event)) == {"protocolVersion": 1}
    assert json.loads(to_json({"a": [1, None]})) == {"a": [1, None]}


def test_incoming_payloads_decode_from_wire_dicts_and_ignore_unknown_keys() -> None:
    parsed = msgspec.convert(
        {"requestId": "r", "surface": "bash", "value": "ls", "future": 1}, PermissionsCheckRequest
    )
    assert (parsed.request_id, parsed.value, parsed.agent_name) == ("r", "ls", None)
    with pytest.raises(msgspec.ValidationError, match="surface"):
        msgspec.convert({"requestId": "r"}, PermissionsCheckRequest)


def test_json_schema_covers_every_channel() -> None:
    schema = events.events_json_schema()
    assert schema["protocolVersion"] == 1
    assert set(schema["channels"]) == {
        CHANNEL_READY,
        CHANNEL_DECISION,
        CHANNEL_RPC_CHECK,
        CHANNEL_RPC_PROMPT,
        CHANNEL_RPC_PING,
    }
    decision = schema["$defs"]["PermissionDecisionEvent"]
    assert set(decision["required"]) == {
        "surface",
        "value",
        "result",
        "resolution",
        "origin",
        "agentName",
        "matchedPattern",
        "requestId",
    }
    assert "timed_out" in decision["properties"]["resolution"]["enum"]
    check = schema["channels"][CHANNEL_RPC_CHECK]
    assert check["replyChannel"] == "permissions:rpc:check:reply:<requestId>"
    assert schema["$defs"]["PermissionsCheckRequest"]["required"] == ["requestId", "surface"]
    json.dumps(schema)  # serialisable as is


# ------------------------------------------------------------------ caller helpers


def _echo_server(bus: EventBus, channel: str, *, threaded: bool = False) -> None:
    def handle(data: dict) -> None:
        def answer() -> None:
            bus.emit(reply_channel(channel, data["requestId"]), ok_reply({"echo": data}))

        if threaded:
            threading.Thread(target=answer).start()
        else:
            answer()

    bus.on(channel, handle)


def test_request_sync_gets_the_reply_and_fills_in_a_request_id() -> None:
    bus = EventBus()
    _echo_server(bus, "x:rpc", threaded=True)
    reply = request_sync(bus, "x:rpc", {"q": 1}, timeout=5)
    assert reply["success"] is True
    assert reply["data"]["echo"]["q"] == 1
    assert isinstance(reply["data"]["echo"]["requestId"], str)
    assert not bus.has_listeners(reply_channel("x:rpc", reply["data"]["echo"]["requestId"]))


def test_request_sync_without_listener_or_reply_is_an_error_never_approval() -> None:
    bus = EventBus()
    assert request_sync(bus, "x:rpc", {}, timeout=5)["error"] == "no_handler"
    bus.on("x:rpc", lambda data: None)  # listens, never answers
    reply = request_sync(bus, "x:rpc", {"requestId": "r"}, timeout=0.05)
    assert reply == error_reply("timeout")
    assert not bus.has_listeners(reply_channel("x:rpc", "r"))


def test_request_sync_rejects_a_malformed_reply() -> None:
    bus = EventBus()
    bus.on("x:rpc", lambda d: bus.emit(reply_channel("x:rpc", d["requestId"]), {"data": "yes"}))
    assert request_sync(bus, "x:rpc", {}, timeout=1)["error"] == "malformed_reply"


def test_async_request_with_reply_from_another_thread() -> None:
    bus = EventBus()
    _echo_server(bus, "x:rpc", threaded=True)

    async def go() -> tuple[dict, dict]:
        answered = await request(bus, "x:rpc", {"requestId": "abc"}, timeout=5)
        silent = EventBus()
        silent.on("x:rpc", lambda data: None)
        timed_out = await request(silent, "x:rpc", {"requestId": "abc"}, timeout=0.05)
        return answered, timed_out

    answered, timed_out = asyncio.run(go())
    assert answered["success"] is True and answered["data"]["echo"]["requestId"] == "abc"
    assert timed_out == error_reply("timeout")


def test_first_reply_wins() -> None:
    bus = EventBus()
    bus.on("x:rpc", lambda d: bus.emit(reply_channel("x:rpc", d["requestId"]), ok_reply({"n": 1})))
    bus.on("x:rpc", lambda d: bus.emit(reply_channel("x:rpc", d["requestId"]), error_reply("n")))
    assert request_sync(bus, "x:rpc", {}, timeout=1)["data"] == {"n": 1}
