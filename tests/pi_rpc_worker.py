"""A small worker that speaks pi's documented `--mode rpc` protocol (pi-ecosystem.md §3),
for client tests that need exact control over the frames (the real pi runs in the
end-to-end tests). Run as ``python pi_rpc_worker.py [options] --mode rpc ...``.

On `prompt` it answers the response (pi 1.6 style with ``--line 1.6``), streams a turn,
opens the scripted dialog and, when the answer allows it, "runs the tool": appends a
line to ``--side-effect``. Everything it receives is appended to ``--log`` as JSONL.
`steer` is answered with ``{"disposition": "queued"}``. With ``--hang`` it stops after the
prompt's response and waits for frames until its stdin ends (``--ignore-eof``: forever).
With ``--pid-file`` it writes its pid there; the end of its stdin is logged as
``{"type": "stdin-eof"}``.

With ``--mode json`` (pi's JSON print mode, the stdio transport) it reads the whole of
stdin as the prompt (logged as ``{"type": "stdin", "text": …}``), streams the same turn
without a UI (a dialog is a no-op: the tool is blocked), and exits. ``--crash`` crashes
in both modes, ``--crash-rpc`` only in rpc mode (before any tool starts).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

out = sys.stdout.buffer


def emit(frame: dict[str, Any], *, end: bytes = b"\n") -> None:
    out.write(json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + end)
    out.flush()


def raw(data: bytes) -> None:
    out.write(data)
    out.flush()


def read_frame(log: str | None) -> dict[str, Any] | None:
    line = sys.stdin.buffer.readline()
    if not line:
        return None
    frame = json.loads(line)
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(frame) + "\n")
    return frame


def options() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--line", default="0.73")
    p.add_argument(
        "--dialog", default="none", choices=["none", "confirm", "permission", "input", "malformed"]
    )
    p.add_argument("--dialog-timeout", type=int, default=0)
    p.add_argument("--side-effect")
    p.add_argument("--log")
    p.add_argument("--garbage", action="store_true")
    p.add_argument("--crlf", action="store_true")
    p.add_argument("--no-response", action="store_true")
    p.add_argument("--ignore-term", action="store_true")
    p.add_argument("--ignore-eof", action="store_true")
    p.add_argument("--crash", action="store_true")
    p.add_argument("--crash-rpc", action="store_true")
    p.add_argument("--crash-after-tool", action="store_true")
    p.add_argument("--hang", action="store_true")
    p.add_argument("--pid-file")
    p.add_argument("--mode", default="rpc")
    p.add_argument("--stderr-bytes", type=int, default=0)
    p.add_argument("--env-dump")
    p.add_argument("--text", default="All done\u2028with a line separator")
    args, _rest = p.parse_known_args()  # pi's own flags (--mode rpc, --model …) are ignored
    return args


def answer_allows(args: argparse.Namespace, answer: dict[str, Any]) -> bool:
    if answer.get("cancelled"):
        return False
    if args.dialog == "confirm":
        return answer.get("confirmed") is True
    if args.dialog == "permission":
        return answer.get("value") in ("Yes", "Yes, for this session")
    return True


def dialog(args: argparse.Namespace) -> dict[str, Any] | None:
    request: dict[str, Any] = {"type": "extension_ui_request", "id": "dlg-1"}
    if args.dialog == "confirm":
        request.update(method="confirm", title="Allow tool call?", message='bash {"command":"x"}')
    elif args.dialog == "permission":
        request.update(
            method="select",
            title="Permission Required\nbash command 'touch x'",
            options=["Yes", "Yes, for this session", "No", "No, provide reason"],
        )
    elif args.dialog == "malformed":  # documented fields with the wrong types
        request.update(method="confirm", title=["not", "a", "string"], timeout="soon")
    else:
        request.update(method="input", title="Your name?")
    if args.dialog_timeout:
        request["timeout"] = args.dialog_timeout
    emit(request)
    while True:
        frame = read_frame(args.log)
        if frame is None:
            return None
        if frame.get("type") == "extension_ui_response" and frame.get("id") == "dlg-1":
            if args.dialog == "permission" and frame.get("value") == "No, provide reason":
                emit(
                    {
                        "type": "extension_ui_request",
                        "id": "dlg-2",
                        "method": "input",
                        "title": "Permission Required\n"
                        "Share why this request was denied (optional).",
                        "placeholder": "Reason shown back to the agent",
                    }
                )
                continue
            return frame
        if frame.get("type") == "extension_ui_response" and frame.get("id") == "dlg-2":
            return {**frame, "denied_with_reason": True}


def turn(args: argparse.Namespace, *, has_ui: bool = True) -> None:
    emit({"type": "agent_start"})
    emit({"type": "extension_ui_request", "id": "s1", "method": "setStatus", "statusKey": "k"})
    emit({"type": "extension_ui_request", "id": "s2", "method": "notify", "message": "hi"})
    emit({"type": "extension_ui_request", "id": "s3", "method": "setStatus", "statusKey": "k"})
    emit({"type": "brand_new_event", "detail": {"x": 1}})
    if args.garbage:
        raw(b'this is not json\n{"no_type": 1}\n[1,2]\n{"type": \n')
    emit({"type": "response", "id": "nobody-asked", "command": "get_state", "success": True})
    allowed = True
    if args.dialog != "none" and not has_ui:
        allowed = False  # pi without a UI: dialog methods are no-ops, the gate blocks
    elif args.dialog != "none":
        answer = dialog(args)
        if answer is None:
            return
        allowed = answer_allows(args, answer)
    emit({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": {}})
    if args.crash_after_tool:
        sys.stderr.write("worker crashed after a tool started\n")
        sys.stderr.flush()
        os._exit(3)
    if allowed and args.side_effect:
        with open(args.side_effect, "a", encoding="utf-8") as fh:
            fh.write("ran\n")
    emit(
        {
            "type": "tool_execution_end",
            "toolCallId": "c1",
            "toolName": "bash",
            "result": {"content": [{"type": "text", "text": "ok" if allowed else "Blocked"}]},
            "isError": not allowed,
        }
    )
    message = {"role": "assistant", "content": [{"type": "text", "text": args.text}]}
    end = b"\r\n" if args.crlf else b"\n"
    emit({"type": "message_end", "message": message}, end=end)
    emit({"type": "agent_end", "messages": [message]}, end=end)
    if args.line.startswith("1."):
        emit({"type": "agent_settled", "aborted": False})


def json_mode(args: argparse.Namespace) -> int:
    text = sys.stdin.buffer.read().decode("utf-8", "replace")
    if args.log:
        with open(args.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"type": "stdin", "text": text}) + "\n")
    if args.crash:
        sys.stderr.write("worker crashed\n")
        return 3
    emit({"type": "session", "version": 3, "id": "s-1", "cwd": os.getcwd()})
    turn(args, has_ui=False)
    return 0


def log_eof(args: argparse.Namespace) -> None:
    if args.log:
        with open(args.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"type": "stdin-eof"}) + "\n")


def main() -> int:
    args = options()
    if args.pid_file:
        with open(args.pid_file, "w", encoding="utf-8") as fh:
            fh.write(str(os.getpid()))
    if args.env_dump:
        with open(args.env_dump, "w", encoding="utf-8") as fh:
            json.dump(dict(os.environ), fh)
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.stderr_bytes:
        sys.stderr.write("e" * args.stderr_bytes + "\nlast words\n")
        sys.stderr.flush()
    if args.mode == "json":
        return json_mode(args)
    last_text = ""
    while True:
        frame = read_frame(args.log)
        if frame is None:
            log_eof(args)
            break
        kind = frame.get("type")
        if kind == "prompt":
            if args.crash or args.crash_rpc:
                sys.stderr.write("worker crashed\n")
                return 3
            if args.no_response:
                continue
            data = {"disposition": "started"} if args.line.startswith("1.") else None
            response = {"type": "response", "command": "prompt", "success": True}
            if "id" in frame:
                response["id"] = frame["id"]
            if data:
                response["data"] = data
            emit(response)
            if args.hang:
                continue  # no turn: the run waits for the agent until it is stopped
            turn(args)
            last_text = args.text
        elif kind == "steer":
            emit(
                {
                    "type": "response",
                    "id": frame.get("id"),
                    "command": "steer",
                    "success": True,
                    "data": {"disposition": "queued"},
                }
            )
        elif kind == "get_last_assistant_text":
            emit(
                {
                    "type": "response",
                    "id": frame.get("id"),
                    "command": kind,
                    "success": True,
                    "data": {"text": last_text},
                }
            )
    if args.ignore_eof:
        while True:  # pretend to hang: only a signal ends this
            time.sleep(3600)
    return 0


if __name__ == "__main__":
    os.environ.pop("PYTHONSTARTUP", None)
    sys.exit(main())
