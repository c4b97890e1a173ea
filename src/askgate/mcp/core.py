"""The MCP gateway's sans-IO core: frames in, actions out.

The gateway sits between an MCP client (an agent) and an MCP server. Every frame passes on
byte for byte, except those the gateway decides:

* a client's ``tools/call``, ``resources/read`` and ``prompts/get`` request becomes a
  `Decide`; `decided` then sends the original frame to the server (allow) or answers the
  client itself (deny): a tool call with an error result (``isError: true``, the reason as
  text), the other two with a JSON-RPC error. A denied request never reaches the server;
* a ``tools/list`` result is rewritten without the tools the policy denies (their
  ``inputSchema`` and ``annotations`` are remembered: they tell arguments apart);
* the answer to an ``elicitation/create`` request the gateway sent the client (`ask`) is
  the gateway's, never forwarded (its id is random: the server cannot guess it).

Failures end requests, never let one through: a malformed frame from the client is
answered with a JSON-RPC error and not forwarded; a server that closes, a frame too long,
or a timeout ends every request still open with an error naming the reason; a request
decided after the server is gone is answered with an error too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from askgate.mcp.arguments import ToolShape
from askgate.mcp.frames import Oversized, guess_id

TOOLS_CALL = "tools/call"
TOOLS_LIST = "tools/list"
RESOURCES_READ = "resources/read"
PROMPTS_GET = "prompts/get"
INITIALIZE = "initialize"
CANCELLED = "notifications/cancelled"
ELICIT = "elicitation/create"
DECIDED_METHODS = frozenset({TOOLS_CALL, RESOURCES_READ, PROMPTS_GET})

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Implementation-defined server errors (JSON-RPC reserves -32000..-32099 for them).
DENIED = -32001
UPSTREAM_FAILED = -32002

APPROVE = "approve"
DENY = "deny"

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class ToServer(msgspec.Struct, frozen=True):
    data: bytes  # one frame, newline-terminated
    # The request this frame carries, when it is one (a transport that fails to deliver
    # it answers the client with `upstream_failed(request_id, …)`).
    request_id: Any = None
    is_request: bool = False


class ToClient(msgspec.Struct, frozen=True):
    data: bytes
    # Set when this frame answers a request the gateway forwarded (its timer can stop).
    answers: Any = None


class Decide(msgspec.Struct, frozen=True):
    """Ask the policy about one request; answer with `GatewayCore.decided(key, …)`.
    `tool` is the tool's name, or ``resources/read`` / ``prompts/get``."""

    key: bytes
    method: str
    tool: str
    arguments: Any
    shape: ToolShape


class Answered(msgspec.Struct, frozen=True):
    """The client answered an elicitation the gateway sent (`ask`): `result` is its
    result object, or None when it answered with an error."""

    ask_id: str
    result: dict[str, Any] | None


class Log(msgspec.Struct, frozen=True):
    text: str


Action = ToServer | ToClient | Decide | Answered | Log


class _Open(msgspec.Struct):
    request_id: Any
    method: str
    frame: bytes


def _key(request_id: Any) -> bytes:
    """Ids 1 and "1" are different requests: key them by their JSON text."""
    return _encoder.encode(request_id)


def _line(message: dict[str, Any]) -> bytes:
    return _encoder.encode(message) + b"\n"


def _frame(data: bytes) -> bytes:
    return data if data.endswith(b"\n") else data + b"\n"


def error_frame(request_id: Any, code: int, message: str) -> bytes:
    return _line(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message[:2000]}}
    )


def tool_error_frame(request_id: Any, text: str) -> bytes:
    """A `tools/call` result the agent's model reads: the call failed, and why."""
    result = {"content": [{"type": "text", "text": text[:4000]}], "isError": True}
    return _line({"jsonrpc": "2.0", "id": request_id, "result": result})


class GatewayCore:
    """The state of one client-server connection."""

    def __init__(self, visible: Callable[[str], bool] | None = None) -> None:
        # Whether `tools/list` offers a tool (the shell passes the policy's answer).
        self.visible: Callable[[str], bool] = visible or (lambda _tool: True)
        self.client_elicitation = False  # the client declared the elicitation capability
        self.tools: dict[str, ToolShape] = {}
        self.server_gone: str | None = None
        self._open: dict[bytes, _Open] = {}  # forwarded to the server, not yet answered
        self._deciding: dict[bytes, _Open] = {}  # waiting for `decided`
        self._abandoned: set[bytes] = set()  # ended by the gateway: a late answer is dropped
        self._asks: set[str] = set()  # elicitation ids the gateway sent

    # --- from the client -------------------------------------------------------------

    def from_client(self, frame: bytes | Oversized) -> list[Action]:
        if isinstance(frame, Oversized):
            why = f"message of more than {frame.size} bytes is over the gateway's limit"
            return [ToClient(error_frame(guess_id(frame.prefix), INVALID_REQUEST, why))]
        if not frame.strip():
            return []
        try:
            message = _decoder.decode(frame)
        except (msgspec.DecodeError, RecursionError) as exc:
            why = f"malformed JSON-RPC frame: {exc}"
            return [ToClient(error_frame(guess_id(frame), PARSE_ERROR, why))]
        if isinstance(message, list):
            why = "JSON-RPC batches are not supported by the askgate gateway"
            return [
                ToClient(error_frame(m.get("id"), INVALID_REQUEST, why))
                for m in message
                if isinstance(m, dict) and "id" in m and "method" in m
            ] or [ToClient(error_frame(None, INVALID_REQUEST, why))]
        if not isinstance(message, dict):
            return [ToClient(error_frame(None, INVALID_REQUEST, "not a JSON-RPC message"))]
        method = message.get("method")
        if method is None:
            return self._client_response(frame, message)
        if not isinstance(method, str):
            return [ToClient(error_frame(message.get("id"), INVALID_REQUEST, "bad method"))]
        if "id" not in message:
            return self._client_notification(frame, method, message)
        request_id = message["id"]
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return [ToClient(error_frame(None, INVALID_REQUEST, "bad request id"))]
        params = message.get("params")
        if method == INITIALIZE and isinstance(params, dict):
            capabilities = params.get("capabilities")
            if isinstance(capabilities, dict):
                self.client_elicitation = isinstance(capabilities.get("elicitation"), dict)
        if method in DECIDED_METHODS:
            return self._decide(frame, request_id, method, params)
        return self._forward(frame, request_id, method)

    def _forward(self, frame: bytes, request_id: Any, method: str) -> list[Action]:
        key = _key(request_id)
        if self.server_gone is not None:
            return [ToClient(self._failure(request_id, method, self.server_gone))]
        self._open[key] = _Open(request_id, method, frame)
        self._abandoned.discard(key)
        return [ToServer(_frame(frame), request_id, True)]

    def _decide(self, frame: bytes, request_id: Any, method: str, params: Any) -> list[Action]:
        if not isinstance(params, dict):
            return [ToClient(error_frame(request_id, INVALID_PARAMS, f"{method}: no params"))]
        if method == TOOLS_CALL:
            name, arguments = params.get("name"), params.get("arguments")
            if not isinstance(name, str) or not name:
                return [ToClient(error_frame(request_id, INVALID_PARAMS, "tools/call: no name"))]
            shape = self.tools.get(name) or ToolShape.of(name)
        elif method == RESOURCES_READ:
            uri = params.get("uri")
            if not isinstance(uri, str):
                why = "resources/read: no uri"
                return [ToClient(error_frame(request_id, INVALID_PARAMS, why))]
            name, arguments = method, {"uri": uri}
            shape = ToolShape.of("read_resource")
        else:
            prompt = params.get("name")
            if not isinstance(prompt, str) or not prompt:
                return [ToClient(error_frame(request_id, INVALID_PARAMS, "prompts/get: no name"))]
            name, arguments = method, {"name": prompt, "arguments": params.get("arguments")}
            shape = ToolShape.of(f"get_prompt_{prompt}")
        key = _key(request_id)
        if key in self._deciding or key in self._open:
            why = "a request with this id is already open"
            return [ToClient(error_frame(request_id, INVALID_REQUEST, why))]
        self._deciding[key] = _Open(request_id, method, frame)
        return [Decide(key, method, name, arguments, shape)]

    def _client_notification(
        self, frame: bytes, method: str, message: dict[str, Any]
    ) -> list[Action]:
        if method == CANCELLED:
            params = message.get("params")
            if isinstance(params, dict) and "requestId" in params:
                key = _key(params["requestId"])
                if self._deciding.pop(key, None) is not None:
                    return []  # never sent to the server: nothing to cancel there
        return [ToServer(_frame(frame))]

    def _client_response(self, frame: bytes, message: dict[str, Any]) -> list[Action]:
        ask_id = message.get("id")
        if isinstance(ask_id, str) and ask_id in self._asks:
            self._asks.discard(ask_id)
            result = message.get("result")
            return [Answered(ask_id, result if isinstance(result, dict) else None)]
        return [ToServer(_frame(frame))]  # the client's answer to a server's request

    # --- decisions -------------------------------------------------------------------

    def decided(self, key: bytes, allowed: bool, reason: str) -> list[Action]:
        """The gate's answer for a `Decide`. A request the client cancelled meanwhile is
        dropped (the client expects no answer)."""
        waiting = self._deciding.pop(key, None)
        if waiting is None:
            return []
        if not allowed:
            return [ToClient(self._failure(waiting.request_id, waiting.method, reason, DENIED))]
        return self._forward(waiting.frame, waiting.request_id, waiting.method)

    def ask(self, message: str) -> tuple[str, list[Action]]:
        """An `elicitation/create` request for the client's human: approve or deny."""
        ask_id = f"askgate-{os.urandom(16).hex()}"
        self._asks.add(ask_id)
        schema = {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Allow this call?",
                    "enum": [APPROVE, DENY],
                    "enumNames": ["Allow this call once", "Deny"],
                }
            },
            "required": ["decision"],
        }
        request = {
            "jsonrpc": "2.0",
            "id": ask_id,
            "method": ELICIT,
            "params": {"message": message, "requestedSchema": schema},
        }
        return ask_id, [ToClient(_line(request))]

    # --- from the server -------------------------------------------------------------

    def from_server(self, frame: bytes | Oversized) -> list[Action]:
        if isinstance(frame, Oversized):
            why = f"the server sent a message of more than {frame.size} bytes (over the limit)"
            return self._end_guessed(guess_id(frame.prefix), why)
        if not frame.strip():
            return []
        try:
            message = _decoder.decode(frame)
        except (msgspec.DecodeError, RecursionError) as exc:
            return self._end_guessed(guess_id(frame), f"the server sent a malformed frame: {exc}")
        if not isinstance(message, dict):
            return [Log("askgate mcp: dropped a server message that is not a JSON object")]
        if "method" in message:
            return [ToClient(_frame(frame))]  # a server request or notification
        key = _key(message.get("id"))
        if key in self._abandoned:
            self._abandoned.discard(key)
            return []
        opened = self._open.pop(key, None)
        if opened is None:
            return [ToClient(_frame(frame))]
        if opened.method == TOOLS_LIST and isinstance(message.get("result"), dict):
            return [ToClient(self._filtered(message, frame), opened.request_id)]
        return [ToClient(_frame(frame), opened.request_id)]

    def _filtered(self, message: dict[str, Any], frame: bytes) -> bytes:
        result = message["result"]
        tools = result.get("tools")
        if not isinstance(tools, list):
            return _frame(frame)
        kept = []
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            self.tools[tool["name"]] = ToolShape.of(tool["name"], tool)
            if self.visible(tool["name"]):
                kept.append(tool)
        if len(kept) == len(tools):
            return _frame(frame)
        return _line({**message, "result": {**result, "tools": kept}})

    def _end_guessed(self, request_id: Any, why: str) -> list[Action]:
        key = _key(request_id)
        opened = self._open.pop(key, None) if request_id is not None else None
        if opened is None:
            return [Log(f"askgate mcp: {why}; dropped")]
        return [ToClient(self._failure(opened.request_id, opened.method, why))]

    # --- failures --------------------------------------------------------------------

    def upstream_failed(self, request_id: Any, why: str) -> list[Action]:
        """The transport could not deliver a request or read its answer."""
        key = _key(request_id)
        opened = self._open.pop(key, None)
        if opened is None:
            return []
        return [ToClient(self._failure(opened.request_id, opened.method, why))]

    def timed_out(self, request_id: Any, why: str) -> list[Action]:
        """A forwarded request took longer than the gateway waits: it ends with an error
        and the server is told to cancel it; its late answer is dropped."""
        key = _key(request_id)
        opened = self._open.pop(key, None)
        if opened is None:
            return []
        self._abandoned.add(key)
        cancel = {
            "jsonrpc": "2.0",
            "method": CANCELLED,
            "params": {"requestId": opened.request_id, "reason": why},
        }
        return [
            ToClient(self._failure(opened.request_id, opened.method, why)),
            ToServer(_line(cancel)),
        ]

    def server_closed(self, why: str) -> list[Action]:
        """The server is gone: every open request ends with an error, and so does every
        request decided or sent from now on."""
        self.server_gone = why
        out: list[Action] = [
            ToClient(self._failure(o.request_id, o.method, why)) for o in self._open.values()
        ]
        self._open.clear()
        return out

    def open_requests(self) -> list[Any]:
        return [o.request_id for o in self._open.values()]

    def _failure(
        self, request_id: Any, method: str, why: str, code: int = UPSTREAM_FAILED
    ) -> bytes:
        if method == TOOLS_CALL:
            return tool_error_frame(request_id, why)
        return error_frame(request_id, code, why)
