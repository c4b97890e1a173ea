"""TEMPORARY stub (lead's scratch): replaced by the helper's unchanged.py."""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Sequence


def snapshot(paths: Sequence[str]) -> bytes:
    out = bytearray()
    for path in paths:
        try:
            ns = os.lstat(path).st_ctime_ns
            sec, nsec = divmod(ns, 1_000_000_000)
        except OSError as error:
            sec = nsec = -1 if error.errno in (errno.ENOENT, errno.ENOTDIR) else -2
        out += struct.pack("<qq", sec, nsec) + os.fsencode(path) + b"\0"
    return bytes(out)


def changed(data: bytes) -> list[str]:
    found: list[str] = []
    offset = 0
    while offset < len(data):
        if offset + 16 > len(data):
            raise ValueError("truncated")
        sec, nsec = struct.unpack_from("<qq", data, offset)
        end = data.find(b"\0", offset + 16)
        if end < 0:
            raise ValueError("no NUL")
        path = os.fsdecode(data[offset + 16 : end])
        offset = end + 1
        try:
            ns = os.lstat(path).st_ctime_ns
            now = divmod(ns, 1_000_000_000)
        except OSError as error:
            now = (-1, -1) if error.errno in (errno.ENOENT, errno.ENOTDIR) else (-3, -3)
        if now != (sec, nsec) or sec == -2:
            found.append(path)
    return found


def program(machine: str | None = None) -> bytes | None:
    return None
