"""Fakes of two model APIs, for driving the real Codex and Gemini CLIs offline in tests.

The real services (api.openai.com, generativelanguage.googleapis.com) cannot be reached from
the test machine, and a real model would not be deterministic anyway, so these are fakes of
unreachable services (the only kind of fake the house rules allow). Each follows its API's
documented contract for the parts the CLIs use:

* **OpenAI Responses API** (Codex, custom provider ``base_url = http://127.0.0.1:PORT/v1``,
  ``wire_api = "responses"``): ``POST /v1/responses`` with ``stream: true`` answers
  ``text/event-stream`` with ``response.created``, ``response.output_item.done`` (a
  ``function_call`` item ``{type, id, call_id, name, arguments}`` or a ``message`` item with
  ``output_text`` content) and ``response.completed`` (with ``usage``).
* **Gemini API** (Gemini CLI, ``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT``):
  ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` answers ``data:`` lines of
  ``GenerateContentResponse`` objects (``candidates[0].content.parts`` with a
  ``functionCall {name, args}`` or ``text``, ``finishReason: "STOP"``, ``usageMetadata``);
  ``:generateContent`` answers one such object; ``:countTokens`` answers ``{totalTokens}``.

The "model" is stateless and scripted per test: if the conversation does not yet end with a
tool result and the scripted tool is offered, it calls that tool with the scripted arguments;
otherwise it answers ``final_text``. Every request is recorded for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fake_http import BackgroundServer

MAX_BODY = 64 * 1024 * 1024


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any


@dataclass
class Script:
    tool: str | None = None  # the tool the model calls, when offered
    arguments: dict[str, Any] = field(default_factory=dict)
    final_text: str = "Done."


@dataclass
class _State:
    script: Script = field(default_factory=Script)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


# --- OpenAI Responses ----------------------------------------------------------------------


def _responses_tool_offered(body: Mapping[str, Any], name: str) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, dict) and t.get("name") == name for t in tools
    )


def _responses_has_tool_output(body: Mapping[str, Any]) -> bool:
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") == "function_call_output" for i in items
    )


def _responses_events(state: _State, body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    script = state.script
    with state.lock:
        state.calls += 1
        n = state.calls
    response_id = f"resp_fake_{n}"
    if (
        script.tool
        and _responses_tool_offered(body, script.tool)
        and not _responses_has_tool_output(body)
    ):
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_fake_{n}",
            "call_id": f"call_fake_{n}",
            "name": script.tool,
            "arguments": json.dumps(script.arguments),
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_fake_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": script.final_text, "annotations": []}],
        }
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    return [
        ("response.created", {"type": "response.created", "response": {"id": response_id}}),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        (
            "response.completed",
            {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
        ),
    ]


# --- Gemini --------------------------------------------------------------------------------


def _gemini_tool_offered(body: Mapping[str, Any], name: str) -> bool:
    for tool in body.get("tools") or []:
        for decl in (tool or {}).get("functionDeclarations") or []:
            if isinstance(decl, dict) and decl.get("name") == name:
                return True
    return False


def _gemini_ends_with_tool_result(body: Mapping[str, Any]) -> bool:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return False
    parts = contents[-1].get("parts") if isinstance(contents[-1], dict) else None
    return isinstance(parts, list) and any(
        isinstance(p, dict) and "functionResponse" in p for p in parts
    )


def _gemini_response(state: _State, body: Mapping[str, Any]) -> dict[str, Any]:
    script = state.script
    if (
        script.tool
        and _gemini_tool_offered(body, script.tool)
        and not _gemini_ends_with_tool_result(body)
    ):
        part: dict[str, Any] = {"functionCall": {"name": script.tool, "args": script.arguments}}
    else:
        part = {"text": script.final_text}
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-fake",
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self, body: Any) -> None:
        with self.server.state.lock:
            self.server.state.requests.append(RecordedRequest(self.command, self.path, body))

    def do_GET(self) -> None:
        self._record(None)
        self._json(HTTPStatus.NOT_FOUND, {"error": {"code": 404, "message": "not found"}})

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > MAX_BODY:
            self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": {"message": "too big"}})
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._record(body)
        route = self.path.split("?", 1)[0].rstrip("/")
        state = self.server.state
        if not isinstance(body, dict):
            self._json(HTTPStatus.BAD_REQUEST, {"error": {"message": "body must be JSON"}})
        elif route.endswith("/responses"):
            self._sse(
                [
                    f"event: {e}\ndata: {json.dumps(d)}\n\n"
                    for e, d in _responses_events(state, body)
                ]
            )
        elif route.endswith(":streamGenerateContent"):
            self._sse([f"data: {json.dumps(_gemini_response(state, body))}\r\n\r\n"])
        elif route.endswith(":generateContent"):
            self._json(HTTPStatus.OK, _gemini_response(state, body))
        elif route.endswith(":countTokens"):
            self._json(HTTPStatus.OK, {"totalTokens": max(1, len(raw) // 4)})
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": {"code": 404, "message": route}})

    def _sse(self, chunks: list[str]) -> None:
        data = "".join(chunks).encode()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: HTTPStatus, data: Mapping[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class FakeModelServer(BackgroundServer):
    """Both fake APIs on 127.0.0.1 (a free port), served from a background thread."""

    def __init__(self) -> None:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.state = _State()
        super().__init__(server, "fake-model-server")

    @property
    def base_url(self) -> str:
        return self.origin

    def script(
        self, tool: str | None, arguments: dict[str, Any], final_text: str = "Done."
    ) -> None:
        with self._server.state.lock:
            self._server.state.script = Script(tool, dict(arguments), final_text)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    def model_requests(self) -> list[RecordedRequest]:
        return [
            r
            for r in self.requests
            if r.method == "POST" and not r.path.split("?", 1)[0].endswith(":countTokens")
        ]
