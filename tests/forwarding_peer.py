"""A parent or a child process for the forwarding tests (run with sys.executable).

forwarding_peer.py parent ROOT SESSION ANSWER [--mode watch|poll]
    Serves SESSION. ANSWER: approve | session | deny | hang. Prints "ready" once
    serving and "prompting <id> <agent>" for every prompt; stops when stdin closes.
forwarding_peer.py child ROOT TARGET [--timeout S] [--grace S] [--agent A] [--mode M]
    Forwards one ask to TARGET and prints the reply as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from askgate.forwarding.client import ForwardingPrompter
from askgate.forwarding.server import ForwardingServer
from askgate.prompters.base import PromptReply, PromptRequest, PromptState

ANSWERS = {
    "approve": PromptReply(state=PromptState.APPROVED),
    "session": PromptReply(state=PromptState.APPROVED_FOR_SESSION),
    "deny": PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="use pnpm"),
}


class ScriptPrompter:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.never = threading.Event()

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        print(f"prompting {request.request_id} {request.agent}", flush=True)
        if self.answer == "hang":
            self.never.wait()
        return ANSWERS[self.answer]


def parent(args: argparse.Namespace) -> int:
    server = ForwardingServer(
        args.session, ScriptPrompter(args.answer), root=args.root, mode=args.mode
    )
    server.start()
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    server.stop()
    return 0


def child(args: argparse.Namespace) -> int:
    prompter = ForwardingPrompter(
        args.target,
        requester_session=f"child-{args.agent}",
        root=args.root,
        mode=args.mode,
        serving_grace=args.grace,
    )
    started = time.monotonic()
    reply = prompter.prompt(
        PromptRequest(
            request_id="x",
            surface="bash",
            value="npm publish",
            message="Run npm publish?",
            agent=args.agent,
        ),
        timeout=args.timeout,
    )
    result = {
        "state": reply.state.value,
        "detail": reply.detail,
        "denial_reason": reply.denial_reason,
        "elapsed": time.monotonic() - started,
    }
    print(json.dumps(result), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    roles = parser.add_subparsers(dest="role", required=True)
    p = roles.add_parser("parent")
    p.add_argument("root")
    p.add_argument("session")
    p.add_argument("answer", choices=[*ANSWERS, "hang"])
    p.add_argument("--mode", default="watch")
    c = roles.add_parser("child")
    c.add_argument("root")
    c.add_argument("target")
    c.add_argument("--timeout", type=float, default=10.0)
    c.add_argument("--grace", type=float, default=2.0)
    c.add_argument("--agent", default="explore")
    c.add_argument("--mode", default="watch")
    args = parser.parse_args()
    return parent(args) if args.role == "parent" else child(args)


if __name__ == "__main__":
    sys.exit(main())
