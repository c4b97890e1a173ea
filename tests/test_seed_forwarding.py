"""Seed 001 to the letter (issue 15, items 8-10): who answers a subagent's asks, and what
the user reads when nobody can."""

from __future__ import annotations

import json
import os
import pty

from askgate.audit import AuditLog
from askgate.forwarding.client import ForwardingPrompter
from askgate.forwarding.env import resolve_forwarding, unresolved_message
from askgate.forwarding.server import ForwardingServer
from askgate.gate import Gate
from askgate.outcome import Resolution, ToolRequest
from askgate.prompters.choose import default_prompter
from askgate.prompters.terminal import TerminalPrompter
from conftest import policy_for

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


# ------------------------------------------------------------------ items 9 and 10


def _headless_child_gate(project, home, env, audit_path) -> Gate:
    prompter = default_prompter(
        session="child-1", env=env, tty_path=str(home / "no-tty"), interactive=False
    )
    return Gate(policy_for(project, home, []), prompter=prompter, audit=AuditLog(str(audit_path)))


def test_the_resolvers_message_reaches_the_outcome_and_the_review_log(project, home) -> None:
    env = {
        "PI_SUBAGENT_CHILD": "1",
        # nicobailon sets this in the root and children inherit it: it names the child here.
        "PI_SUBAGENT_PARENT_SESSION": "child-1",
        "ASKGATE_FORWARDING_DIR": str(home / "fwd"),
    }
    log_path = home / "review.jsonl"
    gate = _headless_child_gate(project, home, env, log_path)
    outcome = gate.decide(ToolRequest(tool="WebFetch", cwd=str(project), session="child-1"))
    assert outcome.resolution is Resolution.CONFIRMATION_UNAVAILABLE
    for text in (outcome.reason, json.loads(log_path.read_text())["reason"]):
        assert "PI_AGENT_ROUTER_PARENT_SESSION_ID" in text
        assert "PI_SUBAGENT_PARENT_SESSION named this session itself" in text
        assert "pi-agent-router" in text and "nicobailon/pi-subagents" in text


def test_a_parent_that_is_not_serving_is_named_in_the_reason(project, home) -> None:
    env = {
        "PI_SUBAGENT_CHILD": "1",
        "PI_SUBAGENT_PARENT_SESSION": "parent-1",
        "ASKGATE_FORWARDING_DIR": str(home / "fwd"),
    }
    # A parent that served and stopped (its heartbeat says so): the child fails at once. (A
    # parent that never published a heartbeat, like pi's extension, is waited for instead.)
    server = ForwardingServer("parent-1", TerminalPrompter(tty_path=os.devnull), root=home / "fwd")
    server.start()
    server.stop()
    gate = _headless_child_gate(project, home, env, home / "review.jsonl")
    outcome = gate.decide(ToolRequest(tool="WebFetch", cwd=str(project)))
    assert outcome.resolution is Resolution.CONFIRMATION_UNAVAILABLE
    assert "parent-1" in outcome.reason and "askgate forward serve" in outcome.reason


def test_the_failure_text_names_the_variables_and_the_tools_that_set_them() -> None:
    resolution = resolve_forwarding(
        has_ui=False, is_subagent=True, current_session_id="child-1", env={}
    )
    message = unresolved_message(resolution)
    # What to set …
    assert "PI_AGENT_ROUTER_PARENT_SESSION_ID" in message
    assert "PI_SUBAGENT_PARENT_SESSION" in message
    assert "parent's session id" in message
    # … and who sets it (seed 001's inventory, plus what changed since).
    assert "pi-agent-router sets PI_AGENT_ROUTER_PARENT_SESSION_ID" in message
    assert "nicobailon/pi-subagents" in message
    assert "HazAT/pi-interactive-subagents" in message
    assert "BusPrompter" in message  # the in-process case (tintinweb)
