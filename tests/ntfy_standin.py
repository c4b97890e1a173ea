"""A local stand-in for an ntfy server and the ntfy phone app (no ntfy server can run here).

It follows ntfy's documented publish contract (docs.ntfy.sh/publish, "Publish as JSON", "Action
buttons", "Limitations") and refuses, as ntfy does with HTTP 400, a publish that breaks it:
JSON to the root URL; `topic` matching ``^[-_A-Za-z0-9]{1,64}$``; `message` at most 4,096 bytes;
`priority` 1-5; at most three actions, each `view`, `broadcast` or `http` with a `label`, and a
`url` for view and http (no `body` with GET/HEAD).

`perform(message, label)` then does what the Android app's UserActionWorker does for an `http`
action: it sends the action's method (default POST), headers and body to its URL from the
"phone"; success means a 2xx answer, and only then is the notification cleared.

`fail_first` makes the first N publishes answer 503 (for retry tests).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx

from standin_http import JsonHandler, serve, stop
from waits import SAFETY_TIMEOUT

TOPIC = re.compile(r"^[-_A-Za-z0-9]{1,64}$")
MESSAGE_LIMIT = 4096
ACTIONS_MAX = 3


def validate(body: Any) -> str | None:
    """ntfy's refusal for a JSON publish, or None when it would be accepted."""
    if not isinstance(body, dict):
        return "invalid request: body must be a JSON object"
    if not isinstance(body.get("topic"), str) or not TOPIC.fullmatch(body["topic"]):
        return "invalid topic"
    if len(str(body.get("message", "")).encode("utf-8")) > MESSAGE_LIMIT:
        return "message too large"
    priority = body.get("priority", 3)
    if not isinstance(priority, int) or not 1 <= priority <= 5:
        return "invalid priority"
    actions = body.get("actions", [])
    if not isinstance(actions, list) or len(actions) > ACTIONS_MAX:
        return "only 3 actions allowed"
    for action in actions:
        kind = action.get("action")
        if kind not in ("view", "broadcast", "http"):
            return f"action '{kind}' unknown"
        if not action.get("label"):
            return "action label required"
        if kind in ("view", "http") and not action.get("url"):
            return "action url required"
        if kind == "http" and action.get("method", "POST") in ("GET", "HEAD") and "body" in action:
            return "body not allowed with GET/HEAD"
    return None


@dataclass
class Performed:
    status: int
    cleared: bool
    error: str | None


@dataclass
class NtfyStandIn:
    fail_first: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    received: threading.Event = field(default_factory=threading.Event)
    attempts: int = 0
    authorizations: list[str] = field(default_factory=list)

    def start(self) -> NtfyStandIn:
        stand_in = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("content-length", 0)))
                stand_in.attempts += 1
                stand_in.authorizations.append(self.headers.get("authorization", ""))
                if stand_in.attempts <= stand_in.fail_first:
                    self._json(503, {"error": "temporarily unavailable"})
                    return
                try:
                    body = json.loads(data)
                except ValueError:
                    body = None
                problem = validate(body) if self.path == "/" else "JSON publish goes to /"
                if problem:
                    stand_in.refused.append(problem)
                    self._json(400, {"error": problem})
                    return
                stand_in.messages.append(body)
                stand_in.received.set()
                self._json(200, {"id": f"m{len(stand_in.messages)}", "event": "message"})

        self._server, self.url = serve(Handler)
        return self

    def close(self) -> None:
        stop(self._server)

    def wait(self, timeout: float = SAFETY_TIMEOUT) -> dict[str, Any]:
        assert self.received.wait(timeout), f"nothing published; refused: {self.refused}"
        return self.messages[-1]

    @staticmethod
    def perform(message: dict[str, Any], label: str) -> Performed:
        """Tap an http action button, like the phone app."""
        [action] = [a for a in message["actions"] if a["label"] == label]
        assert action["action"] == "http"
        try:
            response = httpx.request(
                action.get("method", "POST"),
                action["url"],
                headers=action.get("headers") or {},
                content=action.get("body", "").encode(),
                timeout=15,
            )
        except httpx.HTTPError as exc:
            return Performed(status=0, cleared=False, error=type(exc).__name__)
        ok = response.is_success
        return Performed(
            status=response.status_code,
            cleared=ok and bool(action.get("clear")),
            error=None if ok else f"HTTP {response.status_code}",
        )
