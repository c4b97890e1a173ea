"""The ACP proxy's sans-IO core: lines in, actions out.

The proxy sits between an ACP client (an editor) and an ACP agent, both speaking
newline-delimited JSON-RPC 2.0. Every line is passed on byte for byte, except the agent's
``session/request_permission`` requests, which the proxy answers itself once the policy
has spoken (`Decide` -> `decided`):

* allow -> the option of kind ``allow_once`` (never an ``allow_always``: that would let the
  agent skip askgate for the rest of the session); no such option -> the client is asked;
* deny -> ``reject_once`` (else ``reject_always``, else the ``cancelled`` outcome), and the
  reason goes to the client as a ``session/update`` message chunk;
* ask (`Verdict.FORWARD`) -> the original request line goes to the client unchanged, and the
  client's answer comes back to the agent untouched (the ids are the agent's own).

Options are chosen by ``kind``, never by id (ids are agent-defined). A ``session/cancel``
from the client answers every request still being decided for that session with
``{"outcome": "cancelled"}``, as the protocol requires; a verdict arriving later is dropped.
Every ``tool_call`` the agent reports in ``session/update`` becomes an `Audit` record.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

REQUEST_PERMISSION = "session/request_permission"
SESSION_UPDATE = "session/update"
SESSION_CANCEL = "session/cancel"
SESSION_NEW = "session/new"
SESSION_LOAD = "session/load"

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class Verdict(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    FORWARD = "forward"  # ask: let the client's human decide


class ToAgent(msgspec.Struct, frozen=True):
    line: bytes


class ToClient(msgspec.Struct, frozen=True):
    line: bytes


class Decide(msgspec.Struct, frozen=True):
    """Ask the policy about a permission request; answer with `ProxyCore.decided(key, …)`."""

    key: str
    session_id: str | None
    cwd: str | None
    params: dict[str, Any]


class Audit(msgspec.Struct, frozen=True):
    record: dict[str, Any]


Action = ToAgent | ToClient | Decide | Audit


class _Waiting(msgspec.Struct):
    request_id: Any
    session_id: str | None
    line: bytes
    params: dict[str, Any]


def choose_option(options: Any, verdict: Verdict) -> str | None:
    """The optionId to select for `verdict`, by kind; None when no option fits."""
    if not isinstance(options, list):
        return None
    wanted = ("allow_once",) if verdict is Verdict.ALLOW else ("reject_once", "reject_always")
    for kind in wanted:
        for option in options:
            if isinstance(option, dict) and option.get("kind") == kind:
                option_id = option.get("optionId")
                if isinstance(option_id, str):
                    return option_id
    return None


def _line(message: dict[str, Any]) -> bytes:
    return _encoder.encode(message) + b"\n"


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = _decoder.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


class ProxyCore:
    """State of one proxied connection (no I/O)."""

    def __init__(self, *, default_cwd: str | None = None) -> None:
        self.default_cwd = default_cwd
        self._waiting: dict[str, _Waiting] = {}  # key -> request being decided
        self._new_session_cwd: dict[str, str] = {}  # client request id -> cwd
        self._session_cwd: dict[str, str] = {}

    @property
    def deciding(self) -> int:
        return len(self._waiting)

    # --- client -> agent -----------------------------------------------------------------

    def from_client(self, line: bytes) -> list[Action]:
        actions: list[Action] = [ToAgent(line)]
        message = _parse(line)
        if message is None:
            return actions
        method = message.get("method")
        params = message.get("params")
        if not isinstance(params, dict):
            return actions
        if method in (SESSION_NEW, SESSION_LOAD) and isinstance(params.get("cwd"), str):
            if method == SESSION_LOAD and isinstance(params.get("sessionId"), str):
                self._session_cwd[params["sessionId"]] = params["cwd"]
            if "id" in message:
                self._new_session_cwd[_key(message["id"])] = params["cwd"]
        elif method == SESSION_CANCEL and "id" not in message:
            actions.extend(self._cancel(params.get("sessionId")))
        return actions

    def _cancel(self, session_id: Any) -> list[Action]:
        cancelled: list[Action] = []
        for key, waiting in list(self._waiting.items()):
            if waiting.session_id == session_id:
                del self._waiting[key]
                result = {"outcome": {"outcome": "cancelled"}}
                cancelled.append(ToAgent(_response(waiting.request_id, result)))
        return cancelled

    # --- agent -> client -----------------------------------------------------------------

    def from_agent(self, line: bytes) -> list[Action]:
        message = _parse(line)
        if message is None:
            return [ToClient(line)]
        method = message.get("method")
        if method == REQUEST_PERMISSION and "id" in message:
            return self._permission_request(message, line)
        actions: list[Action] = [ToClient(line)]
        if method == SESSION_UPDATE:
            record = _tool_call_record(message.get("params"))
            if record is not None:
                actions.append(Audit(record))
        elif method is None and "id" in message:
            cwd = self._new_session_cwd.pop(_key(message["id"]), None)
            result = message.get("result")
            if cwd is not None and isinstance(result, dict):
                session_id = result.get("sessionId")
                if isinstance(session_id, str):
                    self._session_cwd[session_id] = cwd
        return actions

    def _permission_request(self, message: dict[str, Any], line: bytes) -> list[Action]:
        params = message.get("params")
        if not isinstance(params, dict):
            return [ToClient(line)]  # not ours to judge: the client answers or errors
        key = _key(message["id"])
        session_id = params.get("sessionId") if isinstance(params.get("sessionId"), str) else None
        self._waiting[key] = _Waiting(message["id"], session_id, line, params)
        cwd = self._session_cwd.get(session_id or "", self.default_cwd)
        return [Decide(key, session_id, cwd, params)]

    def decided(self, key: str, verdict: Verdict, reason: str = "") -> list[Action]:
        """The policy's answer for a `Decide`; [] when the request was cancelled meanwhile."""
        waiting = self._waiting.pop(key, None)
        if waiting is None:
            return []
        if verdict is Verdict.FORWARD:
            return [ToClient(waiting.line)]
        option_id = choose_option(waiting.params.get("options"), verdict)
        if verdict is Verdict.ALLOW:
            if option_id is None:  # no one-time allow on offer: the human chooses
                return [ToClient(waiting.line)]
            return [ToAgent(_response(waiting.request_id, _selected(option_id)))]
        outcome = _selected(option_id) if option_id else {"outcome": {"outcome": "cancelled"}}
        actions: list[Action] = []
        if waiting.session_id is not None:
            actions.append(ToClient(_denial_notice(waiting, reason)))
        actions.append(ToAgent(_response(waiting.request_id, outcome)))
        return actions


def _key(request_id: Any) -> str:
    return _encoder.encode(request_id).decode()


def _selected(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def _response(request_id: Any, result: dict[str, Any]) -> bytes:
    return _line({"jsonrpc": "2.0", "id": request_id, "result": result})


def _denial_notice(waiting: _Waiting, reason: str) -> bytes:
    tool_call = waiting.params.get("toolCall")
    title = tool_call.get("title") if isinstance(tool_call, dict) else None
    what = f" {title!r}" if isinstance(title, str) and title else ""
    text = f"askgate denied the tool call{what}: {reason or 'denied by policy'}\n"
    update = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
    }
    params = {"sessionId": waiting.session_id, "update": update}
    return _line({"jsonrpc": "2.0", "method": SESSION_UPDATE, "params": params})


def _tool_call_record(params: Any) -> dict[str, Any] | None:
    from askgate.audit import bound, sanitize

    if not isinstance(params, dict):
        return None
    update = params.get("update")
    if not isinstance(update, dict) or update.get("sessionUpdate") != "tool_call":
        return None

    def text(key: str) -> str | None:
        value = update.get(key)
        return bound(str(value), 300) if value is not None else None

    locations = update.get("locations")
    paths = [
        bound(str(loc.get("path")), 300)
        for loc in (locations if isinstance(locations, list) else [])[:20]
        if isinstance(loc, dict) and loc.get("path") is not None
    ]
    session = params.get("sessionId")
    return {
        "event": "tool_call_seen",
        "session": bound(str(session), 200) if session is not None else None,
        "tool_call_id": text("toolCallId"),
        "title": text("title"),
        "kind": text("kind"),
        "status": text("status"),
        "locations": paths,
        "input": sanitize(update.get("rawInput") or {}),
    }
