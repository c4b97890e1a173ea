"""The daemon's two wire formats, sans-IO (bytes in, values out; no sockets here).

Relay frames (Unix socket, command hook <-> daemon). One request and one reply per
connection; each is a header line and two length-prefixed blobs:

    request: b"AG1 <op> <fields-length> <body-length>\\n" + fields + body
    reply:   b"AG1 <exit-code> <stdout-length> <stderr-length>\\n" + stdout + stderr

`op` is `decide`, `ping` or `stop`; `fields` are NUL-separated `key=value` byte strings
(`cwd=`, `version=`, repeated `config=`, repeated `env=NAME=VALUE`); `body` is the hook's
stdin, untouched. A reply to `ping` carries the daemon's status as `key=value` lines on
stdout.

HTTP (127.0.0.1, Claude Code's `type: "http"` hooks): just enough HTTP/1.1 to read a
POST with a Content-Length body (keep-alive allowed) and write a response.

Imports nothing: the relay loads this module on every tool call.
"""

from __future__ import annotations

MAGIC = b"AG1"
OPS = (b"decide", b"ping", b"stop")
MAX_FIELDS = 1 << 20  # a whole environment fits many times over
MAX_BODY = 10 * 1024 * 1024 + 1
MAX_HEAD = 8 * 1024
MAX_HTTP_BODY = 10 * 1024 * 1024


class ProtocolError(Exception):
    """Bytes that are not a frame of this protocol: the peer is dropped."""


# --- relay frames ----------------------------------------------------------------------


def encode_request(op: bytes, fields: list[bytes], body: bytes = b"") -> bytes:
    blob = b"\0".join(fields)
    return b"%s %s %d %d\n" % (MAGIC, op, len(blob), len(body)) + blob + body


def encode_reply(code: int, stdout: bytes, stderr: bytes) -> bytes:
    return b"%s %d %d %d\n" % (MAGIC, code, len(stdout), len(stderr)) + stdout + stderr


def _split_head(buf: bytes, limit: int) -> tuple[list[bytes], int] | None:
    end = buf.find(b"\n", 0, 64)
    if end < 0:
        if len(buf) >= 64:
            raise ProtocolError("frame header too long")
        return None
    parts = buf[:end].split(b" ")
    if len(parts) != 4 or parts[0] != MAGIC:
        raise ProtocolError("not an askgate relay frame")
    for size in parts[2:]:
        if not size.isdigit() or int(size) > limit:
            raise ProtocolError("bad frame length")
    return parts, end + 1


def decode_request(buf: bytes) -> tuple[bytes, list[bytes], bytes] | None:
    """(op, fields, body) once `buf` holds a whole request, None while it is short."""
    head = _split_head(buf, max(MAX_FIELDS, MAX_BODY))
    if head is None:
        return None
    parts, start = head
    op, n_fields, n_body = parts[1], int(parts[2]), int(parts[3])
    if op not in OPS or n_fields > MAX_FIELDS or n_body > MAX_BODY:
        raise ProtocolError("bad relay request")
    if len(buf) < start + n_fields + n_body:
        return None
    if len(buf) > start + n_fields + n_body:
        raise ProtocolError("trailing bytes after the request")
    blob = buf[start : start + n_fields]
    fields = blob.split(b"\0") if blob else []
    return op, fields, buf[start + n_fields :]


def decode_reply(buf: bytes) -> tuple[int, bytes, bytes] | None:
    """(exit code, stdout, stderr) once `buf` holds a whole reply, None while it is short."""
    head = _split_head(buf, MAX_BODY)
    if head is None:
        return None
    parts, start = head
    if parts[1] not in (b"0", b"2"):
        raise ProtocolError("reply exit code is neither 0 nor 2")
    n_out, n_err = int(parts[2]), int(parts[3])
    if len(buf) < start + n_out + n_err:
        return None
    if len(buf) > start + n_out + n_err:
        raise ProtocolError("trailing bytes after the reply")
    return int(parts[1]), buf[start : start + n_out], buf[start + n_out :]


def fields_of(fields: list[bytes]) -> dict[bytes, list[bytes]]:
    out: dict[bytes, list[bytes]] = {}
    for item in fields:
        key, sep, value = item.partition(b"=")
        if not sep:
            raise ProtocolError("field without '='")
        out.setdefault(key, []).append(value)
    return out


# --- HTTP ---------------------------------------------------------------------------------


class HttpRequest:
    __slots__ = ("body", "headers", "keep_alive", "method", "target")

    def __init__(
        self, method: str, target: str, headers: dict[str, str], body: bytes, keep_alive: bool
    ) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive


def decode_http(buf: bytes) -> tuple[HttpRequest, int] | None:
    """(request, bytes consumed) once `buf` starts with a whole request, None while short.
    Chunked bodies are refused (ProtocolError -> 400): Claude Code sends Content-Length."""
    end = buf.find(b"\r\n\r\n", 0, MAX_HEAD + 4)
    if end < 0:
        if len(buf) > MAX_HEAD:
            raise ProtocolError("request head too large")
        return None
    lines = buf[:end].decode("latin-1").split("\r\n")
    request_line = lines[0].split(" ")
    if len(request_line) != 3 or not request_line[2].startswith("HTTP/1."):
        raise ProtocolError("bad request line")
    method, target, version = request_line
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise ProtocolError("bad header line")
        headers[name.lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise ProtocolError("chunked request bodies are not supported")
    length_text = headers.get("content-length", "0")
    if not length_text.isdigit() or int(length_text) > MAX_HTTP_BODY:
        raise ProtocolError("bad Content-Length")
    length = int(length_text)
    start = end + 4
    if len(buf) < start + length:
        return None
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    body = buf[start : start + length]
    return HttpRequest(method, target, headers, body, keep_alive), start + length


REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
}


def encode_http(status: int, body: bytes, *, keep_alive: bool) -> bytes:
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("ascii") + body
