"""`askgate mcp --listen`: the client side of the gateway over Streamable HTTP.

The gateway listens on 127.0.0.1 (one endpoint, any path) for one client session:

* ``POST`` with a request: the frame goes through the core like a stdio line; the answer is an
  event stream that carries whatever the gateway has for the client while the request is open
  (an elicitation, the server's notifications) and ends with the request's response;
* ``POST`` with a notification or a response: ``202 Accepted``;
* ``GET``: an event stream of messages for the client that belong to no open request;
* ``DELETE``: ends the session (the gateway keeps running for the next ``initialize``).

The session id is issued with the ``initialize`` answer (``Mcp-Session-Id``) and required on
every later request (404 otherwise, as the transport says). A request whose ``Origin`` is not
this loopback address is refused (403: a web page must not drive the gateway). Bodies over the
message limit are refused (413).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from askgate.mcp.frames import Oversized

FromClient = Callable[[bytes | Oversized], Awaitable[None]]
_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class ClientSide:
    """Routes the gateway's client frames to the HTTP exchanges waiting for them."""

    def __init__(self, from_client: FromClient | None = None, *, limit: int, port: int) -> None:
        self.from_client = from_client
        self.limit = limit
        self.port = port
        self.session_id: str | None = None
        self._waiting: dict[bytes, asyncio.Queue[bytes | None]] = {}  # request id -> stream
        self._general: asyncio.Queue[bytes] = asyncio.Queue()  # for the GET stream
        self._listening = 0

    async def to_client(self, data: bytes) -> None:
        """Relay's writer: a response goes to its request's stream; anything else to the
        GET stream, else to an open request's stream, else it waits for a GET."""
        key = _response_key(data)
        if key is not None and key in self._waiting:
            queue = self._waiting.pop(key)
            await queue.put(data)
            await queue.put(None)
            return
        if not self._listening and self._waiting:
            await next(reversed(self._waiting.values())).put(data)
            return
        await self._general.put(data)

    # --- ASGI -----------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if origin is not None and origin not in self._origins():
            await _plain(send, 403, "forbidden origin")
            return
        method = scope["method"]
        sent_id = headers.get("mcp-session-id")
        if self.session_id and sent_id is not None and sent_id != self.session_id:
            await _plain(send, 404, "unknown session")
            return
        if self.session_id and sent_id is None and method in ("GET", "DELETE"):
            await _plain(send, 400, "missing Mcp-Session-Id")
            return
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "GET":
            await self._get(headers, send)
        elif method == "DELETE":
            self.session_id = None
            await _plain(send, 200, "")
        else:
            await _plain(send, 405, "method not allowed")

    def _origins(self) -> set[str]:
        return {f"http://{host}:{self.port}" for host in ("127.0.0.1", "localhost")}

    async def _post(self, headers: dict[str, str], receive: Any, send: Any) -> None:
        body = await _body(receive, self.limit)
        if body is None:
            await _plain(send, 413, "message over the gateway's limit")
            return
        try:
            message = _decoder.decode(body)
        except msgspec.DecodeError:
            message = None
        is_request = isinstance(message, dict) and "method" in message and "id" in message
        initializing = is_request and message.get("method") == "initialize"
        if not initializing and self.session_id and "mcp-session-id" not in headers:
            await _plain(send, 400, "missing Mcp-Session-Id")
            return
        assert self.from_client is not None
        if not is_request:
            await self.from_client(body)  # a parse error is answered on the GET stream
            await _plain(send, 202, "")
            return
        assert isinstance(message, dict)
        key = _encoder.encode(message["id"])
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._waiting[key] = queue
        extra: list[tuple[bytes, bytes]] = []
        if initializing:
            self.session_id = os.urandom(16).hex()
            extra.append((b"mcp-session-id", self.session_id.encode()))
        await send({
            "type": "http.response.start", "status": 200,
            "headers": [(b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-cache"), *extra],
        })  # fmt: skip
        await self.from_client(body)
        while (frame := await queue.get()) is not None:
            await _event(send, frame, more=True)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _get(self, headers: dict[str, str], send: Any) -> None:
        if "text/event-stream" not in headers.get("accept", ""):
            await _plain(send, 406, "accept text/event-stream")
            return
        self._listening += 1
        try:
            await send({
                "type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream"),
                            (b"cache-control", b"no-cache")],
            })  # fmt: skip
            await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
            while True:
                frame = await self._general.get()
                await _event(send, frame, more=True)
        finally:
            self._listening -= 1


def _response_key(data: bytes) -> bytes | None:
    try:
        message = _decoder.decode(data)
    except msgspec.DecodeError:
        return None
    if not isinstance(message, dict) or "method" in message or "id" not in message:
        return None
    return _encoder.encode(message["id"])


async def _event(send: Any, frame: bytes, *, more: bool) -> None:
    data = b"event: message\ndata: " + frame.rstrip(b"\r\n") + b"\n\n"
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def _plain(send: Any, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})  # fmt: skip
    await send({"type": "http.response.body", "body": text.encode(), "more_body": False})


async def _body(receive: Any, limit: int) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(parts)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body"):
            return b"".join(parts)


async def serve(side: ClientSide, sock: Any) -> None:
    """Serve `side` on the bound socket until cancelled."""
    import uvicorn

    config = uvicorn.Config(side, log_level="error", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    await server.serve(sockets=[sock])
