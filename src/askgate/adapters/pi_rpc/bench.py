"""The decoder as benchmarks/rpc_codec.py measures it."""

from __future__ import annotations

from askgate.adapters.pi_rpc.frames import FrameDecoder

# What one read of the worker's stdout pipe returns at most (the client's read size).
CHUNK = 64 * 1024


def decode_stream(data: bytes) -> int:
    """Decode an in-memory stream the way the client reads a pipe (64 KiB at a time,
    frames handed on and dropped); the number of frames decoded."""
    decoder = FrameDecoder()
    count = 0
    view = memoryview(data)
    for start in range(0, len(data), CHUNK):
        count += len(decoder.feed(bytes(view[start : start + CHUNK])))
    return count + len(decoder.close())
