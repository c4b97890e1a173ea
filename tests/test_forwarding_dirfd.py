"""The forwarding root is written by other processes: no symlink in it may steer the parent.

A child that can write under the forwarding root could replace `sessions/<parent>/requests`
(or `responses`) with a symlink to any directory. The serving parent would then list,
answer and delete every `*.json` there, or write its answers into it. Every file
operation therefore goes through directory descriptors opened without following symlinks,
component by component from the forwarding root down, and directories that are not the
user's own, private ones are refused.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import pytest

from askgate.forwarding import ForwardingPrompter, ForwardingServer
from askgate.forwarding.protocol import Layout
from askgate.prompters.base import PromptReply, PromptRequest, PromptState
from peer_files import atomic_write
from test_forwarding import PI_REQUEST_ID, ask, pi_request, wait_until

SESSION = "parent-1"


class Watcher(logging.Handler):
    """Sets `refused` when the server logs that it refused a directory."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.refused = threading.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        if "refus" in message and "director" in message:
            self.refused.set()


@pytest.fixture
def watcher():
    handler = Watcher()
    logger = logging.getLogger("askgate.forwarding")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


class Recorder:
    """A prompter that approves and sets `asked` when shown anything."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.seen: list[PromptRequest] = []

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        self.seen.append(request)
        self.asked.set()
        return PromptReply(state=PromptState.APPROVED)


def _victim(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A directory the agent must not touch, e.g. the one holding the hook's settings."""
    victim = tmp_path / "victim"
    victim.mkdir()
    files = {
        "settings.json": b'{"hooks": {"PreToolUse": "askgate hook claude-code"}}',
        f"{PI_REQUEST_ID}.json": pi_request(SESSION),  # even a well-formed request
    }
    for name, data in files.items():
        (victim / name).write_bytes(data)
    return victim, files


def _intact(victim: Path, files: dict[str, bytes]) -> None:
    assert sorted(p.name for p in victim.iterdir()) == sorted(files)
    for name, data in files.items():
        assert (victim / name).read_bytes() == data, name


def test_requests_replaced_by_a_symlink_is_not_served(tmp_path, watcher) -> None:
    root = tmp_path / "fwd"
    layout = Layout(root)
    victim, files = _victim(tmp_path)
    recorder = Recorder()
    with ForwardingServer(SESSION, recorder, root=root, rescan_interval=0.05):
        requests = layout.requests_dir(SESSION)
        requests.rmdir()
        requests.symlink_to(victim)  # the child's move
        woke = wait_until(
            lambda: watcher.refused.is_set() or recorder.asked.is_set(),
            what="the server to refuse the directory (or fall for it)",
        )
        assert woke
    assert not recorder.seen, "a request read through a symlinked directory reached the human"
    _intact(victim, files)


def test_responses_replaced_by_a_symlink_is_not_written(tmp_path, watcher) -> None:
    root = tmp_path / "fwd"
    layout = Layout(root)
    victim = tmp_path / "victim"
    victim.mkdir()
    request_id = "1-settings-1"
    target = victim / f"{request_id}.json"
    target.write_bytes(b'{"keep": "me"}')
    recorder = Recorder()
    with ForwardingServer(SESSION, recorder, root=root, rescan_interval=0.05):
        responses = layout.responses_dir(SESSION)
        responses.symlink_to(victim)  # the child's move, before it asks
        request = layout.request_path(SESSION, request_id)
        atomic_write(request, pi_request(SESSION, request_id))
        wait_until(recorder.asked.is_set, what="the prompt")
        wait_until(watcher.refused.is_set, what="the server to refuse the responses directory")
    assert target.read_bytes() == b'{"keep": "me"}'
    assert sorted(p.name for p in victim.iterdir()) == [target.name]


def test_session_directory_replaced_by_a_symlink_is_not_served(tmp_path, watcher) -> None:
    root = tmp_path / "fwd"
    layout = Layout(root)
    victim = tmp_path / "victim"
    (victim / "requests").mkdir(parents=True)
    (victim / "requests" / f"{PI_REQUEST_ID}.json").write_bytes(pi_request(SESSION))
    recorder = Recorder()
    with ForwardingServer(SESSION, recorder, root=root, rescan_interval=0.05):
        session_dir = layout.session_dir(SESSION)
        (session_dir / "requests").rmdir()
        session_dir.rmdir()
        session_dir.symlink_to(victim)
        wait_until(
            lambda: watcher.refused.is_set() or recorder.asked.is_set(),
            what="the server to refuse the directory (or fall for it)",
        )
    assert not recorder.seen
    assert (victim / "requests" / f"{PI_REQUEST_ID}.json").read_bytes() == pi_request(SESSION)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o277])
def test_directories_are_created_0700_whatever_the_umask(tmp_path, umask: int) -> None:
    root = tmp_path / "fwd"
    old = os.umask(umask)
    try:
        with ForwardingServer(SESSION, Recorder(), root=root):
            pass
    finally:
        os.umask(old)
    layout = Layout(root)
    for directory in (
        root,
        layout.sessions_dir,
        layout.session_dir(SESSION),
        layout.requests_dir(SESSION),
        layout.serving_dir,
    ):
        assert directory.is_dir(), directory
        assert (directory.stat().st_mode & 0o777) == 0o700, directory


def test_a_directory_writable_by_others_is_refused(tmp_path, watcher) -> None:
    root = tmp_path / "fwd"
    layout = Layout(root)
    recorder = Recorder()
    with ForwardingServer(SESSION, recorder, root=root, rescan_interval=0.05):
        requests = layout.requests_dir(SESSION)
        requests.chmod(0o777)  # anybody could have planted a request here
        (requests / f"{PI_REQUEST_ID}.json").write_bytes(pi_request(SESSION))
        wait_until(
            lambda: watcher.refused.is_set() or recorder.asked.is_set(),
            what="the server to refuse the directory",
        )
    assert not recorder.seen


def test_pis_own_0755_directories_are_tightened_and_served(tmp_path) -> None:
    """pi's extension creates the directories with `mkdir -p` under the umask (0755):
    ours, only readable by others, so they are made 0700 rather than refused."""
    root = tmp_path / "fwd"
    layout = Layout(root)
    old = os.umask(0o022)
    try:
        layout.requests_dir(SESSION).mkdir(parents=True, mode=0o755)
    finally:
        os.umask(old)
    recorder = Recorder()
    with ForwardingServer(SESSION, recorder, root=root, rescan_interval=0.05):
        atomic_write(layout.request_path(SESSION, PI_REQUEST_ID), pi_request(SESSION))
        response = layout.response_path(SESSION, PI_REQUEST_ID)
        wait_until(response.exists, what="the response")
        assert json.loads(response.read_bytes())["state"] == "approved"
    for directory in (
        layout.sessions_dir,
        layout.session_dir(SESSION),
        layout.requests_dir(SESSION),
    ):
        assert (directory.stat().st_mode & 0o777) == 0o700, directory


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_a_directory_owned_by_another_user_is_refused(tmp_path, watcher) -> None:
    root = tmp_path / "fwd"
    layout = Layout(root)
    recorder = Recorder()
    with ForwardingServer(SESSION, recorder, root=root, rescan_interval=0.05):
        requests = layout.requests_dir(SESSION)
        (requests / f"{PI_REQUEST_ID}.json").write_bytes(pi_request(SESSION))
        os.chown(requests, 65534, 65534)  # nobody
        wait_until(
            lambda: watcher.refused.is_set() or recorder.asked.is_set(),
            what="the server to refuse the directory",
        )
    assert not recorder.seen


def test_ordinary_round_trip_still_works(tmp_path) -> None:
    root = tmp_path / "fwd"
    with ForwardingServer(SESSION, Recorder(), root=root):
        assert ask(ForwardingPrompter(SESSION, root=root)).state is PromptState.APPROVED


def test_orphan_collection_never_deletes_through_a_symlinked_responses(tmp_path, watcher) -> None:
    """The parent removes unread responses older than ten minutes: through a symlink that
    would delete every old `*.json` of the target directory."""
    root = tmp_path / "fwd"
    layout = Layout(root)
    victim = tmp_path / "victim"
    victim.mkdir()
    old_file = victim / "settings.json"
    old_file.write_text("{}")
    long_ago = 1_000_000_000  # 2001
    os.utime(old_file, (long_ago, long_ago))
    with ForwardingServer(SESSION, Recorder(), root=root, heartbeat_interval=0.05):
        layout.responses_dir(SESSION).symlink_to(victim)
        wait_until(
            lambda: any("cannot collect" in m for m in watcher.messages) or not old_file.exists(),
            what="the collector to refuse the directory (or delete through it)",
        )
    assert old_file.read_text() == "{}"


def test_status_never_reads_through_a_symlinked_directory(tmp_path) -> None:
    import io as text_io

    from askgate.forward_cli import status

    root = tmp_path / "fwd"
    layout = Layout(root)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "a.json").write_text("{}")
    layout.session_dir("mallory").mkdir(parents=True)
    layout.requests_dir("mallory").symlink_to(victim)
    atomic_write(layout.request_path("honest", "1-a-1"), b"{}")
    out = text_io.StringIO()
    assert status(root, out) == 0
    text = out.getvalue()
    assert "session dir honest: 1 pending request(s)" in text
    assert "session dir mallory: " in text and "symlink" in text
    assert "mallory: 1 pending" not in text


def test_a_child_never_writes_or_removes_through_a_symlinked_directory(tmp_path) -> None:
    root = tmp_path / "fwd"
    layout = Layout(root)
    victim = tmp_path / "victim"
    victim.mkdir()
    layout.session_dir(SESSION).mkdir(parents=True)
    layout.requests_dir(SESSION).symlink_to(victim)
    prompter = ForwardingPrompter(SESSION, root=root, require_heartbeat=False)
    reply = ask(prompter, timeout=2.0)
    assert reply.state is PromptState.UNAVAILABLE
    assert "symlink" in (reply.detail or "")
    assert list(victim.iterdir()) == []
    assert layout.requests_dir(SESSION).is_symlink()  # not removed through, not replaced


def test_a_planted_symlink_makes_the_watcher_poll_rather_than_follow_it(tmp_path) -> None:
    """The recursive watcher would follow a symlink it finds at start (`x -> /` would mean
    watching the whole filesystem): with one present, the server polls instead."""
    root = tmp_path / "fwd"
    layout = Layout(root)
    layout.sessions_dir.mkdir(parents=True)
    (layout.sessions_dir / "elsewhere").symlink_to(tmp_path)
    with ForwardingServer(SESSION, Recorder(), root=root, poll_interval=0.05) as server:
        assert server.watching == "poll"
        assert ask(ForwardingPrompter(SESSION, root=root, mode="poll")).state is (
            PromptState.APPROVED
        )


def test_without_symlinks_the_server_watches(tmp_path) -> None:
    with ForwardingServer(SESSION, Recorder(), root=tmp_path / "fwd") as server:
        assert server.watching == "watch"
