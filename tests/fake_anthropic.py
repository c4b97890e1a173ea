"""A fake of the Anthropic Messages API, for driving the real Claude Code CLI in tests.

The real service (api.anthropic.com) cannot be reached from the test machine, and a real model
would not be deterministic anyway, so this is a fake of an unreachable service (the only kind of
fake the house rules allow). It follows the documented Messages API contract:

* ``POST /v1/messages`` (any query string, Claude Code adds ``?beta=true``) with ``stream: true``
  answers ``text/event-stream`` with the documented event sequence: ``message_start``,
  ``content_block_start``, ``ping``, ``content_block_delta`` (``input_json_delta`` for a
  tool_use block, ``text_delta`` for a text block), ``content_block_stop``, ``message_delta``
  (carrying ``stop_reason`` and output usage) and ``message_stop``. Without ``stream`` it
  answers the equivalent single Message object.
* ``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}``.
* ``HEAD /`` (Claude Code's connectivity preflight) answers 200.
* Anything else gets the documented error envelope with ``not_found_error``.

The "model" is scripted per test with the bash commands it wants to run. It is stateless and
decides from the request alone, like the real API: while the conversation holds fewer
``tool_result`` blocks than scripted commands and a tool named ``Bash`` is offered, it calls
that tool with the next command (``tool_use``); otherwise it reports back in text
(``end_turn``).
Every request is recorded (method, path, headers, decoded body) for the test to inspect.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fake_http import BackgroundServer

MAX_BODY = 64 * 1024 * 1024
MODEL_FALLBACK = "claude-fake"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any  # decoded JSON, or None when the request had no (JSON) body


@dataclass
class Script:
    """What the fake model does: run `command` with the Bash tool, then say `final_text`."""

    command: str | None = None
    description: str = "Run the scripted command"
    final_text: str = "Done."
    then: tuple[str, ...] = ()  # further commands, one per turn after each tool_result

    def commands(self) -> tuple[str, ...]:
        return () if self.command is None else (self.command, *self.then)


@dataclass
class _State:
    script: Script = field(default_factory=Script)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _ends_with_tool_result(messages: Any) -> bool:
    if not isinstance(messages, list) or not messages:
        return False
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user":
        return False
    content = last.get("content")
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _tool_results_so_far(messages: Any) -> int:
    if not isinstance(messages, list):
        return 0
    return sum(
        1
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )


def _offers_tool(body: Mapping[str, Any], name: str) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, dict) and t.get("name") == name for t in tools
    )


def _tool_input_chunks(tool_input: Mapping[str, Any]) -> list[str]:
    # The real API streams a tool's input as several partial JSON fragments; clients must
    # concatenate them before parsing, so split the document to exercise that.
    text = json.dumps(tool_input)
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._record(None)
        self._error(HTTPStatus.NOT_FOUND, "not_found_error", f"no route for GET {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > MAX_BODY:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request_too_large", "body too big")
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._record(body)
        route = self.path.split("?", 1)[0].rstrip("/")
        if not isinstance(body, dict):
            self._error(HTTPStatus.BAD_REQUEST, "invalid_request_error", "body must be JSON")
        elif route == "/v1/messages/count_tokens":
            self._json(HTTPStatus.OK, {"input_tokens": max(1, len(raw) // 4)})
        elif route == "/v1/messages":
            self._messages(body)
        else:
            self._error(HTTPStatus.NOT_FOUND, "not_found_error", f"no route for POST {route}")

    # --- responses ----------------------------------------------------------------------

    def _messages(self, body: Mapping[str, Any]) -> None:
        state = self.server.state
        with state.lock:
            script = state.script
            serial = next(state.ids)
        model = str(body.get("model") or MODEL_FALLBACK)
        message_id = f"msg_fake{serial:06d}"
        commands = script.commands()
        turn = _tool_results_so_far(body.get("messages"))
        if turn < len(commands) and _offers_tool(body, "Bash"):
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_fake{serial:06d}",
                "name": "Bash",
                "input": {"command": commands[turn], "description": script.description},
            }
            stop_reason = "tool_use"
        else:
            block = {"type": "text", "text": script.final_text}
            stop_reason = "end_turn"
        if body.get("stream"):
            self._stream(message_id, model, block, stop_reason)
        else:
            self._json(
                HTTPStatus.OK,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [block],
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                },
            )

    def _stream(
        self, message_id: str, model: str, block: Mapping[str, Any], stop_reason: str
    ) -> None:
        events = [
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 1},
                    },
                },
            )
        ]
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": chunk}
                for chunk in _tool_input_chunks(block["input"])
            ]
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        events.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": start},
            )
        )
        events.append(_sse("ping", {"type": "ping"}))
        events.extend(
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
            for d in deltas
        )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
        )
        events.append(_sse("message_stop", {"type": "message_stop"}))
        payload = b"".join(events)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", f"req_fake{message_id[-6:]}")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: HTTPStatus, data: Mapping[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, status: HTTPStatus, kind: str, message: str) -> None:
        self._json(status, {"type": "error", "error": {"type": kind, "message": message}})

    def _record(self, body: Any) -> None:
        request = RecordedRequest(
            method=self.command, path=self.path, headers=dict(self.headers.items()), body=body
        )
        with self.server.state.lock:
            self.server.state.requests.append(request)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class FakeAnthropic(BackgroundServer):
    """The fake API on 127.0.0.1 (a free port), served from a background thread."""

    def __init__(self) -> None:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.state = _State()
        super().__init__(server, "fake-anthropic")

    @property
    def base_url(self) -> str:
        return self.origin

    def script(
        self, command: str | None, *, final_text: str = "Done.", then: tuple[str, ...] = ()
    ) -> None:
        """Make the model call Bash with `command` (None: answer text only), then with each
        of `then` in turn, one per reply after a tool_result."""
        with self._server.state.lock:
            self._server.state.script = Script(
                command=command, final_text=final_text, then=tuple(then)
            )

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    def message_requests(self) -> list[RecordedRequest]:
        return [
            r
            for r in self.requests
            if r.method == "POST" and r.path.split("?", 1)[0].rstrip("/") == "/v1/messages"
        ]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block the client sent back, in request order."""
        found: list[dict[str, Any]] = []
        for request in self.message_requests():
            messages = request.body.get("messages") if isinstance(request.body, dict) else None
            if not _ends_with_tool_result(messages):
                continue
            assert isinstance(messages, list)
            found.extend(
                block
                for block in messages[-1]["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
        return found


def tool_result_text(block: Mapping[str, Any]) -> str:
    """A tool_result's content as text (the API allows a string or a list of text blocks)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
