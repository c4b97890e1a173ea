"""RPC handlers a gate serves on an event bus: `rpc:check`, `rpc:prompt`, `rpc:ping`.

Each request is a dict; it is validated with msgspec, and every problem becomes an error
reply on `<channel>:reply:<requestId>` (never an exception in the emitter, never an
approval). A request without a usable `requestId` cannot be answered: it is logged and
dropped, and the caller's timeout turns it into a denial.

`rpc:prompt` is served per bus, not per gate: the gates attached to one bus share a
`_PromptDesk`, which hands each prompt to the first of them that can reach a human and
answers `no_ui` only when none can (docs/events.md).
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from askgate import pi_surfaces
from askgate.events import (
    CHANNEL_RPC_CHECK,
    CHANNEL_RPC_PING,
    CHANNEL_RPC_PROMPT,
    ERROR_INTERNAL,
    ERROR_INVALID_REQUEST,
    ERROR_NO_UI,
    ERROR_SHUTDOWN,
    ERROR_TIMED_OUT,
    ERROR_UNKNOWN_SURFACE,
    PERMISSIONS_PROTOCOL_VERSION,
    SESSION_ORIGIN,
    EventBus,
    PermissionsCheckReplyData,
    PermissionsCheckRequest,
    PermissionsPingReplyData,
    PermissionsPingRequest,
    PermissionsPromptReplyData,
    PermissionsPromptRequest,
    emit_ready,
    error_reply,
    ok_reply,
    reply_channel,
)
from askgate.policy.model import Action
from askgate.prompt import PromptReply, PromptRequest, PromptState

if TYPE_CHECKING:
    from askgate.audit import AuditLog
    from askgate.policy.model import Decision, Surface
    from askgate.prompt import Prompter


class ServedGate(Protocol):
    """What the RPC handlers use of a gate (`askgate.gate.Gate` is one). A protocol, not
    an import: the gate attaches these handlers, so they cannot import the gate back."""

    @property
    def prompter(self) -> Prompter: ...

    @property
    def session(self) -> str | None: ...

    @property
    def audit(self) -> AuditLog | None: ...

    def check_session(
        self, surface: str, value: str | None, *, agent: str | None = None, cwd: str | None = None
    ) -> tuple[Decision, str | None]: ...

    def session_offer(
        self, surface: Surface, value: str, *, agent: str | None = None
    ) -> tuple[str, str] | None: ...


logger = logging.getLogger("askgate.events")

_HUMAN_ANSWERS = frozenset(
    {
        PromptState.APPROVED,
        PromptState.APPROVED_FOR_SESSION,
        PromptState.DENIED,
        PromptState.DENIED_WITH_REASON,
    }
)
_MAX_REQUEST_ID = 512
_STRICTNESS = {Action.ALLOW: 0, Action.ASK: 1, Action.DENY: 2}


def _request_id(data: Any) -> str | None:
    if isinstance(data, msgspec.Struct):
        data = msgspec.to_builtins(data)
    if not isinstance(data, dict):
        return None
    request_id = data.get("requestId")
    if isinstance(request_id, str) and 0 < len(request_id) <= _MAX_REQUEST_ID:
        return request_id
    return None


def _unanswerable_why(data: Any) -> str:
    """Why a request has no usable requestId, for the log line that drops it."""
    if isinstance(data, msgspec.Struct):
        data = msgspec.to_builtins(data)
    request_id = data.get("requestId") if isinstance(data, dict) else None
    if isinstance(request_id, str) and not request_id:
        return "with an empty requestId (nowhere to reply)"
    if isinstance(request_id, str):
        return (
            f"whose requestId is {len(request_id)} characters, longer than the {_MAX_REQUEST_ID}"
            " a reply channel may carry (nowhere to reply)"
        )
    return "without a string requestId (nowhere to reply)"


def _as_dict(data: Any) -> dict[str, Any]:
    return msgspec.to_builtins(data) if isinstance(data, msgspec.Struct) else data


def prompt_reply_envelope(reply: PromptReply) -> dict[str, Any]:
    """A prompter's reply as the `rpc:prompt` reply envelope.

    Only a human's answer travels as data; unavailable and timed out are errors, so no
    caller can mistake them for a user's denial.
    """
    if reply.state in _HUMAN_ANSWERS:
        return ok_reply(
            PermissionsPromptReplyData(
                approved=reply.approved,
                # Inside _HUMAN_ANSWERS: the value is one of the HumanAnswer literals.
                state=reply.state.value,  # type: ignore[arg-type]
                denial_reason=reply.denial_reason,
            )
        )
    if reply.state is PromptState.TIMED_OUT:
        return error_reply(ERROR_TIMED_OUT)
    return error_reply(ERROR_NO_UI)


class _SerialPromptWorker:
    """Shows one prompt at a time on a daemon thread (a terminal is one dialog at a
    time), so `emit` on the prompt channel returns at once. On close, prompts still
    queued are answered `shutdown` instead of being left to time out."""

    def __init__(
        self,
        run: Callable[[str, PromptRequest], None],
        cancel: Callable[[str, PromptRequest], None],
    ):
        self._run = run
        self._cancel = cancel
        self._queue: queue.SimpleQueue[tuple[str, PromptRequest] | None] = queue.SimpleQueue()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, request_id: str, request: PromptRequest) -> bool:
        with self._lock:
            if self._closed.is_set():
                return False
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="askgate-rpc-prompt", daemon=True
                )
                self._thread.start()
            self._queue.put((request_id, request))
            return True

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            request_id, request = item
            if self._closed.is_set():
                self._cancel(request_id, request)
            else:
                self._run(request_id, request)

    def close(self) -> None:
        with self._lock:
            self._closed.set()
            self._queue.put(None)


class _GateRpc:
    def __init__(self, bus: EventBus, gate: ServedGate, prompt_timeout: float | None):
        self.bus = bus
        self.gate = gate
        self.prompt_timeout = prompt_timeout
        self.worker = _SerialPromptWorker(self._show_prompt, self._cancel_prompt)

    def _reply(self, channel: str, request_id: str, envelope: dict[str, Any]) -> None:
        self.bus.emit(reply_channel(channel, request_id), envelope)

    def _answerable(self, channel: str, data: Any) -> str | None:
        request_id = _request_id(data)
        if request_id is None:
            logger.warning("dropped a %s request %s", channel, _unanswerable_why(data))
        return request_id

    # -- ping

    def on_ping(self, data: Any) -> None:
        request_id = self._answerable(CHANNEL_RPC_PING, data)
        if request_id is None:
            return
        try:
            msgspec.convert(_as_dict(data), PermissionsPingRequest)
        except msgspec.ValidationError as exc:
            self._reply(
                CHANNEL_RPC_PING, request_id, error_reply(f"{ERROR_INVALID_REQUEST}: {exc}")
            )
            return
        self._reply(
            CHANNEL_RPC_PING,
            request_id,
            ok_reply(PermissionsPingReplyData(protocol_version=PERMISSIONS_PROTOCOL_VERSION)),
        )

    # -- check

    def on_check(self, data: Any) -> None:
        request_id = self._answerable(CHANNEL_RPC_CHECK, data)
        if request_id is None:
            return
        self._reply(CHANNEL_RPC_CHECK, request_id, self._check(data))

    def _check(self, data: Any) -> dict[str, Any]:
        try:
            request = msgspec.convert(_as_dict(data), PermissionsCheckRequest)
        except msgspec.ValidationError as exc:
            return error_reply(f"{ERROR_INVALID_REQUEST}: {exc}")
        try:
            found = pi_surfaces.lookups(request.surface, request.value)
        except pi_surfaces.UnknownSurface as exc:
            return error_reply(f"{ERROR_UNKNOWN_SURFACE}: {exc}")
        try:
            answers = [
                self.gate.check_session(str(surface), value, agent=request.agent_name)
                for surface, value in found
            ]
        except ValueError as exc:  # a value the engine refuses (bad path text, …)
            return error_reply(f"{ERROR_INVALID_REQUEST}: {exc}")
        except Exception:
            logger.exception("rpc:check failed for surface %r", request.surface)
            return error_reply(ERROR_INTERNAL)
        # pi's `path` spans two lookups: the strictest answer stands (the first on a tie).
        decision, session_pattern = max(answers, key=lambda a: _STRICTNESS[a[0].action])
        if session_pattern is not None:
            return ok_reply(
                PermissionsCheckReplyData(
                    result="allow", matched_pattern=session_pattern, origin=SESSION_ORIGIN
                )
            )
        rule = decision.rule
        return ok_reply(
            PermissionsCheckReplyData(
                # An Action value is "allow", "deny" or "ask": the CheckResult literals.
                result=str(decision.action),  # type: ignore[arg-type]
                matched_pattern=rule.pattern if rule is not None else None,
                origin=str(rule.origin) if rule is not None else None,
            )
        )

    # -- prompt

    def can_prompt(self) -> bool:
        """Whether this gate's prompter could reach a human right now."""
        try:
            return bool(self.gate.prompter.available())
        except Exception:
            logger.exception("prompter.available() failed; this gate cannot prompt")
            return False

    def accept(self, request_id: str, request: PermissionsPromptRequest) -> None:
        """Show `request` to this gate's human (on the worker) and reply when answered."""
        pattern = request.session_pattern or request.session_label
        label = request.session_label
        if pattern is None:
            # pi always offers "Yes, for this session": derive a safe pattern from the
            # value as for the gate's own asks (none offered when no safe one exists).
            pattern, label = self._session_offer(request)
        prompt = PromptRequest(
            request_id=request.request_id,
            surface=request.surface,
            value=request.value,
            message=request.message,
            agent=request.agent_name,
            session=self.gate.session,
            session_pattern=pattern,
            session_label=label,
        )
        logger.info(
            "rpc prompt %s from agent %r for %s %r",
            request_id,
            request.agent_name,
            request.surface,
            request.value,
        )
        if not self.worker.submit(request_id, prompt):
            self._cancel_prompt(request_id, prompt)

    def _session_offer(self, request: PermissionsPromptRequest) -> tuple[str | None, str | None]:
        surface = pi_surfaces.askgate_surface(request.surface, request.value)
        if surface is None:
            return None, None
        try:
            offer = self.gate.session_offer(surface, request.value, agent=request.agent_name)
        except Exception:
            logger.exception("could not derive a session pattern for rpc prompt")
            return None, None
        return offer if offer is not None else (None, None)

    def _show_prompt(self, request_id: str, prompt: PromptRequest) -> None:
        try:
            reply = self.gate.prompter.prompt(prompt, self.prompt_timeout)
            envelope = prompt_reply_envelope(reply)
        except Exception:
            logger.exception("prompter failed on rpc prompt %s", request_id)
            envelope = error_reply(ERROR_INTERNAL)
            reply = None
        answer = reply.state.value if reply is not None else ERROR_INTERNAL
        if reply is not None and reply.state is PromptState.UNAVAILABLE:
            answer = ERROR_NO_UI
        self.record_prompt(
            request_id,
            prompt,
            answer=answer,
            approved=bool(envelope.get("success")) and reply is not None and reply.approved,
            denial_reason=reply.denial_reason if reply is not None else None,
        )
        self._reply(CHANNEL_RPC_PROMPT, request_id, envelope)

    def _cancel_prompt(self, request_id: str, prompt: PromptRequest) -> None:
        """The gate closed before showing `prompt`: say so rather than let it time out."""
        self.record_prompt(request_id, prompt, answer=ERROR_SHUTDOWN)
        self._reply(CHANNEL_RPC_PROMPT, request_id, error_reply(ERROR_SHUTDOWN))

    def record_prompt(
        self,
        request_id: str,
        prompt: PromptRequest | PermissionsPromptRequest,
        *,
        answer: str,
        approved: bool = False,
        denial_reason: str | None = None,
    ) -> None:
        """One review-log entry for an rpc prompt (source `rpc_prompt`). Never raises:
        the log must not change the answer."""
        audit = getattr(self.gate, "audit", None)
        if audit is None:
            return
        agent = prompt.agent if isinstance(prompt, PromptRequest) else prompt.agent_name
        try:
            from askgate.audit import rpc_prompt_record

            audit.write(
                rpc_prompt_record(
                    request_id=request_id,
                    surface=prompt.surface,
                    value=prompt.value,
                    answer=answer,
                    approved=approved,
                    denial_reason=denial_reason,
                    agent=agent,
                    session=self.gate.session,
                    message=prompt.message,
                )
            )
        except Exception:
            logger.exception("could not write the review log entry of rpc prompt %s", request_id)


class _PromptDesk:
    """The one `rpc:prompt` subscriber of a bus, shared by every gate attached to it.

    The seed's guard is that only an instance that can show a prompt answers. With one
    subscriber per gate, a gate without a human answered `no_ui` from inside `emit`
    before a gate with one was even called. The desk instead asks each member, in the
    order they attached, whether its prompter can reach a human; the first that can
    takes the prompt, and `no_ui` is sent only when none can. Exactly one reply per
    request, decided synchronously inside `emit` (no waiting, no race).
    """

    def __init__(self) -> None:
        self.members: list[_GateRpc] = []
        self.unsubscribe: Callable[[], None] | None = None

    def on_prompt(self, data: Any) -> None:
        with _DESKS_LOCK:
            members = list(self.members)
        if not members:
            return
        first = members[0]
        request_id = first._answerable(CHANNEL_RPC_PROMPT, data)
        if request_id is None:
            return
        try:
            request = msgspec.convert(_as_dict(data), PermissionsPromptRequest)
        except msgspec.ValidationError as exc:
            first._reply(
                CHANNEL_RPC_PROMPT, request_id, error_reply(f"{ERROR_INVALID_REQUEST}: {exc}")
            )
            return
        for member in members:
            if member.can_prompt():
                member.accept(request_id, request)
                return
        # Logged once, by the first gate that keeps a review log.
        recorder = next((m for m in members if getattr(m.gate, "audit", None) is not None), first)
        recorder.record_prompt(request_id, request, answer=ERROR_NO_UI)
        first._reply(CHANNEL_RPC_PROMPT, request_id, error_reply(ERROR_NO_UI))


# The desk of each bus with gates attached. Weak both ways: the bus keeps its desk
# alive through its subscription, and a dropped bus takes its desk with it.
_DESKS: weakref.WeakKeyDictionary[EventBus, weakref.ref[_PromptDesk]] = weakref.WeakKeyDictionary()
_DESKS_LOCK = threading.Lock()


def _join_desk(bus: EventBus, rpc: _GateRpc) -> Callable[[], None]:
    with _DESKS_LOCK:
        found = _DESKS.get(bus)
        desk = found() if found is not None else None
        if desk is None:
            desk = _PromptDesk()
            desk.unsubscribe = bus.on(CHANNEL_RPC_PROMPT, desk.on_prompt)
            _DESKS[bus] = weakref.ref(desk)
        desk.members.append(rpc)

    def leave() -> None:
        with _DESKS_LOCK:
            if rpc in desk.members:
                desk.members.remove(rpc)
            if desk.members:
                return
            if _DESKS.get(bus) is not None and _DESKS[bus]() is desk:
                del _DESKS[bus]
            unsubscribe, desk.unsubscribe = desk.unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()

    return leave


def attach_gate(bus: EventBus, gate: ServedGate) -> Callable[[], None]:
    """Register the RPC handlers for `gate`, emit `permissions:ready`, return detach.

    A gate whose prompter itself forwards over this bus (an in-process child, see
    `askgate.prompters.bus.BusPrompter`) serves nothing and announces nothing: it would
    otherwise answer its own forwarded prompts, or race its parent with `no_ui`.
    """
    if getattr(gate.prompter, "forwards_to_bus", None) is bus:
        return lambda: None
    rpc = _GateRpc(bus, gate, getattr(gate, "prompt_timeout", None))
    unsubscribers = [
        bus.on(CHANNEL_RPC_CHECK, rpc.on_check),
        _join_desk(bus, rpc),
        bus.on(CHANNEL_RPC_PING, rpc.on_ping),
    ]
    emit_ready(bus)
    detached = threading.Event()

    def detach() -> None:
        if detached.is_set():
            return
        detached.set()
        for unsubscribe in unsubscribers:
            unsubscribe()
        rpc.worker.close()

    return detach
