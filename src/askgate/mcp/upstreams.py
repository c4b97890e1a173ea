"""Where the gateway's server frames go: a child process on stdio, or a Streamable HTTP
endpoint (MCP 2025-03-26 and later: one URL; each client message is a POST whose answer is
JSON or a Server-Sent Events stream; ``Mcp-Session-Id`` carries the session; a GET opens
the stream of messages the server starts).

The HTTP upstream is the client side of Streamable HTTP: the agent talks to the gateway on
stdio (as to any local server) and the gateway talks HTTP to the remote server. A request
the server cannot be reached for, or answers with an HTTP error, ends with an error result.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from askgate.mcp.core import INITIALIZE, Action, ToServer
from askgate.mcp.frames import PREFIX_BYTES, Oversized

Perform = Callable[[list[Action]], Awaitable[None]]
FromServer = Callable[[bytes | Oversized], list[Action]]
Failed = Callable[[Any, str], list[Action]]
HTTP_TIMEOUT_S = 30.0


class StdioUpstream:
    def __init__(self, stdin: asyncio.StreamWriter) -> None:
        self.stdin = stdin

    async def send(self, action: ToServer) -> None:
        if self.stdin.is_closing():
            return  # the server is gone: the core answers what is open
        try:
            self.stdin.write(action.data)
            await self.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            return

    async def close(self) -> None:
        if not self.stdin.is_closing():
            self.stdin.close()


class HttpUpstream:
    """Streamable HTTP to `url`, each POST in its own task (answers can take long)."""

    def __init__(
        self,
        url: str,
        *,
        perform: Perform,
        from_server: FromServer,
        failed: Failed,
        limit: int,
        headers: Mapping[str, str] | None = None,
        spawn: Callable[[Awaitable[None]], None],
    ) -> None:
        import httpx

        self.url = url
        self.perform = perform
        self.from_server = from_server
        self.failed = failed
        self.limit = limit
        self.spawn = spawn
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._listening = False
        timeout = httpx.Timeout(HTTP_TIMEOUT_S, read=None)
        # trust_env=False: no proxy or netrc from the environment redirects the calls.
        self.client = httpx.AsyncClient(timeout=timeout, trust_env=False,
                                        headers=dict(headers or {}))  # fmt: skip

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def send(self, action: ToServer) -> None:
        initializing = action.is_request and _method(action.data) == INITIALIZE
        if initializing:
            await self._post(action, initializing=True)  # the session id comes back here
        else:
            self.spawn(self._post(action, initializing=False))

    async def _post(self, action: ToServer, *, initializing: bool) -> None:
        import httpx

        try:
            async with self.client.stream(
                "POST", self.url, content=action.data, headers=self._headers()
            ) as response:
                if initializing and response.headers.get("mcp-session-id"):
                    self.session_id = response.headers["mcp-session-id"]
                if response.status_code >= 400:
                    why = f"the MCP server answered HTTP {response.status_code}"
                    if action.is_request:
                        await self.perform(self.failed(action.request_id, why))
                    return
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if kind == "text/event-stream":
                    await self._events(response, initializing)
                elif kind == "application/json":
                    body = await _bounded(response, self.limit)
                    await self._deliver(body, initializing)
                elif action.is_request and response.status_code != 202:
                    why = f"the MCP server answered with content type {kind!r}"
                    await self.perform(self.failed(action.request_id, why))
        except httpx.HTTPError as exc:
            if action.is_request:
                why = f"cannot reach the MCP server: {type(exc).__name__}: {exc}"[:500]
                await self.perform(self.failed(action.request_id, why))
        else:
            if action.is_request:  # a no-op once answered; else the stream ended without one
                why = "the MCP server ended its answer stream without answering"
                await self.perform(self.failed(action.request_id, why))
        if initializing and self.session_id and not self._listening:
            self._listening = True
            self.spawn(self._listen())

    async def _deliver(self, body: bytes | Oversized, initializing: bool) -> None:
        if initializing and isinstance(body, bytes):
            self._learn_version(body)
        if isinstance(body, bytes) and body.lstrip().startswith(b"["):
            try:
                items = msgspec.json.decode(body)
            except msgspec.DecodeError:
                items = None
            if isinstance(items, list):
                for item in items:
                    await self.perform(self.from_server(msgspec.json.encode(item)))
                return
        await self.perform(self.from_server(body))

    def _learn_version(self, body: bytes) -> None:
        try:
            message = msgspec.json.decode(body)
        except msgspec.DecodeError:
            return
        result = message.get("result") if isinstance(message, dict) else None
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str) and version.isprintable() and len(version) < 64:
            self.protocol_version = version

    async def _events(self, response: Any, initializing: bool) -> None:
        data: list[bytes] = []
        size = 0
        over = False
        async for line in response.aiter_lines():
            if line == "":
                if over:
                    head = b"\n".join(data)[:PREFIX_BYTES]
                    await self.perform(self.from_server(Oversized(prefix=head, size=size)))
                elif data:
                    await self._deliver(b"\n".join(data), initializing)
                data, size, over = [], 0, False
                continue
            if not line.startswith("data:"):
                continue  # event:, id:, retry: and comments
            chunk = line[5:].removeprefix(" ").encode("utf-8", "surrogateescape")
            size += len(chunk)
            if size > self.limit:
                if not over:
                    data = [b"\n".join(data)[:PREFIX_BYTES]]
                over = True
                continue
            data.append(chunk)
        if data and not over:
            await self._deliver(b"\n".join(data), initializing)

    async def _listen(self) -> None:
        """The GET stream of server-started messages (a server without one says 405)."""
        import httpx

        headers = self._headers()
        headers.pop("Content-Type", None)
        headers["Accept"] = "text/event-stream"
        with contextlib.suppress(httpx.HTTPError):
            async with self.client.stream("GET", self.url, headers=headers) as response:
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code == 200 and kind == "text/event-stream":
                    await self._events(response, False)

    async def close(self) -> None:
        import httpx

        if self.session_id:
            with contextlib.suppress(httpx.HTTPError):
                await self.client.request("DELETE", self.url, headers=self._headers())
        await self.client.aclose()


async def _bounded(response: Any, limit: int) -> bytes | Oversized:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            head = b"".join(parts)[:PREFIX_BYTES] or chunk[:PREFIX_BYTES]
            return Oversized(prefix=head, size=size)
        parts.append(chunk)
    return b"".join(parts)


def _method(frame: bytes) -> str | None:
    try:
        message = msgspec.json.decode(frame)
    except msgspec.DecodeError:
        return None
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None
