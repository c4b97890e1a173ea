"""The terminal prompter over real file descriptors (pipes and a pseudo-terminal)."""

from __future__ import annotations

import io
import os
import pty
import select
import threading

import pytest

from askgate.prompters.base import PromptReply, PromptRequest, PromptState
from askgate.prompters.terminal import TerminalPrompter

REQUEST = PromptRequest(
    request_id="r1",
    surface="bash",
    value="git push",
    message="The agent wants to run 'git push'",
    session_pattern="git push *",
    session_label='Yes, allow bash "git push *" for this session',
)


def _prompt_with_input(data: bytes, request: PromptRequest = REQUEST, timeout: float = 5.0):
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, data)
        os.close(write_fd)
        write_fd = -1
        out = io.StringIO()
        reply = TerminalPrompter(read_fd, out).prompt(request, timeout)
        return reply, out.getvalue()
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


@pytest.mark.parametrize(
    ("typed", "state"),
    [
        (b"1\n", PromptState.APPROVED),
        (b"y\n", PromptState.APPROVED),
        (b"2\n", PromptState.APPROVED_FOR_SESSION),
        (b"3\n", PromptState.DENIED),
        (b"no\n", PromptState.DENIED),
        (b"garbage\n\xff\xfe\nmaybe\n", PromptState.DENIED),  # three bad answers
    ],
)
def test_answers(typed: bytes, state: PromptState) -> None:
    reply, shown = _prompt_with_input(typed)
    assert reply.state is state
    assert "git push" in shown and "for this session" in shown


def test_reason_is_passed_back() -> None:
    reply, _ = _prompt_with_input(b"4\nuse the staging branch\n")
    assert reply.state is PromptState.DENIED_WITH_REASON
    assert reply.denial_reason == "use the staging branch"


def test_session_option_hidden_without_pattern() -> None:
    plain = PromptRequest(request_id="r", surface="bash", value="x", message="m")
    reply, shown = _prompt_with_input(b"2\n2\n2\n", plain)
    assert "for this session" not in shown
    assert reply.state is PromptState.DENIED


def test_end_of_input_is_unavailable_never_approved() -> None:
    reply, _ = _prompt_with_input(b"")
    assert reply.state is PromptState.UNAVAILABLE


def test_no_answer_times_out() -> None:
    read_fd, write_fd = os.pipe()
    try:
        reply = TerminalPrompter(read_fd, io.StringIO()).prompt(REQUEST, timeout=0.2)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert reply.state is PromptState.TIMED_OUT


def test_real_pseudo_terminal() -> None:
    master, slave = pty.openpty()
    try:
        name = os.ttyname(slave)
        prompter = TerminalPrompter(tty_path=name)
        assert prompter.available()
        replies: list[PromptReply] = []
        asking = threading.Thread(target=lambda: replies.append(prompter.prompt(REQUEST, 5)))
        asking.start()
        # Answer once the question is on screen: type-ahead is discarded (test_review_*).
        shown = b""
        while b"> " not in shown:
            ready, _, _ = select.select([master], [], [], 5)
            assert ready, "the prompt never appeared"
            shown += os.read(master, 65536)
        os.write(master, b"1\n")
        asking.join(5)
        assert replies and replies[0].state is PromptState.APPROVED
        assert "Permission required" in shown.decode()
    finally:
        os.close(master)
        os.close(slave)


def test_missing_terminal_is_unavailable(tmp_path) -> None:
    prompter = TerminalPrompter(tty_path=str(tmp_path / "no-tty"))
    assert not prompter.available()
    assert prompter.prompt(REQUEST, timeout=1).state is PromptState.UNAVAILABLE
