"""The file-forwarding protocol as a sans-IO core: state in, actions out, no I/O.

On-disk layout and JSON field names are pi's (reference §1.9), so a Python parent can
serve a pi child and the other way round::

    <root>/sessions/<encodeURIComponent(target)>/requests/<id>.json   written by the child
    <root>/sessions/<encodeURIComponent(target)>/responses/<id>.json  written by the parent
    <root>/serving/<encodeURIComponent(session)>.json                 parent's heartbeat

The shells in `server.py` and `client.py` do the reading, writing, watching and
waiting; everything they decide comes from here and is testable without a disk.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import quote

import msgspec

from askgate.prompt import PromptReply, PromptRequest, PromptState

POLL_INTERVAL = 0.25  # seconds: pi's PERMISSION_FORWARDING_POLL_INTERVAL_MS
DEFAULT_TIMEOUT = 600.0  # seconds: pi's PERMISSION_FORWARDING_TIMEOUT_MS
SERVING_GRACE = 2.0  # seconds a child waits for a serving heartbeat before giving up
HEARTBEAT_INTERVAL = 2.0  # seconds between heartbeat refreshes
HEARTBEAT_MISSED_REFRESHES = 3  # a heartbeat older than this many intervals is stale
MAX_REQUEST_BYTES = 256 * 1024
MAX_RESPONSE_BYTES = 64 * 1024
MAX_HEARTBEAT_BYTES = 4 * 1024
# A request file that does not parse gets this long to become whole before it is
# answered as malformed (pi writes atomically; a non-atomic writer may be mid-write).
MALFORMED_GRACE_MS = 1000

# What the pi permission extension accepts as a response state (20.7.3's
# isPermissionDecisionState). It rejects anything else as invalid and reports it to its
# model as a user denial, so askgate never writes any other state.
PI_STATES = frozenset(
    {
        "approved",
        "approved_for_session",
        "approved_for_serving_session",
        "denied",
        "denied_with_reason",
    }
)
# Outcomes pi has no state for: written as `denied` with a reason saying what happened,
# plus `askgateState`, which askgate children read to recover the real outcome.
_NOT_ANSWERED = frozenset({PromptState.UNAVAILABLE, PromptState.TIMED_OUT})

_HUMAN_ANSWERS = frozenset(
    {
        PromptState.APPROVED,
        PromptState.APPROVED_FOR_SESSION,
        PromptState.DENIED,
        PromptState.DENIED_WITH_REASON,
    }
)
# pi's request ids are "<ms>-<base36>-<pid>"; anything path-like is refused.
_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


class InvalidSessionId(ValueError):
    pass


# ------------------------------------------------------------------ layout


def quote_session_id(session_id: str) -> str:
    """encodeURIComponent(session_id), refusing ids that could escape the directory."""
    if not session_id or session_id in (".", ".."):
        raise InvalidSessionId(f"unusable session id {session_id!r}")
    try:
        return quote(session_id, safe="-_.!~*'()", encoding="utf-8", errors="strict")
    except UnicodeEncodeError as exc:
        raise InvalidSessionId(f"unusable session id {session_id!r}") from exc


def is_valid_request_id(request_id: str) -> bool:
    return _REQUEST_ID.fullmatch(request_id) is not None


def new_request_id(now_ms: int, pid: int, token: str | None = None) -> str:
    """pi's shape: `<Date.now()>-<8 base36 chars>-<pid>`."""
    if token is None:
        token = "".join(secrets.choice(_BASE36) for _ in range(8))
    return f"{now_ms}-{token}-{pid}"


class Layout:
    """Where every file of the protocol lives under one forwarding root."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def serving_dir(self) -> Path:
        return self.root / "serving"

    def session_dir(self, session_id: str) -> Path:
        return self.sessions_dir / quote_session_id(session_id)

    def requests_dir(self, session_id: str) -> Path:
        return self.session_dir(session_id) / "requests"

    def responses_dir(self, session_id: str) -> Path:
        return self.session_dir(session_id) / "responses"

    def request_path(self, session_id: str, request_id: str) -> Path:
        return self.requests_dir(session_id) / f"{request_id}.json"

    def response_path(self, session_id: str, request_id: str) -> Path:
        return self.responses_dir(session_id) / f"{request_id}.json"

    def heartbeat_path(self, session_id: str) -> Path:
        return self.serving_dir / f"{quote_session_id(session_id)}.json"


# ------------------------------------------------------------------ wire types


class _Wire(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    pass


_W = TypeVar("_W", bound=_Wire)


class SessionApproval(_Wire, frozen=True):
    """What "Yes, for this session" would record on the child (pi ko's field)."""

    surface: str
    patterns: tuple[str, ...] = ()


class ForwardedRequest(_Wire, frozen=True):
    id: str
    created_at: int | float
    requester_session_id: str
    target_session_id: str
    requester_agent_name: str
    message: str
    # Optional, as in later pi versions; older readers ignore them.
    surface: str | None = None
    value: str | None = None
    session_approval: SessionApproval | None = None


class ForwardedResponse(_Wire, frozen=True):
    approved: bool
    # One of pi's states (PI_STATES). Older askgate parents wrote "unavailable" /
    # "timed_out" here; askgate children still read those.
    state: str
    responder_session_id: str
    responded_at: int | float | None = None
    denial_reason: str | None = None
    # askgate-only: "unavailable" or "timed_out" when nobody answered (state is then
    # "denied"; pi ignores the field).
    askgate_state: str | None = None


class Heartbeat(_Wire, frozen=True):
    session_id: str
    pid: int
    host: str
    refreshed_at: int
    interval_ms: int
    # Written when the server stops: the session published heartbeats and no longer
    # serves, so its children fail fast instead of taking it for a parent without
    # heartbeat support (a real pi parent) and waiting out their whole budget.
    stopped: bool = False


def encode(payload: _Wire) -> bytes:
    return msgspec.json.encode(payload) + b"\n"


def _decode(data: bytes, kind: type[_W]) -> _W:
    try:
        return msgspec.json.decode(data, type=kind)
    except RecursionError:
        # msgspec recurses into (even unknown) nested values: a file of 100,000 "["
        # is malformed input like any other, not an internal error.
        raise msgspec.DecodeError("JSON nested too deeply") from None


def decode_request(data: bytes) -> ForwardedRequest:
    """Raises msgspec.DecodeError (a ValidationError is one) on anything malformed."""
    return _decode(data, ForwardedRequest)


def decode_heartbeat(data: bytes) -> Heartbeat | None:
    try:
        return _decode(data, Heartbeat)
    except msgspec.DecodeError:
        return None


def heartbeat_is_fresh(heartbeat: Heartbeat, now_ms: int) -> bool:
    """Refreshed within the last few intervals (interval clamped: the file is untrusted)."""
    if heartbeat.stopped:
        return False
    interval = min(max(heartbeat.interval_ms, 100), 60_000)
    window = interval * HEARTBEAT_MISSED_REFRESHES
    return -window <= now_ms - heartbeat.refreshed_at <= window


# ------------------------------------------------------------------ answers


def prompt_for_request(request: ForwardedRequest) -> PromptRequest:
    """What the parent's human sees (pi's wording for subagent prompts)."""
    approval = request.session_approval
    return PromptRequest(
        request_id=request.id,
        surface=request.surface or "forwarded",
        value=request.value if request.value is not None else "",
        message=(
            f"Subagent '{request.requester_agent_name}' requested permission.\n"
            f"Session ID: {request.requester_session_id}\n\n{request.message}"
        ),
        agent=request.requester_agent_name,
        session=request.target_session_id,
        # Offer "for this session" only when the child said what it would record.
        session_pattern=", ".join(approval.patterns) if approval and approval.patterns else None,
    )


def not_answered_reason(reply: PromptReply, timeout: float | None = None) -> str:
    """What a child's model is told when nobody answered (pi shows it as the reason)."""
    if reply.state is PromptState.TIMED_OUT:
        budget = DEFAULT_TIMEOUT if timeout is None else timeout
        return f"nobody answered within {budget:g} s"
    detail = reply.denial_reason or reply.detail
    return f"no human could be asked ({detail})" if detail else "no human could be asked"


def response_for_reply(
    reply: PromptReply, *, responder: str, now_ms: int, timeout: float | None = None
) -> ForwardedResponse:
    """The response file for `reply`, in states a pi child accepts: an unanswered ask is
    `denied` with a reason saying what happened (and `askgateState` for askgate
    children), never pi-invalid "timed_out" / "unavailable"."""
    if reply.state in _NOT_ANSWERED:
        return ForwardedResponse(
            approved=False,
            state=PromptState.DENIED.value,
            responder_session_id=responder,
            responded_at=now_ms,
            denial_reason=not_answered_reason(reply, timeout),
            askgate_state=reply.state.value,
        )
    return ForwardedResponse(
        approved=reply.approved,
        state=reply.state.value,
        responder_session_id=responder,
        responded_at=now_ms,
        denial_reason=reply.denial_reason,
    )


def reply_from_response(data: bytes, *, expected_responder: str) -> PromptReply:
    """A response file's bytes as the child's answer; anything odd fails closed as
    unavailable (not a user's denial, never an approval)."""

    def unusable(why: str) -> PromptReply:
        return PromptReply(state=PromptState.UNAVAILABLE, detail=f"unusable response: {why}")

    try:
        response = _decode(data, ForwardedResponse)
    except msgspec.DecodeError as exc:
        return unusable(str(exc))
    if response.responder_session_id != expected_responder:
        return unusable(f"answered by session {response.responder_session_id!r}")
    wire_state = response.state
    if wire_state == "approved_for_serving_session":
        # pi: the parent's human granted it to the whole serving session, this child
        # included; here that is an approval for this session.
        wire_state = PromptState.APPROVED_FOR_SESSION.value
    try:
        state = PromptState(wire_state)
    except ValueError:
        return unusable(f"unknown state {response.state!r}")
    if state is PromptState.DENIED and not response.approved:
        recovered = _askgate_state(response.askgate_state)
        if recovered is not None:
            # An askgate parent: nobody answered. Never a user's denial.
            return PromptReply(state=recovered, detail=response.denial_reason)
    reply = PromptReply(
        state=state,
        denial_reason=response.denial_reason if state in _HUMAN_ANSWERS else None,
        detail=None if state in _HUMAN_ANSWERS else response.denial_reason,
        # The response does not say who decided (20.7.3 has no decidedBy): the parent's
        # human or the parent's own policy. Say what is known.
        answered_by=f"parent session {expected_responder}" if state in _APPROVALS else None,
    )
    if reply.approved != response.approved:
        return unusable(f"approved={response.approved} contradicts state {response.state!r}")
    return reply


_APPROVALS = frozenset({PromptState.APPROVED, PromptState.APPROVED_FOR_SESSION})


def _askgate_state(value: str | None) -> PromptState | None:
    if value is None:
        return None
    try:
        state = PromptState(value)
    except ValueError:
        return None
    return state if state in _NOT_ANSWERED else None


# ------------------------------------------------------------------ parent core


class FileInfo(msgspec.Struct, frozen=True):
    """One directory entry as the shell saw it (the signature detects rewrites)."""

    name: str
    size: int
    mtime_ns: int


class Show(msgspec.Struct, frozen=True):
    """Ask the human; report the answer with `ServerCore.answered`."""

    request: ForwardedRequest
    prompt: PromptRequest


class Respond(msgspec.Struct, frozen=True):
    """Write `data` to responses/<request_id>.json (only if the request file is still
    there: a child that gave up has withdrawn it), then delete the request file."""

    request_id: str
    data: bytes


class Log(msgspec.Struct, frozen=True):
    level: Literal["debug", "info", "warning"]
    event: str
    message: str


# What the core asks its shell to do (not the policy's allow/deny/ask `Action`).
Effect = Show | Respond | Log


class ServerCore:
    """The parent's side for one served session.

    Feed it directory listings (`to_read`), the bytes of the files it asked for
    (`received`), and the human's answers (`answered`); carry out the actions it
    returns. It remembers files it has chosen to leave alone so they are neither
    re-read nor re-logged until they change.
    """

    def __init__(self, session_id: str, *, prompt_timeout: float | None = None) -> None:
        quote_session_id(session_id)  # validate early
        self.session_id = session_id
        self.prompt_timeout = prompt_timeout  # named in "nobody answered within N s"
        self._in_flight: set[str] = set()
        self._left_alone: dict[str, FileInfo] = {}

    @property
    def in_flight(self) -> frozenset[str]:
        return frozenset(self._in_flight)

    def to_read(self, listing: Iterable[FileInfo]) -> list[FileInfo]:
        """Which request files need reading now (sorted by name, like pi)."""
        seen: dict[str, FileInfo] = {
            info.name: info for info in listing if info.name.endswith(".json")
        }
        # Forget files that vanished, so memory tracks the directory, not history.
        self._left_alone = {
            name: info for name, info in self._left_alone.items() if seen.get(name) == info
        }
        return [
            info
            for name, info in sorted(seen.items())
            if name[: -len(".json")] not in self._in_flight and name not in self._left_alone
        ]

    def received(
        self, info: FileInfo, data: bytes | None, *, now_ms: int, error: str | None = None
    ) -> list[Effect]:
        """The content of a request file (None with `error` when it could not be read)."""
        request_id = info.name[: -len(".json")]
        if not is_valid_request_id(request_id):
            self._left_alone[info.name] = info
            return [Log("warning", "request_bad_name", f"ignoring request file {info.name!r}")]
        if data is None:
            self._left_alone[info.name] = info  # until it changes: no retry storm
            return [Log("warning", "request_unreadable", f"cannot read {info.name}: {error}")]
        if len(data) > MAX_REQUEST_BYTES or info.size > MAX_REQUEST_BYTES:
            return self._refuse(
                request_id, f"request larger than {MAX_REQUEST_BYTES} bytes", now_ms
            )
        try:
            request = decode_request(data)
        except msgspec.DecodeError as exc:
            if now_ms - info.mtime_ns // 1_000_000 < MALFORMED_GRACE_MS:
                return []  # maybe still being written; looked at again on the next scan
            return self._refuse(request_id, f"malformed request: {exc}", now_ms)
        if request.target_session_id != self.session_id:
            self._left_alone[info.name] = info
            return [
                Log(
                    "warning",
                    "request_wrong_target",
                    f"ignoring request {request_id} for session {request.target_session_id!r}",
                )
            ]
        if request.id != request_id:
            return self._refuse(request_id, f"request names itself {request.id!r}", now_ms)
        self._in_flight.add(request_id)
        return [
            Log(
                "info",
                "request_received",
                f"request {request_id} from session {request.requester_session_id!r} "
                f"(agent {request.requester_agent_name!r})",
            ),
            Show(request, prompt_for_request(request)),
        ]

    def answered(self, request_id: str, reply: PromptReply, *, now_ms: int) -> list[Effect]:
        response = response_for_reply(
            reply, responder=self.session_id, now_ms=now_ms, timeout=self.prompt_timeout
        )
        return [
            Log("info", "response_sent", f"request {request_id}: {reply.state.value}"),
            Respond(request_id, encode(response)),
        ]

    def done(self, request_id: str) -> None:
        """The Respond for `request_id` has been carried out (or abandoned)."""
        self._in_flight.discard(request_id)

    def _refuse(self, request_id: str, why: str, now_ms: int) -> list[Effect]:
        self._in_flight.add(request_id)
        reply = PromptReply(state=PromptState.UNAVAILABLE, detail=why)
        response = response_for_reply(reply, responder=self.session_id, now_ms=now_ms)
        return [
            Log("warning", "request_refused", f"request {request_id}: {why}"),
            Respond(request_id, encode(response)),
        ]


# ------------------------------------------------------------------ child core


class Wait(msgspec.Struct, frozen=True):
    until_ms: int  # the deadline; the shell wakes earlier to re-check serving


class Finished(msgspec.Struct, frozen=True):
    reply: PromptReply
    event: str  # response_received | response_timed_out | not_serving


class ClientExchange:
    """One forwarded ask on the child's side, from written request to answer.

    `step` is called on every wake-up with what the shell observed: the response
    file's bytes (if it exists) and whether a fresh heartbeat says the target is
    being served — None when the target has never published one (a real pi parent:
    20.7.3 writes no heartbeat). Such a parent cannot be checked, so the child waits
    within its budget; a target that did publish heartbeats (now, or earlier in this
    exchange) and stopped fails after the grace period.
    """

    def __init__(
        self,
        request: ForwardedRequest,
        *,
        started_ms: int,
        timeout_ms: int,
        grace_ms: int,
        require_heartbeat: bool = True,
    ) -> None:
        self.request = request
        self.deadline_ms = started_ms + timeout_ms
        self.grace_ms = grace_ms
        self.require_heartbeat = require_heartbeat
        self.last_served_ms = started_ms
        self.heartbeat_seen = False
        self.unchecked = False  # the target publishes no heartbeat: waiting blind

    def step(self, now_ms: int, *, response: bytes | None, serving: bool | None) -> Wait | Finished:
        target = self.request.target_session_id
        if response is not None:
            reply = reply_from_response(response, expected_responder=target)
            return Finished(reply, "response_received")
        if serving is not None:
            self.heartbeat_seen = True
        elif not self.heartbeat_seen:
            self.unchecked = True
        if serving or not self.require_heartbeat or (serving is None and not self.heartbeat_seen):
            self.last_served_ms = now_ms
        elif now_ms - self.last_served_ms >= self.grace_ms:
            detail = f"nobody is serving session {target}"
            return Finished(
                PromptReply(state=PromptState.UNAVAILABLE, detail=detail), "not_serving"
            )
        if now_ms >= self.deadline_ms:
            detail = f"no answer from session {target} in time"
            return Finished(
                PromptReply(state=PromptState.TIMED_OUT, detail=detail), "response_timed_out"
            )
        return Wait(self.deadline_ms)
