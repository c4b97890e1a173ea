"""The gateway fails closed: a server that crashes, sends a broken or oversized frame, or
never answers ends the call with an error result and a reason; a client frame that is
malformed, oversized or a batch is answered with an error and never reaches the server.

The server is tests/mcp_bad_server.py, a real process that misbehaves on request; the client
is the MCP SDK's (or raw frames on the gateway's stdin where the SDK would refuse to send).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_harness import Gateway, text_of

POLICY = """
default = "deny"
[mcp]
"bad:*" = "allow"
"""
BAD_SERVER = str(Path(__file__).with_name("mcp_bad_server.py"))
LIMIT = 65536


def world(tmp_path: Path) -> tuple[Gateway, list[str], Path]:
    gw = Gateway(tmp_path, POLICY)
    log = tmp_path / "server-saw.jsonl"
    gw.env["MCP_BAD_SERVER_LOG"] = str(log)
    argv = gw.argv(
        [sys.executable, BAD_SERVER],
        "--name", "bad", "--max-message-bytes", str(LIMIT), "--call-timeout", "2",
    )  # fmt: skip
    return gw, argv, log


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("crash", "the MCP server exited"),
        ("truncated", "malformed frame"),
        ("huge", "over the limit"),
        ("silent", "did not answer within 2 s"),
    ],
)
def test_a_misbehaving_server_ends_the_call_with_an_error(
    tmp_path: Path, mode: str, why: str
) -> None:
    gw, argv, _ = world(tmp_path)

    async def main() -> tuple[Any, Any]:
        async with gw.session(argv) as session:
            first = await session.call_tool("act", {"mode": "ok"})
            bad = await session.call_tool("act", {"mode": mode})
            return first, bad

    first, bad = anyio.run(main)
    assert not first.is_error and text_of(first) == "did ok"
    assert bad.is_error
    assert why in text_of(bad)


def test_calls_after_the_server_crashed_are_refused_not_hung(tmp_path: Path) -> None:
    gw, argv, _ = world(tmp_path)

    async def main() -> tuple[Any, Any]:
        async with gw.session(argv) as session:
            crashed = await session.call_tool("act", {"mode": "crash"})
            try:
                later = await session.call_tool("act", {"mode": "ok"})
            except Exception as exc:  # the gateway may have exited with the server
                later = exc
            return crashed, later

    crashed, later = anyio.run(main)
    assert crashed.is_error
    assert isinstance(later, Exception) or later.is_error


def _raw(argv: list[str], env: dict[str, str], frames: list[bytes]) -> list[dict[str, Any]]:
    init = {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}},
    }  # fmt: skip
    stdin = json.dumps(init).encode() + b"\n" + b"".join(frames)
    stdin += json.dumps({"jsonrpc": "2.0", "id": 99, "method": "ping"}).encode() + b"\n"
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(stdin)
    proc.stdin.flush()
    answers: list[dict[str, Any]] = []
    while line := proc.stdout.readline():  # ends with the ping's answer: all came back
        answers.append(json.loads(line))
        if answers[-1].get("id") == 99:
            break
    proc.stdin.close()
    proc.wait(30)
    return answers


def test_bad_client_frames_are_answered_and_never_reach_the_server(tmp_path: Path) -> None:
    gw, argv, log = world(tmp_path)
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "act", "arguments": {"mode": "x" * (2 * LIMIT)}}}  # fmt: skip
    batch = [{"jsonrpc": "2.0", "id": 8, "method": "tools/call",
              "params": {"name": "act", "arguments": {"mode": "batched"}}}]  # fmt: skip
    frames = [
        json.dumps(call).encode() + b"\n",  # oversized
        b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {\n',  # malformed
        json.dumps(batch).encode() + b"\n",  # a batch
    ]
    answers = _raw(argv, gw.env, frames)
    by_id = {a.get("id"): a for a in answers}
    assert "error" in by_id[7] and "limit" in by_id[7]["error"]["message"]
    assert "error" in by_id[5]
    assert "error" in by_id[8] and "batch" in by_id[8]["error"]["message"]
    assert by_id[99]["result"] == {}
    saw = log.read_text()
    assert "tools/call" not in saw  # none of them reached the server
    assert '"ping"' in saw


def test_a_server_that_cannot_start_is_one_line_and_exit_2(tmp_path: Path) -> None:
    gw, _, _ = world(tmp_path)
    done = subprocess.run(
        gw.argv([str(tmp_path / "no-such-server")]), input=b"", capture_output=True,
        env=gw.env, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.decode().startswith("askgate mcp: error: cannot start the server")
    assert b"Traceback" not in done.stderr and done.stdout == b""
