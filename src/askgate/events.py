"""The permission event channel: an in-process bus, channel names and payload types.

Wire contract (seed 000, pi's `permissions:*` channels): payloads travel on the bus as
plain JSON-ready dicts with camelCase keys, so a subscriber that knows nothing about
Python sees exactly what a pi extension would. The msgspec Structs below are the typed
view of the same payloads (and the source of the published JSON Schema).

This module is imported by the gate on every tool call, so it imports msgspec and the
standard library only, and nothing else of askgate's: it reads an outcome through the
`DecidedOutcome` protocol below (`askgate.outcome.Outcome` is one). The RPC handlers live
in `askgate.events_rpc`, which the gate attaches on demand.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

__all__ = [
    "CHANNEL_DECISION",
    "CHANNEL_READY",
    "CHANNEL_RPC_CHECK",
    "CHANNEL_RPC_PING",
    "CHANNEL_RPC_PROMPT",
    "MAX_EVENT_BYTES",
    "MAX_EVENT_VALUE_BYTES",
    "PERMISSIONS_PROTOCOL_VERSION",
    "SESSION_ORIGIN",
    "DecidedOutcome",
    "EventBus",
    "Handler",
    "PermissionDecisionEvent",
    "PermissionsCheckReplyData",
    "PermissionsCheckRequest",
    "PermissionsPingReplyData",
    "PermissionsPingRequest",
    "PermissionsPromptReplyData",
    "PermissionsPromptRequest",
    "PermissionsReadyEvent",
    "RpcErrorReply",
    "RpcSuccessReply",
    "bound_event_value",
    "emit_decision",
    "emit_ready",
    "error_reply",
    "events_json_schema",
    "ok_reply",
    "reply_channel",
    "request",
    "request_sync",
    "to_json",
]

logger = logging.getLogger("askgate.events")

# Bumped on a breaking change of the envelope or of a channel's payload.
PERMISSIONS_PROTOCOL_VERSION = 1

CHANNEL_READY = "permissions:ready"
CHANNEL_DECISION = "permissions:decision"
CHANNEL_RPC_CHECK = "permissions:rpc:check"
CHANNEL_RPC_PROMPT = "permissions:rpc:prompt"
CHANNEL_RPC_PING = "permissions:rpc:ping"

# `origin` of a decision or check answered by a session approval ("Yes, for this session").
SESSION_ORIGIN = "session"

# Error codes of RPC replies. A code may be followed by ": <detail>".
ERROR_NO_UI = "no_ui"
ERROR_INVALID_REQUEST = "invalid_request"
ERROR_UNKNOWN_SURFACE = "unknown_surface"
ERROR_INTERNAL = "internal_error"
ERROR_TIMED_OUT = "timed_out"  # the receiving side asked a human; nobody answered in time
ERROR_TIMEOUT = "timeout"  # the caller's helper saw no reply at all
ERROR_NO_HANDLER = "no_handler"  # nobody listens on the request channel
ERROR_SHUTDOWN = "shutdown"  # the receiving gate closed before handling the request
ERROR_MALFORMED_REPLY = "malformed_reply"

Handler = Callable[[Any], None]


def reply_channel(channel: str, request_id: str) -> str:
    """Where the reply to `request_id` sent on `channel` is emitted."""
    return f"{channel}:reply:{request_id}"


# --------------------------------------------------------------------------- bus


class EventBus:
    """Synchronous, thread-safe publish/subscribe.

    `emit` calls every handler subscribed to the channel, in subscription order, in the
    emitting thread. A handler that raises is logged and skipped: it never stops the
    other handlers or the emitter (the gate emits on every tool call).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Token objects (not the handlers) identify subscriptions, so the same function
        # subscribed twice is two subscriptions, each removed by its own unsubscribe.
        self._handlers: dict[str, list[tuple[object, Handler]]] = {}

    def on(self, channel: str, handler: Handler) -> Callable[[], None]:
        """Subscribe; returns an idempotent unsubscribe function."""
        token = object()
        with self._lock:
            self._handlers.setdefault(channel, []).append((token, handler))

        def unsubscribe() -> None:
            self._remove(channel, token)

        return unsubscribe

    def _remove(self, channel: str, token: object) -> None:
        with self._lock:
            entries = self._handlers.get(channel)
            if not entries:
                return
            remaining = [entry for entry in entries if entry[0] is not token]
            if remaining:
                self._handlers[channel] = remaining
            else:
                del self._handlers[channel]

    def emit(self, channel: str, data: Any) -> None:
        with self._lock:
            # Snapshot: handlers may subscribe, unsubscribe or emit while we iterate.
            handlers = [handler for _, handler in self._handlers.get(channel, ())]
        for handler in handlers:
            try:
                handler(data)
            except Exception:
                logger.exception("event handler for %r failed; other handlers still run", channel)

    def has_listeners(self, channel: str) -> bool:
        with self._lock:
            return bool(self._handlers.get(channel))

    def listener_count(self, channel: str) -> int:
        with self._lock:
            return len(self._handlers.get(channel, ()))


# ------------------------------------------------------------------ payload types


class _Payload(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """Base of every wire payload: camelCase keys, optional fields left out when unset.

    Fields typed `X | None` without a default are always present (null when unknown).
    Unknown keys are ignored when decoding, so newer senders stay readable.
    """


Result = Literal["allow", "deny"]
CheckResult = Literal["allow", "deny", "ask"]
DecisionResolution = Literal[
    "policy_allow",
    "policy_deny",
    "session_approved",
    "infrastructure_auto_allowed",
    "user_approved",
    "user_approved_for_session",
    "user_denied",
    "auto_approved",
    "confirmation_unavailable",
    "timed_out",
]
HumanAnswer = Literal["approved", "approved_for_session", "denied", "denied_with_reason"]


class PermissionsReadyEvent(_Payload, frozen=True):
    """`permissions:ready`: a gate answering the RPC channels is attached to this bus."""

    protocol_version: int  # required (a default would be left out by omit_defaults)


class PermissionDecisionEvent(_Payload, frozen=True):
    """`permissions:decision`: emitted once for every outcome of the gate."""

    surface: str
    value: str
    result: Result
    resolution: DecisionResolution
    origin: str | None  # scope of the deciding rule ("user", "project", "session" …)
    agent_name: str | None
    matched_pattern: str | None
    request_id: str | None
    # Present (true) only when `value` was cut to MAX_EVENT_VALUE_BYTES.
    value_truncated: bool = False


class PermissionsCheckRequest(_Payload, frozen=True):
    """`permissions:rpc:check`: evaluate the policy (session approvals included), no prompt."""

    request_id: str
    surface: str
    value: str | None = None
    agent_name: str | None = None


class PermissionsCheckReplyData(_Payload, frozen=True):
    result: CheckResult
    matched_pattern: str | None
    origin: str | None


class PermissionsPromptRequest(_Payload, frozen=True):
    """`permissions:rpc:prompt`: ask the human behind the receiving gate."""

    request_id: str
    surface: str
    value: str
    message: str
    agent_name: str | None = None
    session_label: str | None = None
    # askgate addition: the pattern "Yes, for this session" would approve (display only;
    # the requesting side records it). Without it, `sessionLabel` is shown instead.
    session_pattern: str | None = None


class PermissionsPromptReplyData(_Payload, frozen=True):
    approved: bool
    state: HumanAnswer
    denial_reason: str | None = None


class PermissionsPingRequest(_Payload, frozen=True):
    """`permissions:rpc:ping`: is a gate listening, and which protocol does it speak?"""

    request_id: str


class PermissionsPingReplyData(_Payload, frozen=True):
    protocol_version: int


T = TypeVar("T")


class RpcSuccessReply(_Payload, Generic[T], frozen=True):
    success: Literal[True]
    protocol_version: int
    data: T | None = None


class RpcErrorReply(_Payload, frozen=True):
    success: Literal[False]
    protocol_version: int
    error: str


_JSON_ENCODER = msgspec.json.Encoder()


def to_json(payload: Any) -> bytes:
    """One payload (a Struct above, or the dict seen on the bus) as compact JSON bytes."""
    return _JSON_ENCODER.encode(payload)


def _wire(payload: msgspec.Struct) -> dict[str, Any]:
    wire: dict[str, Any] = msgspec.to_builtins(payload)  # a Struct becomes a dict
    return wire


def ok_reply(data: msgspec.Struct | dict[str, Any] | None = None) -> dict[str, Any]:
    envelope: dict[str, Any] = {"success": True, "protocolVersion": PERMISSIONS_PROTOCOL_VERSION}
    if data is not None:
        envelope["data"] = _wire(data) if isinstance(data, msgspec.Struct) else data
    return envelope


def error_reply(error: str) -> dict[str, Any]:
    return {"success": False, "protocolVersion": PERMISSIONS_PROTOCOL_VERSION, "error": error}


# ------------------------------------------------------------------ emit helpers


def emit_ready(bus: EventBus) -> None:
    bus.emit(
        CHANNEL_READY, _wire(PermissionsReadyEvent(protocol_version=PERMISSIONS_PROTOCOL_VERSION))
    )


# A decision event is at most MAX_EVENT_BYTES of compact JSON, whatever its fields hold
# (seed 000 assumes a payload under 500 bytes). `value` gets what the other fields leave,
# at most MAX_EVENT_VALUE_BYTES; the other free-text fields (agent name, matched pattern,
# request id, origin) are cut to MAX_EVENT_FIELD_BYTES, ending in "…", only when they
# would leave the value less than MIN_EVENT_VALUE_BYTES.
MAX_EVENT_BYTES = 499
MAX_EVENT_VALUE_BYTES = 300
MAX_EVENT_FIELD_BYTES = 64
MIN_EVENT_VALUE_BYTES = 64
ELLIPSIS = "…"


def _json_size(text: str) -> int:
    """Bytes of `text` as a JSON string body (without the quotes)."""
    try:
        return len(_JSON_ENCODER.encode(text)) - 2
    except UnicodeEncodeError:
        # Lone surrogates: a subscriber would see `\udcxx`. ASCII-escaping everything
        # over-counts other non-ASCII characters, which only cuts a little shorter.
        import json

        return len(json.dumps(text)) - 2


def bound_event_value(value: str, limit: int = MAX_EVENT_VALUE_BYTES) -> tuple[str, bool]:
    """`value` cut between characters so its JSON text is at most `limit` bytes, and
    whether it was cut."""
    # More characters than bytes allowed is over the limit without measuring (a 1 MB
    # command is not encoded whole just to learn that).
    if len(value) <= limit and _json_size(value) <= limit:
        return value, False
    # Every character costs at least one byte, so the cut lies within the first `limit`
    # characters; the size of a prefix grows with its length: binary search.
    low, high = 0, min(len(value), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if _json_size(value[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return value[:low], True


class _RuleView(Protocol):
    @property
    def origin(self) -> object: ...

    @property
    def pattern(self) -> str: ...


class _DecisionView(Protocol):
    @property
    def rule(self) -> _RuleView | None: ...

    @property
    def surface(self) -> object: ...

    @property
    def value(self) -> str: ...


class DecidedOutcome(Protocol):
    """What a decision event reads of an outcome (`askgate.outcome.Outcome` is one)."""

    @property
    def decision(self) -> _DecisionView: ...

    @property
    def action(self) -> object: ...

    @property
    def resolution(self) -> object: ...

    @property
    def session_pattern(self) -> str | None: ...

    @property
    def request_id(self) -> str: ...


def decision_event(outcome: DecidedOutcome, *, agent: str | None) -> PermissionDecisionEvent:
    """The broadcast view of one outcome."""
    rule = outcome.decision.rule
    origin = str(rule.origin) if rule is not None else None
    pattern = rule.pattern if rule is not None else None
    if str(outcome.resolution) == "session_approved" and outcome.session_pattern:
        # A session approval decided, not the ask rule that it answered.
        origin, pattern = SESSION_ORIGIN, outcome.session_pattern
    fields: dict[str, Any] = {
        "surface": str(outcome.decision.surface),
        # An outcome is allow or deny; anything else is reported as deny (fail closed).
        "result": "allow" if str(outcome.action) == "allow" else "deny",
        # A Resolution value is one of the DecisionResolution literals (test_events).
        "resolution": str(outcome.resolution),
        "origin": origin,
        "agent_name": agent,
        "matched_pattern": pattern,
        "request_id": outcome.request_id,
    }
    room = _value_room(fields)
    if room < MIN_EVENT_VALUE_BYTES:
        for name in ("origin", "agent_name", "matched_pattern", "request_id", "surface"):
            fields[name] = _cut_field(fields[name])
        room = _value_room(fields)
    value, cut = bound_event_value(outcome.decision.value, min(MAX_EVENT_VALUE_BYTES, room))
    return PermissionDecisionEvent(value=value, value_truncated=cut, **fields)


def _value_room(fields: dict[str, Any]) -> int:
    """Bytes left for `value` in an event of these other fields (measured with an empty
    value and the truncation flag set, the largest form the event can take)."""
    probe = PermissionDecisionEvent(value="", value_truncated=True, **fields)
    try:
        size = len(_JSON_ENCODER.encode(probe))
    except UnicodeEncodeError:  # lone surrogates: measure the escaped form (an upper bound)
        import json

        size = len(json.dumps(msgspec.to_builtins(probe), separators=(",", ":")))
    return MAX_EVENT_BYTES - size


def _cut_field(text: str | None) -> str | None:
    if text is None:
        return None
    cut, was_cut = bound_event_value(text, MAX_EVENT_FIELD_BYTES - len(ELLIPSIS.encode()))
    return cut + ELLIPSIS if was_cut else cut


def emit_decision(bus: EventBus, outcome: DecidedOutcome, *, agent: str | None) -> None:
    """Broadcast `permissions:decision` for one outcome. Never raises: a broken
    outcome or subscriber must not change what the gate already decided."""
    try:
        payload = _wire(decision_event(outcome, agent=agent))
    except Exception:
        logger.exception("could not build the decision event for request %r", outcome.request_id)
        return
    bus.emit(CHANNEL_DECISION, payload)


# ------------------------------------------------------------------ caller helpers


# A receiving gate drops requests whose requestId it cannot reply to (events_rpc).
MAX_REQUEST_ID = 512
# Serialises "is this requestId already awaiting a reply?" with subscribing to it.
_SUBSCRIBE_LOCK = threading.Lock()


def _prepare(payload: dict[str, Any] | msgspec.Struct) -> dict[str, Any]:
    body = _wire(payload) if isinstance(payload, msgspec.Struct) else dict(payload)
    request_id = body.get("requestId")
    if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_REQUEST_ID:
        # Unanswerable as given: the caller would wait out its whole timeout.
        body["requestId"] = os.urandom(16).hex()
    return body


def _subscribe_reply(
    bus: EventBus, channel: str, body: dict[str, Any], on_reply: Handler
) -> Callable[[], None]:
    """Subscribe to this request's reply channel. A requestId already awaiting a reply
    is replaced by a fresh one: one reply must never answer two requests (a human's
    "yes" to one prompt approving another)."""
    with _SUBSCRIBE_LOCK:
        if bus.has_listeners(reply_channel(channel, body["requestId"])):
            body["requestId"] = f"{body['requestId'][:400]}.{os.urandom(8).hex()}"
        return bus.on(reply_channel(channel, body["requestId"]), on_reply)


def _checked_envelope(data: Any) -> dict[str, Any]:
    """A reply as received, or an error envelope when it is not a well-formed envelope."""
    if isinstance(data, msgspec.Struct):
        data = _wire(data)
    if not isinstance(data, dict) or not isinstance(data.get("success"), bool):
        return error_reply(ERROR_MALFORMED_REPLY)
    if data["success"] is False and not isinstance(data.get("error"), str):
        return error_reply(ERROR_MALFORMED_REPLY)
    return data


def request_sync(
    bus: EventBus, channel: str, payload: dict[str, Any] | msgspec.Struct, *, timeout: float
) -> dict[str, Any]:
    """Send one RPC request and block for its reply envelope.

    Never raises for a missing reply: no listener gives `error: "no_handler"`, no reply
    within `timeout` seconds gives `error: "timeout"`. Callers treat every
    `success: false` as a denial. `requestId` is generated when absent.
    """
    body = _prepare(payload)
    if not bus.has_listeners(channel):
        return error_reply(ERROR_NO_HANDLER)
    answered = threading.Event()
    replies: list[Any] = []

    def on_reply(data: Any) -> None:
        # First reply wins; later ones (a second gate on the same bus) are ignored.
        if not answered.is_set():
            replies.append(data)
            answered.set()

    unsubscribe = _subscribe_reply(bus, channel, body, on_reply)
    try:
        bus.emit(channel, body)
        if not answered.wait(timeout):
            return error_reply(ERROR_TIMEOUT)
    finally:
        unsubscribe()
    return _checked_envelope(replies[0])


async def request(
    bus: EventBus, channel: str, payload: dict[str, Any] | msgspec.Struct, *, timeout: float
) -> dict[str, Any]:
    """`request_sync` for asyncio callers: same envelopes, never an implicit approval.

    Replies may arrive from any thread (the prompt handler answers from a worker).
    """
    import asyncio  # here, not at module level: the hook imports this module per call

    body = _prepare(payload)
    if not bus.has_listeners(channel):
        return error_reply(ERROR_NO_HANDLER)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(data: Any) -> None:
        if not future.done():
            future.set_result(data)

    def on_reply(data: Any) -> None:
        loop.call_soon_threadsafe(settle, data)

    unsubscribe = _subscribe_reply(bus, channel, body, on_reply)
    try:
        bus.emit(channel, body)
        try:
            data = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return error_reply(ERROR_TIMEOUT)
    finally:
        unsubscribe()
    return _checked_envelope(data)


# ------------------------------------------------------------------ schema


def events_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of every channel's payloads, for `askgate schema events`."""
    channels: dict[str, dict[str, Any]] = {
        CHANNEL_READY: {"event": PermissionsReadyEvent},
        CHANNEL_DECISION: {"event": PermissionDecisionEvent},
        CHANNEL_RPC_CHECK: {
            "request": PermissionsCheckRequest,
            "replySuccess": RpcSuccessReply[PermissionsCheckReplyData],
            "replyError": RpcErrorReply,
        },
        CHANNEL_RPC_PROMPT: {
            "request": PermissionsPromptRequest,
            "replySuccess": RpcSuccessReply[PermissionsPromptReplyData],
            "replyError": RpcErrorReply,
        },
        CHANNEL_RPC_PING: {
            "request": PermissionsPingRequest,
            "replySuccess": RpcSuccessReply[PermissionsPingReplyData],
            "replyError": RpcErrorReply,
        },
    }
    flat = [(name, role, kind) for name, roles in channels.items() for role, kind in roles.items()]
    schemas, components = msgspec.json.schema_components(
        [kind for _, _, kind in flat], ref_template="#/$defs/{name}"
    )
    described: dict[str, dict[str, Any]] = {}
    for (name, role, _), schema in zip(flat, schemas, strict=True):
        described.setdefault(name, {})[role] = schema
    for name in (CHANNEL_RPC_CHECK, CHANNEL_RPC_PROMPT, CHANNEL_RPC_PING):
        # Untagged union of the two envelopes (msgspec only unions tagged Structs).
        roles = described[name]
        roles["reply"] = {"anyOf": [roles.pop("replySuccess"), roles.pop("replyError")]}
        roles["replyChannel"] = reply_channel(name, "<requestId>")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "askgate permission events",
        "protocolVersion": PERMISSIONS_PROTOCOL_VERSION,
        "channels": described,
        "$defs": components,
    }
