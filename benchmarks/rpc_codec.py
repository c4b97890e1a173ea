"""Area 5: pi RPC codec — decode a strict-LF JSONL stream of pi `--mode rpc` frames.

askgate's decoder is reached through `askgate.adapters.pi_rpc.bench.decode_stream(data:
bytes) -> int` (frames decoded); until that exists the askgate column says
"not built yet" and only the baselines are measured: the naive loop every RPC client
sketch uses (text readline + `json.loads`), and msgspec splitting on b"\\n" as a
ceiling for what a Python decoder can reach.
"""

from __future__ import annotations

import importlib
import io
import json
import random
import time
from collections.abc import Callable
from typing import Any

import msgspec

from benchmarks.harness import NOT_BUILT, AreaReport, Budget, Figure, Row, sample_calls

NAME = "rpc_codec"
TITLE = "pi RPC codec, decode a JSONL frame stream from memory"

SEED = 4242


def _frame(rng: random.Random, k: int) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.6:
        text = rng.choice(
            ["Let me look", " at the", " file", " — ok", " ✓ done", " naïve\u2028text"]
        )
        return {
            "type": "message_update",
            "message": {"role": "assistant", "id": f"m{k // 50}"},
            "assistantMessageEvent": {"type": "text_delta", "delta": text, "contentIndex": 0},
        }
    if roll < 0.8:
        return {
            "type": "tool_execution_start",
            "toolCallId": f"call_{k}",
            "toolName": "bash",
            "args": {"command": f"git diff --stat HEAD~{k % 7} | head -n {k % 40}"},
        }
    if roll < 0.93:
        lines = [f"src/file_{rng.randrange(500)}.py | {rng.randrange(99)} ++--" for _ in range(20)]
        return {
            "type": "tool_execution_end",
            "toolCallId": f"call_{k}",
            "toolName": "bash",
            "result": {"content": [{"type": "text", "text": "\n".join(lines)}]},
            "isError": False,
        }
    if roll < 0.98:
        return {
            "type": "extension_ui_request",
            "id": f"ui-{k}",
            "method": "setStatus",
            "statusKey": "permissions",
            "statusText": f"{k} checks",
        }
    return {
        "type": "extension_ui_request",
        "id": f"ui-{k}",
        "method": "select",
        "title": "Permission request\nbash: rm -rf build",
        "options": ["Yes", "Yes, for this session", "No", "No, provide reason"],
        "timeout": 60000,
    }


def make_stream(frames: int, seed: int = SEED) -> bytes:
    rng = random.Random(seed)
    # ensure_ascii=False: real pi output carries raw UTF-8, including U+2028.
    return b"".join(
        json.dumps(_frame(rng, k), ensure_ascii=False).encode() + b"\n" for k in range(frames)
    )


def naive_decode(data: bytes) -> int:
    n = 0
    for line in io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="\n"):
        json.loads(line)
        n += 1
    return n


_decoder = msgspec.json.Decoder()


def msgspec_decode(data: bytes) -> int:
    n = 0
    for line in data.split(b"\n"):
        if line:
            _decoder.decode(line)
            n += 1
    return n


def _ours() -> Callable[[bytes], int] | str:
    try:
        bench = importlib.import_module("askgate.adapters.pi_rpc.bench")
    except ImportError:
        try:
            importlib.import_module("askgate.adapters.pi_rpc")
        except ImportError:
            return NOT_BUILT
        return "pi_rpc present; no bench.decode_stream(data) -> frames yet"
    decode = getattr(bench, "decode_stream", None)
    if not callable(decode):
        return "pi_rpc present; no bench.decode_stream(data) -> frames yet"
    return decode  # type: ignore[no-any-return]


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    frames = 3_000 if quick else 50_000
    data = make_stream(frames)
    budget = (
        Budget(warmup=1, min_samples=3, max_samples=20, seconds=0.3)
        if quick
        else Budget(warmup=2, min_samples=10, max_samples=200, seconds=5.0)
    )
    notes: list[str] = []

    def figure(name: str, decode: Callable[[bytes], int]) -> Figure:
        got = decode(data)
        if got != frames:
            raise RuntimeError(f"{name} decoded {got} frames, expected {frames}")
        stats = sample_calls(lambda _i: decode(data), budget)
        return Figure(name=name, stats=stats, items=frames, item_name="frames", bytes=len(data))

    ours_fn = _ours()
    if isinstance(ours_fn, str):
        ours = Figure(name="askgate", note=ours_fn)
    else:
        ours = figure("askgate", ours_fn)
    peers = (
        figure("readline + json.loads", naive_decode),
        figure("msgspec split (ceiling)", msgspec_decode),
    )
    notes.append(
        f"stream: {frames:,} frames, {len(data) / 1e6:.1f} MB, seeded mix of message_update, "
        "tool_execution_*, extension_ui_request; raw UTF-8 incl. U+2028"
    )
    row = Row(
        measured=f"decode {frames:,} frames ({len(data) / 1e6:.1f} MB)", ours=ours, peers=peers
    )
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok" if ours.stats is not None else NOT_BUILT,
        rows=(row,),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )
