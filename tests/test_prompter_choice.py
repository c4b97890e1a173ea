"""Which prompter a process gets: parent forwarding, terminal, or none."""

from __future__ import annotations

import os
import pty

from askgate.forwarding.client import ForwardingPrompter
from askgate.prompters.base import NoPrompter, PromptRequest, PromptState
from askgate.prompters.choose import default_prompter
from askgate.prompters.terminal import TerminalPrompter

REQUEST = PromptRequest(request_id="r", surface="bash", value="make", message="make?")


def test_subagent_forwards_to_its_parent(tmp_path) -> None:
    env = {
        "PI_SUBAGENT_CHILD": "1",
        "PI_SUBAGENT_PARENT_SESSION": "parent-1",
        "ASKGATE_FORWARDING_DIR": str(tmp_path / "fwd"),
    }
    prompter = default_prompter(session="child-1", env=env, tty_path=str(tmp_path / "none"))
    assert isinstance(prompter, ForwardingPrompter)
    # parent-1 publishes no heartbeat (as a real pi parent): waited for within the
    # budget, then timed out — never approved, and not a fast "unavailable" (#8 item 9).
    reply = prompter.prompt(REQUEST, timeout=1)
    assert reply.state is PromptState.TIMED_OUT
    assert "parent-1" in (reply.detail or "")


def test_subagent_without_parent_is_unavailable(tmp_path) -> None:
    env = {"PI_SUBAGENT_CHILD": "1", "ASKGATE_FORWARDING_DIR": str(tmp_path / "fwd")}
    prompter = default_prompter(session="child-1", env=env, tty_path=str(tmp_path / "none"))
    assert prompter.prompt(REQUEST, timeout=5).state is PromptState.UNAVAILABLE


def test_terminal_when_one_exists(tmp_path) -> None:
    master, slave = pty.openpty()
    try:
        prompter = default_prompter(session="s", env={}, tty_path=os.ttyname(slave))
        assert isinstance(prompter, TerminalPrompter)
    finally:
        os.close(master)
        os.close(slave)


def test_nothing_to_ask_with(tmp_path) -> None:
    prompter = default_prompter(session="s", env={}, tty_path=str(tmp_path / "none"))
    assert isinstance(prompter, NoPrompter)
    assert not prompter.available()
