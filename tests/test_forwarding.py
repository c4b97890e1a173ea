"""File forwarding for real: parent and child as separate processes, plus the server's
behaviour on hostile directory contents. No sleeps: every wait has a condition and a
deadline."""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from askgate.forwarding import ForwardingError, ForwardingPrompter, ForwardingServer
from askgate.forwarding.io import HOST, now_ms
from askgate.forwarding.protocol import Heartbeat, Layout, decode_heartbeat, encode
from askgate.prompters.base import PromptReply, PromptRequest, PromptState
from peer_files import atomic_write
from unprivileged import run_as_nobody
from waits import SAFETY_TIMEOUT, wait_until

PEER = str(Path(__file__).with_name("forwarding_peer.py"))


class Parent:
    """A parent session in its own process."""

    def __init__(self, root: Path, session: str, answer: str, mode: str = "watch") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, PEER, "parent", str(root), session, answer, "--mode", mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()  # None: its stdout ended
        threading.Thread(target=self._pump, daemon=True).start()
        self.expect("ready")

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def expect(self, prefix: str, timeout: float = SAFETY_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"parent never printed {prefix!r}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self.lines.put(None)  # for any later expect
                raise AssertionError(f"parent exited before it printed {prefix!r}")
            if line.startswith(prefix):
                return line

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(SAFETY_TIMEOUT)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(SAFETY_TIMEOUT)  # reaped: its pid is really gone


def start_child(root: Path, target: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, PEER, "child", str(root), target, *extra],
        stdout=subprocess.PIPE,
        text=True,
    )


def child_result(proc: subprocess.Popen[str], timeout: float = SAFETY_TIMEOUT) -> dict:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0
    return json.loads(out.strip().splitlines()[-1])


def leftovers(root: Path) -> list[str]:
    sessions = root / "sessions"
    if not sessions.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in sessions.rglob("*") if p.is_file())


@pytest.fixture
def parent_factory(tmp_path):
    started: list[Parent] = []

    def make(session: str, answer: str, mode: str = "watch") -> Parent:
        parent = Parent(tmp_path, session, answer, mode)
        started.append(parent)
        return parent

    yield make
    for parent in started:
        if parent.proc.poll() is None:
            parent.kill()


# ------------------------------------------------------------------ two processes


def test_round_trip_between_two_real_processes(tmp_path, parent_factory) -> None:
    parent = parent_factory("parent session/1", "approve")
    heartbeat = Layout(tmp_path).heartbeat_path("parent session/1")
    assert heartbeat.exists()
    result = child_result(start_child(tmp_path, "parent session/1", "--agent", "explore"))
    assert result["state"] == "approved"
    assert parent.expect("prompting").endswith(" explore")
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "sessions" / "parent%20session%2F1").exists()  # empty dirs removed
    parent.stop()
    assert parent.proc.returncode == 0
    # Left as "stopped" on a clean stop: children fail fast instead of waiting blind.
    assert decode_heartbeat(heartbeat.read_bytes()).stopped is True


def test_denial_with_reason_crosses_processes(tmp_path, parent_factory) -> None:
    parent_factory("p", "deny")
    result = child_result(start_child(tmp_path, "p"))
    assert (result["state"], result["denial_reason"]) == ("denied_with_reason", "use pnpm")


def test_polling_parent_and_child_also_meet(tmp_path, parent_factory) -> None:
    parent_factory("p", "session", mode="poll")
    result = child_result(start_child(tmp_path, "p", "--mode", "poll"))
    assert result["state"] == "approved_for_session"


def test_concurrent_children_are_each_answered_once(tmp_path, parent_factory) -> None:
    parent = parent_factory("p", "approve")
    children = [start_child(tmp_path, "p", "--agent", f"a{i}") for i in range(4)]
    results = [child_result(proc) for proc in children]
    assert [r["state"] for r in results] == ["approved"] * 4
    prompts = [parent.expect("prompting") for _ in range(4)]
    assert sorted(p.split()[2] for p in prompts) == ["a0", "a1", "a2", "a3"]
    assert len({p.split()[1] for p in prompts}) == 4  # distinct request ids
    assert leftovers(tmp_path) == []


def test_parent_killed_mid_request_gives_unavailable_not_a_hang(tmp_path, parent_factory) -> None:
    parent = parent_factory("p", "hang")
    child = start_child(tmp_path, "p", "--timeout", "60", "--grace", "1.0")
    parent.expect("prompting")
    parent.kill()
    result = child_result(child)
    # "unavailable" (nobody serves), not "timed_out": the child stopped waiting once the
    # heartbeat died instead of sitting out its 60 s budget.
    assert result["state"] == "unavailable"
    assert result["detail"] == "nobody is serving session p"
    assert leftovers(tmp_path) == []  # the child withdrew its request


def test_no_answer_in_time_is_timed_out(tmp_path, parent_factory) -> None:
    parent = parent_factory("p", "hang")
    result = child_result(start_child(tmp_path, "p", "--timeout", "0.5"))
    assert result["state"] == "timed_out"
    parent.expect("prompting")
    assert leftovers(tmp_path) == []


def test_second_server_for_a_served_session_refuses_to_start(tmp_path, parent_factory) -> None:
    parent_factory("p", "approve")
    with pytest.raises(ForwardingError, match="already served by pid"):
        ForwardingServer("p", Approver(), root=tmp_path).start()


# ------------------------------------------------------------------ heartbeat


def ask(prompter: ForwardingPrompter, timeout: float = SAFETY_TIMEOUT) -> PromptReply:
    request = PromptRequest(request_id="r", surface="bash", value="ls", message="ls?")
    return prompter.prompt(request, timeout=timeout)


def test_a_parent_that_served_and_stopped_fails_after_the_grace_not_the_budget(tmp_path) -> None:
    server = ForwardingServer("ghost", Approver(), root=tmp_path)
    server.start()
    server.stop()
    prompter = ForwardingPrompter("ghost", root=tmp_path)
    assert not prompter.available()
    started = time.monotonic()
    reply = ask(prompter, timeout=600)
    elapsed = time.monotonic() - started
    assert reply.state is PromptState.UNAVAILABLE
    assert reply.detail == "nobody is serving session ghost"  # not timed_out after 600 s
    assert elapsed >= 1.9  # it gave the heartbeat its grace before giving up
    assert leftovers(tmp_path) == []


def test_a_parent_without_heartbeat_support_is_waited_for_within_the_budget(
    tmp_path, caplog
) -> None:
    # What a real pi parent (20.7.3) looks like: no serving/ file at all. Before: the
    # child failed at once with "nobody is serving". Now it waits, and says why.
    prompter = ForwardingPrompter("pi-parent", root=tmp_path, serving_grace=0.2)
    assert prompter.available()
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="askgate.forwarding"):
        reply = ask(prompter, timeout=1.0)
    assert time.monotonic() - started >= 1.0  # well past the 0.2 s grace
    assert reply.state is PromptState.TIMED_OUT
    assert any("cannot be checked" in r.getMessage() for r in caplog.records)
    assert leftovers(tmp_path) == []


def test_a_parent_without_heartbeat_support_answers_a_waiting_child(tmp_path) -> None:
    layout = Layout(tmp_path)
    answered = threading.Event()

    def late_pi_parent() -> None:  # answers after the grace period has long passed
        requests = layout.requests_dir("pi-parent")
        wait_until(lambda: requests.exists() and any(requests.glob("*.json")), "the request file")
        answered.wait(0.6)
        (path,) = requests.glob("*.json")
        request_id = json.loads(path.read_bytes())["id"]
        answer = {"approved": True, "state": "approved", "responderSessionId": "pi-parent"}
        atomic_write(layout.response_path("pi-parent", request_id), json.dumps(answer).encode())
        path.unlink()

    thread = threading.Thread(target=late_pi_parent, daemon=True)
    thread.start()
    reply = ask(ForwardingPrompter("pi-parent", root=tmp_path, serving_grace=0.2))
    thread.join(SAFETY_TIMEOUT)
    assert reply.state is PromptState.APPROVED
    assert reply.answered_by == "parent session pi-parent"


def write_heartbeat(root: Path, session: str, *, pid: int, age_ms: int) -> None:
    beat = Heartbeat(
        session_id=session, pid=pid, host=HOST, refreshed_at=now_ms() - age_ms, interval_ms=2000
    )
    atomic_write(Layout(root).heartbeat_path(session), encode(beat))


def test_stale_heartbeat_is_not_serving(tmp_path) -> None:
    write_heartbeat(tmp_path, "p", pid=os.getpid(), age_ms=60_000)
    prompter = ForwardingPrompter("p", root=tmp_path, serving_grace=0.3)
    assert not prompter.available()
    reply = ask(prompter)
    assert reply.state is PromptState.UNAVAILABLE and "nobody is serving" in (reply.detail or "")


def test_fresh_heartbeat_of_a_dead_process_is_not_serving(tmp_path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(10)
    write_heartbeat(tmp_path, "p", pid=gone.pid, age_ms=0)
    prompter = ForwardingPrompter("p", root=tmp_path, serving_grace=0.3)
    assert not prompter.available()
    assert ask(prompter).state is PromptState.UNAVAILABLE


# ------------------------------------------------------------------ pi interop


class Approver:
    def __init__(self, reply: PromptReply | None = None) -> None:
        self.reply = reply or PromptReply(state=PromptState.APPROVED)
        self.seen: list[PromptRequest] = []

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        self.seen.append(request)
        return self.reply


PI_REQUEST_ID = "1715700000000-k3j9x2ab-4242"


def pi_request(target: str = "parent-1", request_id: str = PI_REQUEST_ID) -> bytes:
    # Byte for byte what a pi child writes (JSON.stringify of ForwardedPermissionRequest).
    return json.dumps(
        {
            "id": request_id,
            "createdAt": 1715700000000,
            "requesterSessionId": "child-1",
            "targetSessionId": target,
            "requesterAgentName": "Explore",
            "message": "Run `rm -rf build`?",
        },
        separators=(",", ":"),
    ).encode()


def test_python_parent_answers_a_pi_child_in_pis_format(tmp_path) -> None:
    layout = Layout(tmp_path)
    approver = Approver(PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="no"))
    with ForwardingServer("parent-1", approver, root=tmp_path):
        atomic_write(layout.request_path("parent-1", PI_REQUEST_ID), pi_request())
        response_path = layout.response_path("parent-1", PI_REQUEST_ID)
        wait_until(response_path.exists, what="the response file")
        response = json.loads(response_path.read_bytes())
    assert set(response) == {
        "approved",
        "state",
        "denialReason",
        "responderSessionId",
        "respondedAt",
    }
    assert response["approved"] is False and response["state"] == "denied_with_reason"
    assert response["responderSessionId"] == "parent-1"
    assert isinstance(response["respondedAt"], int)
    assert not layout.request_path("parent-1", PI_REQUEST_ID).exists()  # consumed
    assert approver.seen[0].message.startswith("Subagent 'Explore' requested permission.")


def test_python_child_served_by_a_pi_parent_without_heartbeat(tmp_path) -> None:
    layout = Layout(tmp_path)
    stop = threading.Event()

    def pi_parent() -> None:  # lists requests/, answers in pi's shape, deletes the request
        requests = layout.requests_dir("parent-1")
        while not stop.is_set():
            for path in sorted(requests.glob("*.json")) if requests.exists() else []:
                body = json.loads(path.read_bytes())
                answer = {"approved": True, "state": "approved", "responderSessionId": "parent-1"}
                atomic_write(
                    layout.response_path("parent-1", body["id"]), json.dumps(answer).encode()
                )
                path.unlink()
            stop.wait(0.02)

    thread = threading.Thread(target=pi_parent, daemon=True)
    thread.start()
    try:
        prompter = ForwardingPrompter("parent-1", root=tmp_path, require_heartbeat=False)
        assert ask(prompter).state is PromptState.APPROVED
    finally:
        stop.set()
        thread.join(5)
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------------ hostile directory contents


def test_server_survives_bad_files_and_keeps_serving(tmp_path) -> None:
    layout = Layout(tmp_path)
    requests = layout.requests_dir("parent-1")
    approver = Approver()
    with ForwardingServer("parent-1", approver, root=tmp_path, rescan_interval=0.1):
        huge_id = "1-huge-1"
        (requests / f"{huge_id}.json").write_bytes(b'{"id":"' + b"x" * 5_000_000 + b'"}')
        garbage_id = "1-garbage-1"
        garbage = requests / f"{garbage_id}.json"
        garbage.write_bytes(b"\x00\xff not json")
        old = time.time() - 60
        os.utime(garbage, (old, old))
        other_id = "1-other-1"
        atomic_write(layout.request_path("parent-1", other_id), pi_request("someone", other_id))
        os.mkfifo(requests / "1-fifo-1.json")
        (requests / "1-link-1.json").symlink_to("/etc/passwd")
        (requests / "../escape.json").write_text("{}")
        orphan = layout.response_path("parent-1", "1-nobody-1")
        atomic_write(orphan, b'{"approved": true}')

        for bad_id in (huge_id, garbage_id):
            path = layout.response_path("parent-1", bad_id)
            wait_until(path.exists, what=f"the answer to {bad_id}")
            answer = json.loads(path.read_bytes())
            assert answer["approved"] is False and answer["state"] == "denied"
            assert answer["askgateState"] == "unavailable"

        # Still serving: a real child is answered.
        reply = ask(ForwardingPrompter("parent-1", root=tmp_path))
        assert reply.state is PromptState.APPROVED
        assert len(approver.seen) == 1  # none of the bad files reached the human
        # The request for another session is left where it was; so is the orphan response.
        assert layout.request_path("parent-1", other_id).exists()
        assert orphan.exists()
        assert not layout.response_path("parent-1", other_id).exists()


def test_a_partially_written_request_is_served_once_complete(tmp_path) -> None:
    layout = Layout(tmp_path)
    approver = Approver()
    server = ForwardingServer("parent-1", approver, root=tmp_path, rescan_interval=0.1)
    reads: list[bytes | None] = []
    real_received = server.core.received

    def counting(info, data, **kw):
        reads.append(data)
        return real_received(info, data, **kw)

    server.core.received = counting  # type: ignore[method-assign]
    with server:
        path = layout.request_path("parent-1", PI_REQUEST_ID)
        body = pi_request()
        path.write_bytes(body[:20])  # a non-atomic writer, caught mid-write
        wait_until(lambda: body[:20] in reads, what="the server to read the partial file")
        with path.open("ab") as handle:
            handle.write(body[20:])
        response = layout.response_path("parent-1", PI_REQUEST_ID)
        wait_until(response.exists, what="the response")
        assert json.loads(response.read_bytes())["state"] == "approved"
    assert len(approver.seen) == 1


def test_unreadable_request_directory_is_logged_and_serving_resumes() -> None:
    def check(root: Path) -> None:  # root ignores modes: checked as an ordinary user
        # A handler on the module's own logger, not caplog's on the root: what other tests
        # did to the root logger or to propagation in this process does not hide the record.
        records: list[logging.LogRecord] = []
        handler = logging.Handler(logging.WARNING)
        handler.emit = records.append  # type: ignore[method-assign]
        forwarding_logger = logging.getLogger("askgate.forwarding")
        forwarding_logger.addHandler(handler)
        layout = Layout(root)
        try:
            with ForwardingServer("parent-1", Approver(), root=root, rescan_interval=0.1):
                requests = layout.requests_dir("parent-1")
                requests.chmod(0)
                try:
                    wait_until(
                        lambda: any("cannot list" in r.getMessage() for r in records),
                        what="the listing error to be logged",
                    )
                finally:
                    requests.chmod(0o700)
                assert ask(ForwardingPrompter("parent-1", root=root)).state is PromptState.APPROVED
        finally:
            forwarding_logger.removeHandler(handler)

    run_as_nobody(check)


def test_a_request_withdrawn_while_queued_is_never_shown(tmp_path) -> None:
    layout = Layout(tmp_path)
    gate = threading.Event()

    class Slow(Approver):
        def prompt(self, request, timeout=None):
            self.seen.append(request)
            gate.wait(10)
            return self.reply

    approver = Slow()
    with ForwardingServer("parent-1", approver, root=tmp_path) as server:
        first = "1-first-1"
        second = "1-second-1"
        atomic_write(layout.request_path("parent-1", first), pi_request(request_id=first))
        wait_until(lambda: approver.seen, what="the first prompt")
        atomic_write(layout.request_path("parent-1", second), pi_request(request_id=second))
        wait_until(lambda: second in server.core.in_flight, what="the second request queued")
        layout.request_path("parent-1", second).unlink()  # the child gave up
        gate.set()
        wait_until(layout.response_path("parent-1", first).exists, what="first answered")
    assert [r.request_id for r in approver.seen] == [first]
    assert not layout.response_path("parent-1", second).exists()
