"""`askgate forward serve|status`: usage errors, status output, and serve answering a
real child process from its (piped) terminal input."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from askgate.forward_cli import main, status
from askgate.forwarding import ForwardingPrompter, ForwardingServer
from askgate.forwarding.io import HOST, now_ms
from askgate.forwarding.protocol import Heartbeat, Layout, decode_heartbeat, encode
from askgate.prompters.base import PromptReply, PromptRequest, PromptState
from peer_files import atomic_write
from waits import SAFETY_TIMEOUT, wait_until


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([], "required"),
        (["serve"], "--session"),
        (["bogus"], "invalid choice"),
        (["serve", "--session", "s", "--poll-interval", "0"], "must be positive"),
        (["serve", "--session", "s", "--poll-interval", "soon"], "invalid float"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(argv, fragment, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err and err.startswith("askgate forward: ")


def test_status_without_a_directory(tmp_path) -> None:
    out = io.StringIO()
    assert status(tmp_path / "missing", out) == 0
    assert "no forwarding directory" in out.getvalue()


class Approver:
    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        return PromptReply(state=PromptState.APPROVED)


def test_status_lists_serving_stale_and_dead_sessions_and_pending_requests(tmp_path) -> None:
    layout = Layout(tmp_path)
    stale = Heartbeat(
        session_id="old",
        pid=os.getpid(),
        host=HOST,
        refreshed_at=now_ms() - 60_000,
        interval_ms=2000,
    )
    atomic_write(layout.heartbeat_path("old"), encode(stale))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(10)
    dead = Heartbeat(
        session_id="dead", pid=gone.pid, host=HOST, refreshed_at=now_ms(), interval_ms=2000
    )
    atomic_write(layout.heartbeat_path("dead"), encode(dead))
    atomic_write(layout.request_path("nobody", "1-a-1"), b"{}")
    with ForwardingServer("live one", Approver(), root=tmp_path):
        out = io.StringIO()
        assert status(tmp_path, out) == 0
    text = out.getvalue()
    assert "session 'live one'" in text and ": serving" in text
    assert "session 'old'" in text and ": stale" in text
    assert "session 'dead'" in text and "dead (process gone)" in text
    assert "session dir nobody: 1 pending request(s)" in text


def test_serve_answers_a_real_child_from_its_input_and_stops_on_sigterm(tmp_path) -> None:
    serve = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from askgate.forward_cli import main; sys.exit(main(sys.argv[1:]))",
            "serve",
            "--session",
            "term-1",
            "--root",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        heartbeat = Layout(tmp_path).heartbeat_path("term-1")
        wait_until(heartbeat.exists, what="the serve heartbeat")
        assert serve.stdin is not None
        serve.stdin.write("4\nuse pnpm\n")  # "No, and tell the agent why"
        serve.stdin.flush()
        reply = ForwardingPrompter("term-1", root=tmp_path).prompt(
            PromptRequest(request_id="r", surface="bash", value="npm i", message="npm i?"),
            timeout=SAFETY_TIMEOUT,
        )
        assert (reply.state, reply.denial_reason) == (PromptState.DENIED_WITH_REASON, "use pnpm")
        serve.send_signal(signal.SIGTERM)
        _, err = serve.communicate(timeout=SAFETY_TIMEOUT)
        assert serve.returncode == 0
        assert "Permission required" in err and "npm i?" in err
        assert decode_heartbeat(heartbeat.read_bytes()).stopped is True  # left as stopped
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(10)


def test_serve_refuses_a_session_already_served(tmp_path, capsys) -> None:
    with ForwardingServer("taken", Approver(), root=tmp_path):
        assert main(["serve", "--session", "taken", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already served" in err


def test_serve_refuses_an_unusable_session_id(tmp_path: Path, capsys) -> None:
    assert main(["serve", "--session", "..", "--root", str(tmp_path)]) == 1
    assert "unusable session id" in capsys.readouterr().err
