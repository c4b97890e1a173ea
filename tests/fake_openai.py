"""A fake of the OpenAI Chat Completions API, for driving the real pi CLI in tests.

The real service (api.openai.com, or any hosted OpenAI-compatible model) cannot be
reached from the test machine, and a real model would not be deterministic anyway, so
this is a fake of an unreachable service (the only kind of fake the house rules allow).
It follows the documented streaming contract, as pi's `openai-completions` provider reads
it (reference real-clients.md §A2-§A3):

* ``POST <base>/chat/completions`` with ``stream: true`` answers ``text/event-stream``:
  one ``data: <chat.completion.chunk>`` event per delta (``choices[0].delta`` with
  ``role``, ``content`` or ``tool_calls[{index, id, type, function{name, arguments}}]``,
  the arguments split across several chunks as the real API does), a last choice chunk
  with ``finish_reason`` (``tool_calls`` or ``stop``), a usage-only chunk, and
  ``data: [DONE]``. Without ``stream`` it answers the equivalent ``chat.completion``.
* ``GET <base>/models`` lists the one model.
* Anything else gets the documented error envelope (``{"error": {"message", "type"}}``).

The "model" is scripted per test with the bash command it wants to run. It is stateless
and decides from the request alone, like the real API: when the conversation ends with a
``tool`` message it answers the scripted final text (``stop``); otherwise, if a tool named
``bash`` is offered and a command is scripted, it calls that tool (``tool_calls``). Every
request is recorded for the test to inspect.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fake_http import BackgroundServer

MAX_BODY = 64 * 1024 * 1024
MODEL = "fake-model"


@dataclass
class Script:
    command: str | None = None
    final_text: str = "DONE"


@dataclass
class _State:
    script: Script = field(default_factory=Script)
    requests: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))


def _ends_with_tool_result(messages: Any) -> bool:
    return (
        isinstance(messages, list)
        and bool(messages)
        and isinstance(messages[-1], dict)
        and messages[-1].get("role") == "tool"
    )


def _offers_tool(body: Mapping[str, Any], name: str) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, dict) and (t.get("function") or {}).get("name") == name for t in tools
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            self._json(
                HTTPStatus.OK, {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
            )
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no route for GET {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > MAX_BODY:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "body too big")
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self.server.state.lock:
            self.server.state.requests.append(body)
        route = self.path.split("?", 1)[0].rstrip("/")
        if not isinstance(body, dict):
            self._error(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
        elif route.endswith("/chat/completions"):
            self._completion(body)
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no route for POST {route}")

    def _completion(self, body: Mapping[str, Any]) -> None:
        state = self.server.state
        with state.lock:
            script = state.script
            serial = next(state.ids)
        completion_id = f"chatcmpl-fake{serial:06d}"
        call: dict[str, Any] | None = None
        if (
            script.command is not None
            and not _ends_with_tool_result(body.get("messages"))
            and _offers_tool(body, "bash")
        ):
            call = {
                "id": f"call_fake{serial:06d}",
                "name": "bash",
                "arguments": json.dumps({"command": script.command}),
            }
        if body.get("stream"):
            self._stream(completion_id, call, script.final_text)
        else:
            message: dict[str, Any] = {"role": "assistant", "content": None}
            if call is None:
                message["content"] = script.final_text
            else:
                message["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": call["name"], "arguments": call["arguments"]},
                    }
                ]
            self._json(
                HTTPStatus.OK,
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": MODEL,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "stop" if call is None else "tool_calls",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                },
            )

    def _stream(self, completion_id: str, call: Mapping[str, Any] | None, text: str) -> None:
        created = int(time.time())

        def chunk(delta: Mapping[str, Any] | None, finish: str | None = None) -> bytes:
            data: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": MODEL,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if delta is None:
                data["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            return f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()

        events = [chunk({"role": "assistant", "content": ""})]
        if call is None:
            middle = len(text) // 2
            events += [chunk({"content": text[:middle]}), chunk({"content": text[middle:]})]
            events.append(chunk({}, "stop"))
        else:
            arguments = call["arguments"]
            middle = len(arguments) // 2
            first = {
                "index": 0,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": ""},
            }
            events.append(chunk({"tool_calls": [first]}))
            for part in (arguments[:middle], arguments[middle:]):
                events.append(
                    chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
                )
            events.append(chunk({}, "tool_calls"))
        events.append(chunk(None))
        events.append(b"data: [DONE]\n\n")
        payload = b"".join(events)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
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

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._json(
            status,
            {"error": {"message": message, "type": "invalid_request_error", "code": None}},
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class FakeOpenAI(BackgroundServer):
    """The fake API on 127.0.0.1 (a free port), served from a background thread."""

    def __init__(self) -> None:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.state = _State()
        super().__init__(server, "fake-openai")

    @property
    def base_url(self) -> str:
        return self.origin + "/v1"

    def script(self, command: str | None, *, final_text: str = "DONE") -> None:
        with self._server.state.lock:
            self._server.state.script = Script(command=command, final_text=final_text)

    @property
    def requests(self) -> list[Any]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    def tool_results(self) -> list[str]:
        """The content of every `tool` message the client sent back, in request order."""
        found: list[str] = []
        for body in self.requests:
            messages = body.get("messages") if isinstance(body, dict) else None
            if _ends_with_tool_result(messages):
                content = messages[-1].get("content")
                if isinstance(content, list):
                    content = "".join(
                        str(p.get("text", "")) for p in content if isinstance(p, dict)
                    )
                found.append(str(content))
        return found

    def models_json(self) -> dict[str, Any]:
        """pi's models.json registering this server as provider `fake`."""
        return {
            "providers": {
                "fake": {
                    "baseUrl": self.base_url,
                    "api": "openai-completions",
                    "apiKey": "dummy-key",
                    "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                    "models": [{"id": MODEL, "name": "Fake Model", "reasoning": False}],
                }
            }
        }
