"""The daemon's two wire formats, sans-IO (bytes in, values out; no sockets here).

Relay frames (Unix socket, command hook <-> daemon). One request and one reply per
connection; each is a header line and two length-prefixed blobs:

    request: b"AG1 <op> <fields-length> <body-length>\\n" + fields + body
    reply:   b"AG1 <exit-code> <stdout-length> <stderr-length>\\n" + stdout + stderr

`op` is `decide`, `ping`, `stop` or `sweep`; `fields` are NUL-separated `key=value` byte
strings (`agent=`, `cwd=`, `version=`, repeated `config=`, repeated `env=NAME=VALUE`;
`control=` for `stop` and `sweep`); `body` is the hook's stdin, untouched. A reply to `ping`
carries the daemon's status as `key=value` lines on stdout. A control op without the right
token is refused: exit 2 and one line on stderr, nothing done.

HTTP (127.0.0.1, Claude Code's `type: "http"` hooks) is h11's: askgate.daemon.http.

Imports nothing: the relay loads this module on every tool call.
"""

from __future__ import annotations

MAGIC = b"AG1"
OPS = (b"decide", b"ping", b"stop", b"sweep")
CONTROL_OPS = (b"stop", b"sweep")  # need `control=<token>` (askgate.daemon.paths.control_path)
MAX_FIELDS = 1 << 20  # a whole environment fits many times over
MAX_BODY = 10 * 1024 * 1024 + 1


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
