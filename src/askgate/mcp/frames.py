"""Newline-delimited JSON-RPC framing, bounded (sans-IO: bytes in, frames out).

MCP's stdio transport sends one JSON-RPC message per line, with no newline inside a
message. `Lines` splits a byte stream into such lines and refuses to hold more than `limit`
bytes of one: the rest of an oversized line is discarded as it arrives and reported once
as `Oversized`, with its first bytes (enough to find the id of the request it carried).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

DEFAULT_LIMIT = 16 * 1024 * 1024
PREFIX_BYTES = 4096


class Oversized(msgspec.Struct, frozen=True):
    """A line longer than the limit: dropped; `prefix` is its beginning."""

    prefix: bytes
    size: int  # bytes seen before the line was given up (at least the limit)


class Lines:
    """Feed bytes, get complete lines (each with its b"\\n") and `Oversized` reports."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._held = 0
        self._discarding: Oversized | None = None

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            chunk = data[start:] if end < 0 else data[start : end + 1]
            start += len(chunk)
            if self._discarding is not None:
                if end >= 0:
                    out.append(self._discarding)
                    self._discarding = None
                continue
            if self._held + len(chunk) > self.limit + (1 if end >= 0 else 0):
                head = b"".join(self._parts)[:PREFIX_BYTES] or chunk[:PREFIX_BYTES]
                report = Oversized(prefix=head, size=self._held + len(chunk))
                self._parts, self._held = [], 0
                if end >= 0:
                    out.append(report)
                else:
                    self._discarding = report
                continue
            if end < 0:
                self._parts.append(chunk)
                self._held += len(chunk)
                continue
            if self._parts:
                self._parts.append(chunk)
                chunk = b"".join(self._parts)
                self._parts, self._held = [], 0
            out.append(chunk)
        return out

    def end(self) -> list[bytes | Oversized]:
        """The stream closed: an unterminated last line is still a line."""
        if self._discarding is not None:
            report, self._discarding = self._discarding, None
            return [report]
        if self._parts:
            line = b"".join(self._parts)
            self._parts, self._held = [], 0
            return [line]
        return []


_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?[0-9]{1,30})')


def guess_id(prefix: bytes) -> Any:
    """The id an unparsable or oversized message most likely carried (the first ``"id"``
    member in its first bytes), or None. Used only to end that request with an error:
    a wrong guess ends another call with an error, never lets anything through."""
    match = _ID.search(prefix[:PREFIX_BYTES])
    if match is None:
        return None
    try:
        return msgspec.json.decode(match.group(1))
    except msgspec.DecodeError:
        return None
