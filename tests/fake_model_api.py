"""A fake of the model APIs the agent CLIs call, for driving the real CLIs offline in tests.

The real services (api.anthropic.com, api.openai.com, generativelanguage.googleapis.com)
cannot be reached from the test machine, and a real model would not be deterministic anyway,
so this is a fake of unreachable services (the only kind of fake the house rules allow). It
follows each API's documented contract for the parts the CLIs use, all on one port:

* **Anthropic Messages** (Claude Code, ``ANTHROPIC_BASE_URL``): ``POST /v1/messages`` (any
  query string; Claude Code adds ``?beta=true``) with ``stream: true`` answers
  ``text/event-stream`` with the documented sequence ``message_start``,
  ``content_block_start``, ``ping``, ``content_block_delta`` (``input_json_delta`` split in
  two fragments for a tool_use block, ``text_delta`` for text), ``content_block_stop``,
  ``message_delta`` (``stop_reason``, output usage) and ``message_stop``; without ``stream``,
  the equivalent Message object. ``POST /v1/messages/count_tokens`` answers
  ``{"input_tokens": N}``. Errors use the ``{"type": "error", "error": {...}}`` envelope.
* **OpenAI Responses** (Codex, provider ``base_url = ORIGIN/v1``, ``wire_api =
  "responses"``): ``POST /v1/responses`` answers ``response.created``,
  ``response.output_item.done`` (a ``function_call`` item ``{type, id, call_id, name,
  arguments}`` or a ``message`` item with ``output_text``) and ``response.completed``.
* **OpenAI Chat Completions** (pi's ``openai-completions`` provider, ``baseUrl =
  ORIGIN/v1``): ``POST /v1/chat/completions`` with ``stream: true`` answers one ``data:
  <chat.completion.chunk>`` per delta (tool-call arguments split across chunks), a last
  choice chunk with ``finish_reason``, a usage-only chunk and ``data: [DONE]``; without
  ``stream``, one ``chat.completion``. ``GET /v1/models`` lists the one model. Errors use
  ``{"error": {"message", "type", "code"}}``.
* **Gemini** (Gemini CLI, ``GOOGLE_GEMINI_BASE_URL=ORIGIN``):
  ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` answers ``data:`` lines of
  ``GenerateContentResponse`` (``candidates[0].content.parts`` with a ``functionCall {name,
  args}`` or ``text``, ``finishReason``, ``usageMetadata``); ``:generateContent`` answers one
  such object; ``:countTokens`` answers ``{totalTokens}``.
* ``HEAD /`` (a connectivity preflight) answers 200.

The "model" follows one :class:`Script` for every API: a list of turns, each a tool call to
make, then the text to say. Like the real APIs it is stateless and decides from the request
alone: when the conversation holds fewer tool results than scripted turns and the next turn's
tool is offered, it calls that tool; otherwise it says ``final_text``. Every request is
recorded for the test to inspect, and :meth:`FakeModelAPI.tool_results` reads back, in one
shape, what each CLI told the model its tools did.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from typing import Any, Self

from standin_http import JsonHandler

MAX_BODY = 64 * 1024 * 1024
CHAT_MODEL = "fake-model"  # the one model /v1/models lists (pi's models.json names it)


@dataclass(frozen=True)
class ToolCall:
    """One turn of the script: call tool `name` with `arguments`."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Script:
    """What the fake model does: each turn's tool call in order (one turn per tool result
    the client sends back), then `final_text`."""

    turns: tuple[ToolCall, ...] = ()
    final_text: str = "Finished."


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any  # decoded JSON, or None when the request had no (JSON) body

    @property
    def route(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")


@dataclass(frozen=True)
class ToolResult:
    """What a CLI told the model one tool call did."""

    call_id: str  # Anthropic tool_use_id, OpenAI call_id / tool_call_id, Gemini name or id
    text: str
    is_error: bool | None  # Anthropic's flag; None for APIs without one


def _text_of(content: Any) -> str:
    """A tool result's content as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content)


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


# --- one API each: the tool results a request carries, the tools it offers ------------------


class _Api:
    """How one API shape carries the conversation: the tool results in it, the tools offered;
    `reply` names the handler method that answers in its shape."""

    reply = ""

    def results(self, body: Mapping[str, Any]) -> list[ToolResult]:
        raise NotImplementedError

    def offers(self, body: Mapping[str, Any], name: str) -> bool:
        raise NotImplementedError


class _Anthropic(_Api):
    reply = "_messages"

    @staticmethod
    def _result(block: Mapping[str, Any]) -> ToolResult:
        error = block.get("is_error")
        return ToolResult(str(block.get("tool_use_id", "")), _text_of(block.get("content")), error)

    def _blocks(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [b for b in _dicts(message.get("content")) if b.get("type") == "tool_result"]

    def results(self, body: Mapping[str, Any]) -> list[ToolResult]:
        return [self._result(b) for m in _dicts(body.get("messages")) for b in self._blocks(m)]

    def offers(self, body: Mapping[str, Any], name: str) -> bool:
        return any(t.get("name") == name for t in _dicts(body.get("tools")))


class _Responses(_Api):
    reply = "_responses"

    @staticmethod
    def _result(item: Mapping[str, Any]) -> ToolResult:
        return ToolResult(str(item.get("call_id", "")), _text_of(item.get("output")), None)

    def results(self, body: Mapping[str, Any]) -> list[ToolResult]:
        items = _dicts(body.get("input"))
        return [self._result(i) for i in items if i.get("type") == "function_call_output"]

    def offers(self, body: Mapping[str, Any], name: str) -> bool:
        return any(t.get("name") == name for t in _dicts(body.get("tools")))


class _Chat(_Api):
    reply = "_chat"

    @staticmethod
    def _result(message: Mapping[str, Any]) -> ToolResult:
        call_id = str(message.get("tool_call_id", ""))
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return ToolResult(call_id, str(content), None)

    def results(self, body: Mapping[str, Any]) -> list[ToolResult]:
        messages = _dicts(body.get("messages"))
        return [self._result(m) for m in messages if m.get("role") == "tool"]

    def offers(self, body: Mapping[str, Any], name: str) -> bool:
        return any((t.get("function") or {}).get("name") == name for t in _dicts(body.get("tools")))


class _Gemini(_Api):
    reply = "_gemini"

    @staticmethod
    def _parts(content: Mapping[str, Any]) -> list[ToolResult]:
        return [
            ToolResult(
                str(p["functionResponse"].get("id") or p["functionResponse"].get("name", "")),
                json.dumps(p["functionResponse"]),
                None,
            )
            for p in _dicts(content.get("parts"))
            if isinstance(p.get("functionResponse"), dict)
        ]

    def results(self, body: Mapping[str, Any]) -> list[ToolResult]:
        return [r for c in _dicts(body.get("contents")) for r in self._parts(c)]

    def offers(self, body: Mapping[str, Any], name: str) -> bool:
        return any(
            d.get("name") == name
            for tool in _dicts(body.get("tools"))
            for d in _dicts(tool.get("functionDeclarations"))
        )


ANTHROPIC, RESPONSES, CHAT, GEMINI = _Anthropic(), _Responses(), _Chat(), _Gemini()


def _api_of(route: str) -> _Api | None:
    if route == "/v1/messages":
        return ANTHROPIC
    if route.endswith("/responses"):
        return RESPONSES
    if route.endswith("/chat/completions"):
        return CHAT
    if route.endswith((":streamGenerateContent", ":generateContent")):
        return GEMINI
    return None


# --- the server ----------------------------------------------------------------------------


@dataclass
class _State:
    script: Script = field(default_factory=Script)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _halves(text: str) -> list[str]:
    # The real APIs stream a tool's arguments as partial fragments; clients must join them
    # before parsing, so split the document to exercise that.
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


class _Handler(JsonHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        route = self._record(None).route
        if route.endswith("/models"):
            listing = {"object": "list", "data": [{"id": CHAT_MODEL, "object": "model"}]}
            self._json(HTTPStatus.OK, listing)
        else:
            self._error(route, HTTPStatus.NOT_FOUND, "not_found_error", f"no route for {route}")

    def do_POST(self) -> None:
        route = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > MAX_BODY:
            self._error(route, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request_too_large", "big")
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._record(body)
        api = _api_of(route)
        if not isinstance(body, dict):
            self._error(route, HTTPStatus.BAD_REQUEST, "invalid_request_error", "body not JSON")
        elif route == "/v1/messages/count_tokens":
            self._json(HTTPStatus.OK, {"input_tokens": max(1, len(raw) // 4)})
        elif route.endswith(":countTokens"):
            self._json(HTTPStatus.OK, {"totalTokens": max(1, len(raw) // 4)})
        elif api is None:
            self._error(route, HTTPStatus.NOT_FOUND, "not_found_error", f"no route for {route}")
        else:
            with self.server.state.lock:
                script, serial = self.server.state.script, next(self.server.state.ids)
            turn = len(api.results(body))
            call = None
            if turn < len(script.turns) and api.offers(body, script.turns[turn].name):
                call = script.turns[turn]
            reply = getattr(self, api.reply)
            reply(route, body, serial, call, script.final_text)

    # --- Anthropic Messages ------------------------------------------------------------------

    def _messages(
        self, route: str, body: Mapping[str, Any], n: int, call: ToolCall | None, text: str
    ) -> None:
        model = str(body.get("model") or "claude-fake")
        message_id = f"msg_fake{n:06d}"
        if call is not None:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_fake{n:06d}",
                "name": call.name,
                "input": dict(call.arguments),
            }
            stop_reason = "tool_use"
        else:
            block, stop_reason = {"type": "text", "text": text}, "end_turn"
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            self._json(HTTPStatus.OK, message)
            return
        start = {**message, "content": [], "stop_reason": None}
        start["usage"] = {"input_tokens": 10, "output_tokens": 1}
        if call is not None:
            first = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in _halves(json.dumps(block["input"]))
            ]
        else:
            first = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": text}]
        events = [
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": first},
            ),
            _sse("ping", {"type": "ping"}),
            *(
                _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
                for d in deltas
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
        self._stream(events, {"request-id": f"req_fake{n:06d}"})

    # --- OpenAI Responses --------------------------------------------------------------------

    def _responses(
        self, route: str, body: Mapping[str, Any], n: int, call: ToolCall | None, text: str
    ) -> None:
        response_id = f"resp_fake_{n}"
        if call is not None:
            item: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_fake_{n}",
                "call_id": f"call_fake_{n}",
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": f"msg_fake_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        done = {"type": "response.output_item.done", "output_index": 0, "item": item}
        completed = {"type": "response.completed", "response": {"id": response_id, "usage": usage}}
        created = {"type": "response.created", "response": {"id": response_id}}
        self._stream(
            [
                _sse("response.created", created),
                _sse("response.output_item.done", done),
                _sse("response.completed", completed),
            ]
        )

    # --- OpenAI Chat Completions -------------------------------------------------------------

    def _chat(
        self, route: str, body: Mapping[str, Any], n: int, call: ToolCall | None, text: str
    ) -> None:
        completion_id, created = f"chatcmpl-fake{n:06d}", int(time.time())
        call_id, arguments = f"call_fake{n:06d}", json.dumps(call.arguments) if call else ""
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        finish = "stop" if call is None else "tool_calls"
        common = {"id": completion_id, "created": created, "model": CHAT_MODEL}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text if not call else None}
            if call is not None:
                function = {"name": call.name, "arguments": arguments}
                message["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self._json(
                HTTPStatus.OK,
                {**common, "object": "chat.completion", "choices": [choice], "usage": usage},
            )
            return

        def chunk(delta: Mapping[str, Any] | None, reason: str | None = None) -> bytes:
            choices = (
                [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": reason}]
            )
            data: dict[str, Any] = {**common, "object": "chat.completion.chunk", "choices": choices}
            if delta is None:
                data["usage"] = usage
            return _sse(None, data)

        events = [chunk({"role": "assistant", "content": ""})]
        if call is None:
            events += [chunk({"content": part}) for part in _halves(text)]
        else:
            function = {"name": call.name, "arguments": ""}
            first = {"index": 0, "id": call_id, "type": "function", "function": function}
            events.append(chunk({"tool_calls": [first]}))
            events += [
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
                for part in _halves(arguments)
            ]
        events += [chunk({}, finish), chunk(None), b"data: [DONE]\n\n"]
        self._stream(events)

    # --- Gemini ------------------------------------------------------------------------------

    def _gemini(
        self, route: str, body: Mapping[str, Any], n: int, call: ToolCall | None, text: str
    ) -> None:
        if call is not None:
            part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments}}
        else:
            part = {"text": text}
        response = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "gemini-fake",
        }
        if route.endswith(":streamGenerateContent"):
            self._stream([f"data: {json.dumps(response)}\r\n\r\n".encode()])
        else:
            self._json(HTTPStatus.OK, response)

    # --- the wire ----------------------------------------------------------------------------

    def _stream(self, events: list[bytes], headers: Mapping[str, str] | None = None) -> None:
        payload = b"".join(events)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, route: str, status: HTTPStatus, kind: str, message: str) -> None:
        """Each API's documented error envelope."""
        if route.startswith("/v1/messages"):
            self._json(status, {"type": "error", "error": {"type": kind, "message": message}})
        elif ":" in route:  # Gemini's model methods
            self._json(status, {"error": {"code": int(status), "message": message}})
        else:
            self._json(status, {"error": {"message": message, "type": kind, "code": None}})

    def _record(self, body: Any) -> RecordedRequest:
        request = RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
        with self.server.state.lock:
            self.server.state.requests.append(request)
        return request


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class FakeModelAPI:
    """The fake APIs on 127.0.0.1 (a free port), served from a background thread; a context
    manager (closing stops it at once: serve_forever polls every 50 ms)."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State()
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-model-api",
            daemon=True,
        )

    def start(self) -> Self:
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def origin(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *turns: ToolCall, final_text: str = "Finished.") -> None:
        """Make the model call each of `turns` in order, one per tool result, then say
        `final_text` (no turns: it only talks)."""
        with self._server.state.lock:
            self._server.state.script = Script(tuple(turns), final_text)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    def model_requests(self) -> list[RecordedRequest]:
        """The requests that asked the model for a turn (any API)."""
        return [r for r in self.requests if r.method == "POST" and _api_of(r.route) is not None]

    def tool_results(self) -> list[ToolResult]:
        """Every tool result the client sent back, in order, each once (a client resends the
        whole conversation with every request)."""
        found: dict[tuple[str, str], ToolResult] = {}
        for request in self.model_requests():
            api = _api_of(request.route)
            if api is not None and isinstance(request.body, dict):
                for result in api.results(request.body):
                    found.setdefault((result.call_id, result.text), result)
        return list(found.values())

    def told(self) -> list[str]:
        """The text of every tool result (what the model was told each call did)."""
        return [r.text for r in self.tool_results()]

    def pi_models_json(self) -> dict[str, Any]:
        """pi's models.json registering this server as provider `fake` (Chat Completions)."""
        return {
            "providers": {
                "fake": {
                    "baseUrl": self.origin + "/v1",
                    "api": "openai-completions",
                    "apiKey": "dummy-key",
                    "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                    "models": [{"id": CHAT_MODEL, "name": "Fake Model", "reasoning": False}],
                }
            }
        }
