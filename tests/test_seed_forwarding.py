"""Seed 001 to the letter (issue 15, items 8-10): who answers a subagent's asks, and what
the user reads when nobody can."""

from __future__ import annotations

import os
import pty

from askgate.forwarding.client import ForwardingPrompter
from askgate.prompters.choose import default_prompter
from askgate.prompters.terminal import TerminalPrompter

# ------------------------------------------------------------------ item 8


def test_a_subagent_with_its_own_terminal_asks_there_first(tmp_path) -> None:
    env = {
        "PI_SUBAGENT_CHILD": "1",
        "PI_SUBAGENT_PARENT_SESSION": "parent-1",
        "ASKGATE_FORWARDING_DIR": str(tmp_path / "fwd"),
    }
    master, slave = pty.openpty()
    try:
        prompter = default_prompter(
            session="child-1", env=env, tty_path=os.ttyname(slave), interactive=True
        )
        assert isinstance(prompter, TerminalPrompter)
    finally:
        os.close(master)
        os.close(slave)


def test_a_headless_subagent_does_not_borrow_its_parents_terminal(tmp_path) -> None:
    # A child spawned with piped stdio still opens the parent's /dev/tty; asking there
    # would draw over the parent's own screen. It forwards instead.
    env = {"PI_SUBAGENT_CHILD": "1", "PI_SUBAGENT_PARENT_SESSION": "parent-1"}
    master, slave = pty.openpty()
    try:
        prompter = default_prompter(
            session="child-1", env=env, tty_path=os.ttyname(slave), interactive=False
        )
        assert isinstance(prompter, ForwardingPrompter)
    finally:
        os.close(master)
        os.close(slave)


def test_a_subagent_without_a_terminal_still_forwards(tmp_path) -> None:
    env = {"PI_SUBAGENT_CHILD": "1", "PI_SUBAGENT_PARENT_SESSION": "parent-1"}
    prompter = default_prompter(session="child-1", env=env, tty_path=str(tmp_path / "none"))
    assert isinstance(prompter, ForwardingPrompter)
    assert prompter.target_session == "parent-1"
