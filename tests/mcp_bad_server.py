"""A small stdio MCP server that misbehaves on request, for the gateway's fail-closed tests.

It answers `initialize` and `tools/list` (one tool, ``act``, with a ``mode`` argument) like
any server; a `tools/call` of ``act`` does what ``mode`` says: ``ok`` answers, ``crash``
exits, ``truncated`` writes half a JSON frame, ``huge`` writes one line of 2 MiB, ``silent``
never answers. Every line it receives is appended to $MCP_BAD_SERVER_LOG (what the server
saw). Hand-written on purpose: an SDK server would not misbehave.
"""

from __future__ import annotations

import json
import os
import sys


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    log = os.environ.get("MCP_BAD_SERVER_LOG")
    for line in sys.stdin:
        if log:
            with open(log, "a") as f:
                f.write(line)
        message = json.loads(line)
        method, mid = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bad", "version": "1"},
            }})  # fmt: skip
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"mode": {"type": "string"}}}
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
                {"name": "act", "inputSchema": schema},
            ]}})  # fmt: skip
        elif method == "tools/call":
            mode = message["params"].get("arguments", {}).get("mode")
            if mode == "crash":
                sys.exit(3)
            if mode == "truncated":
                sys.stdout.write(f'{{"jsonrpc": "2.0", "id": {json.dumps(mid)}, "result": {{\n')
                sys.stdout.flush()
            elif mode == "huge":
                text = "x" * (2 * 1024 * 1024)
                send({"jsonrpc": "2.0", "id": mid,
                      "result": {"content": [{"type": "text", "text": text}]}})  # fmt: skip
            elif mode == "silent":
                continue
            else:
                content = [{"type": "text", "text": f"did {mode}"}]
                send({"jsonrpc": "2.0", "id": mid, "result": {"content": content}})
        elif mid is not None:
            send({"jsonrpc": "2.0", "id": mid, "result": {}})


if __name__ == "__main__":
    main()
