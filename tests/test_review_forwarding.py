"""Review: the forwarding shells under a broken prompter, hostile files and clock jumps."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from askgate.forwarding import ForwardingPrompter, ForwardingServer
from askgate.forwarding import client as client_module
from askgate.forwarding.protocol import Layout
from askgate.prompters.base import PromptReply, PromptRequest, PromptState
from peer_files import atomic_write
from waits import wait_until

REQUEST = PromptRequest(request_id="r", surface="bash", value="ls", message="run ls")


def _wait_for(path: Path) -> bytes:
    wait_until(path.exists, f"{path} to appear")
    return path.read_bytes()


def _request(request_id: str, target: str = "parent-1") -> bytes:
    return json.dumps(
        {
            "id": request_id,
            "createdAt": 1,
            "requesterSessionId": "child-1",
            "targetSessionId": target,
            "requesterAgentName": "Explore",
            "message": "Run it?",
        }
    ).encode()


class BrokenThenFine:
    """Returns garbage for the first prompt, a real approval afterwards."""

    def __init__(self) -> None:
        self.calls = 0

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None):  # type: ignore[no-untyped-def]
        self.calls += 1
        return None if self.calls == 1 else PromptReply(state=PromptState.APPROVED)


def test_a_prompter_returning_garbage_answers_unavailable_and_serving_goes_on(tmp_path) -> None:
    layout = Layout(tmp_path)
    with ForwardingServer("parent-1", BrokenThenFine(), root=tmp_path, rescan_interval=0.1):
        atomic_write(layout.request_path("parent-1", "1-a-1"), _request("1-a-1"))
        answer = json.loads(_wait_for(layout.response_path("parent-1", "1-a-1")))
        assert answer["approved"] is False and answer["state"] == "denied"
        assert answer["askgateState"] == "unavailable"
        # The prompt thread survived: the next request still reaches the human.
        atomic_write(layout.request_path("parent-1", "1-b-1"), _request("1-b-1"))
        answer = json.loads(_wait_for(layout.response_path("parent-1", "1-b-1")))
        assert answer["approved"] is True


def test_a_deeply_nested_request_is_refused_not_retried_forever(tmp_path) -> None:
    layout = Layout(tmp_path)
    with ForwardingServer("parent-1", BrokenThenFine(), root=tmp_path, rescan_interval=0.1):
        path = layout.request_path("parent-1", "1-deep-1")
        atomic_write(path, b'{"zz":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        old = time.time() - 60
        os.utime(path, (old, old))
        answer = json.loads(_wait_for(layout.response_path("parent-1", "1-deep-1")))
        assert answer["approved"] is False and answer["state"] == "denied"
        assert answer["askgateState"] == "unavailable"


def test_wall_clock_jumping_back_does_not_stretch_the_timeout(tmp_path, monkeypatch) -> None:
    real = client_module.now_ms
    calls = {"n": 0}

    def jumping() -> int:
        calls["n"] += 1
        # After the request is written the wall clock jumps an hour into the past.
        return real() - (3_600_000 if calls["n"] > 1 else 0)

    monkeypatch.setattr(client_module, "now_ms", jumping)
    prompter = ForwardingPrompter(
        "parent-1", root=tmp_path, require_heartbeat=False, mode="poll", poll_interval=0.05
    )
    replies: list[PromptReply] = []
    thread = threading.Thread(target=lambda: replies.append(prompter.prompt(REQUEST, 0.3)))
    thread.daemon = True
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "a clock jump stretched a 0.3 s timeout"
    assert replies[0].state is PromptState.TIMED_OUT
