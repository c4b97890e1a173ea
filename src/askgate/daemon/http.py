"""The daemon's HTTP/1.1 side, on h11 (a maintained sans-IO HTTP implementation).

One connection at a time per thread: read a request (head and whole body), hand it to an
`answer` function, write the JSON response, and keep the connection open while both sides
allow it. A request h11 cannot parse, or a body over the limit, gets a 400 and the
connection is closed. Only the daemon imports this (never the relay).
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass

import h11

MAX_HEAD = 8 * 1024
MAX_BODY = 10 * 1024 * 1024
READ_CHUNK = 65536
REASONS = {200: b"OK", 400: b"Bad Request", 401: b"Unauthorized", 404: b"Not Found"}
REASONS |= {405: b"Method Not Allowed"}


@dataclass(frozen=True)
class HttpRequest:
    method: str
    target: str
    headers: dict[str, str]  # names lower-case; a repeated header keeps its last value
    body: bytes


Answer = Callable[[HttpRequest], tuple[int, bytes]]


class _BadRequest(Exception):
    """The request cannot be answered: 400, then close."""


def _read_request(conn: socket.socket, h: h11.Connection) -> HttpRequest | None:
    """The next whole request on `conn`, None when the peer closed between requests."""
    head: h11.Request | None = None
    body = bytearray()
    while True:
        try:
            event = h.next_event()
        except h11.RemoteProtocolError as exc:
            raise _BadRequest(str(exc)) from None
        if event is h11.NEED_DATA:
            chunk = conn.recv(READ_CHUNK)
            h.receive_data(chunk)  # b"" tells h11 the peer closed
            continue
        if isinstance(event, h11.ConnectionClosed):
            if head is not None:
                raise _BadRequest("connection closed inside a request")
            return None
        if isinstance(event, h11.Request):
            if sum(len(n) + len(v) + 4 for n, v in event.headers) > MAX_HEAD:
                raise _BadRequest("request head too large")
            head = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_BODY:
                raise _BadRequest("request body too large")
        elif isinstance(event, h11.EndOfMessage):
            assert head is not None
            headers = {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in head.headers
            }
            return HttpRequest(
                head.method.decode("ascii", "replace"),
                head.target.decode("latin-1"),
                headers,
                bytes(body),
            )


def _send(conn: socket.socket, h: h11.Connection, status: int, body: bytes) -> None:
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    reason = REASONS.get(status, b"Error")
    data = h.send(h11.Response(status_code=status, headers=headers, reason=reason))
    data = (data or b"") + (h.send(h11.Data(data=body)) or b"")
    data += h.send(h11.EndOfMessage()) or b""
    conn.sendall(data)


def serve_connection(conn: socket.socket, answer: Answer, stopping: Callable[[], bool]) -> None:
    """Answer requests on `conn` until the peer or the protocol closes it."""
    h = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    try:
        while not stopping():
            try:
                request = _read_request(conn, h)
            except _BadRequest as exc:
                if h.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    with contextlib.suppress(h11.LocalProtocolError, OSError):
                        _send(conn, h, 400, json.dumps({"error": str(exc)}).encode())
                return
            if request is None:
                return
            status, body = answer(request)
            _send(conn, h, status, body)
            if h.our_state is not h11.DONE or h.their_state is not h11.DONE:
                return  # one side asked to close (Connection: close, HTTP/1.0)
            h.start_next_cycle()
    except OSError:
        return
