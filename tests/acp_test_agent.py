"""A small ACP agent for tests (Agent Client Protocol v1 over stdio, newline-delimited
JSON-RPC 2.0), following the protocol's documented messages: `initialize`, `session/new`,
`session/prompt` (answered with a `stopReason`), `session/cancel`, `session/update`
notifications and the agent -> client `session/request_permission` request.

Its "model" is the prompt text: a JSON object naming one tool call,
``{"kind": "execute", "command": "...", "title": "...", "options": [...]}`` or
``{"kind": "edit", "path": "...", "content": "..."}``. For each prompt it reports the tool
call (`tool_call`), asks permission, and runs it only when an option of kind
``allow_once``/``allow_always`` was selected: a command runs through ``bash -c`` in the
session's cwd, an edit writes the file. Everything it sends is appended to the file named by
``ACP_TEST_AGENT_LOG`` (so a test can compare what reached the client byte for byte).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any

DEFAULT_OPTIONS = [
    {"optionId": "opt-a", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "opt-b", "name": "Reject", "kind": "reject_once"},
    {"optionId": "opt-c", "name": "Allow", "kind": "allow_once"},
]

_write_lock = threading.Lock()
_next_id = 1000
_waiting: dict[int, threading.Event] = {}
_answers: dict[int, Any] = {}
_sessions: dict[str, str] = {}


def send(message: dict[str, Any]) -> None:
    line = json.dumps(message) + "\n"
    with _write_lock:
        log = os.environ.get("ACP_TEST_AGENT_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(line)
        sys.stdout.write(line)
        sys.stdout.flush()


def request(method: str, params: dict[str, Any]) -> Any:
    global _next_id
    with _write_lock:
        _next_id += 1
        request_id = _next_id
    event = threading.Event()
    _waiting[request_id] = event
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    event.wait()
    return _answers.pop(request_id)


def update(session_id: str, body: dict[str, Any]) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": body},
        }
    )


def run_prompt(request_id: Any, params: dict[str, Any]) -> None:
    session_id = params["sessionId"]
    text = "".join(b.get("text", "") for b in params["prompt"] if b.get("type") == "text")
    call = json.loads(text)
    call_id = f"call_{request_id}"
    kind = call["kind"]
    tool_call: dict[str, Any] = {
        "toolCallId": call_id,
        "title": call.get("title", call.get("command", call.get("path", kind))),
        "kind": kind,
        "status": "pending",
    }
    if kind == "execute" and "command" in call:
        tool_call["rawInput"] = {"command": call["command"]}
    if "path" in call:
        tool_call["locations"] = [{"path": call["path"]}]
    update(session_id, {"sessionUpdate": "tool_call", **tool_call})
    answer = request(
        "session/request_permission",
        {
            "sessionId": session_id,
            "toolCall": tool_call,
            "options": call.get("options", DEFAULT_OPTIONS),
        },
    )
    outcome = answer.get("outcome", {}) if isinstance(answer, dict) else {}
    if outcome.get("outcome") == "cancelled":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "cancelled"}})
        return
    options = {o["optionId"]: o["kind"] for o in call.get("options", DEFAULT_OPTIONS)}
    chosen = options.get(outcome.get("optionId"), "")
    status = "failed"
    if chosen.startswith("allow"):
        cwd = _sessions.get(session_id, os.getcwd())
        if kind == "execute":
            subprocess.run(["bash", "-c", call["command"]], cwd=cwd, check=False, timeout=30)
        else:
            with open(os.path.join(cwd, call["path"]), "w", encoding="utf-8") as out:
                out.write(call.get("content", ""))
        status = "completed"
    update(
        session_id, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}
    )
    send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method is None:  # a response to one of our requests
            _answers[message["id"]] = message.get("result")
            _waiting.pop(message["id"]).set()
        elif method == "initialize":
            result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "session/new":
            session_id = f"sess_{len(_sessions) + 1}"
            _sessions[session_id] = message["params"]["cwd"]
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": session_id}})
        elif method == "session/prompt":
            args = (message["id"], message["params"])
            threading.Thread(target=run_prompt, args=args, daemon=True).start()
        elif method == "session/cancel":
            pass  # the client answers outstanding permission requests with "cancelled"
        elif "id" in message:
            error = {"code": -32601, "message": f"method not found: {method}"}
            send({"jsonrpc": "2.0", "id": message["id"], "error": error})


if __name__ == "__main__":
    main()
