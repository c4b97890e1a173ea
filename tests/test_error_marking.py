"""A crash is not a rule: internal errors and malformed input are denied (resolution
`policy_deny`, kept for compatibility in the event payload) but the review log marks
them with `"error"`, so a reviewer can tell askgate failing from a policy deny."""

from __future__ import annotations

import json
from pathlib import Path

from askgate.audit import AuditLog
from askgate.events import CHANNEL_DECISION, EventBus
from askgate.gate import Gate
from askgate.outcome import Resolution, ToolRequest
from askgate.policy.model import Action
from askgate.prompters.base import PromptRequest
from conftest import policy_for


def _records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


class Exploding:
    """A Policy stand-in whose decide raises, as a bug deep in the engine would."""

    def __init__(self, real) -> None:
        self._real = real

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def decide(self, *args, **kwargs):
        raise RuntimeError("boom in the engine")


def _gate(project, home, tmp_path, policy=None) -> tuple[Gate, Path, list[dict]]:
    log = tmp_path / "review.jsonl"
    bus = EventBus()
    events: list[dict] = []
    bus.on(CHANNEL_DECISION, events.append)
    policy = policy or policy_for(project, home, [("bash", "rm *", "deny")])
    return Gate(policy, audit=AuditLog(str(log)), bus=bus), log, events


def test_an_internal_error_is_denied_and_marked(project, home, tmp_path) -> None:
    real = policy_for(project, home, [])
    gate, log, events = _gate(project, home, tmp_path, Exploding(real))
    outcome = gate.decide(ToolRequest(tool="Bash", input={"command": "ls"}, cwd=str(project)))
    assert outcome.action is Action.DENY
    assert outcome.resolution is Resolution.POLICY_DENY  # unchanged for compatibility
    [record] = _records(log)
    assert record["resolution"] == "policy_deny"
    assert record["error"] == "internal_error"
    assert "boom in the engine" in record["reason"]
    assert events and events[0]["resolution"] == "policy_deny"
    assert "error" not in events[0]  # the event contract is unchanged


def test_malformed_tool_input_is_denied_and_marked(project, home, tmp_path) -> None:
    gate, log, _ = _gate(project, home, tmp_path)
    outcome = gate.decide(ToolRequest(tool="Bash", input={"command": 42}, cwd=str(project)))
    assert outcome.action is Action.DENY
    assert outcome.resolution is Resolution.POLICY_DENY
    [record] = _records(log)
    assert record["error"] == "malformed_input"


def test_a_rule_deny_carries_no_error_mark(project, home, tmp_path) -> None:
    gate, log, _ = _gate(project, home, tmp_path)
    outcome = gate.decide(ToolRequest(tool="Bash", input={"command": "rm x"}, cwd=str(project)))
    assert outcome.action is Action.DENY
    [record] = _records(log)
    assert record["resolution"] == "policy_deny"
    assert record["error"] is None


class BrokenPrompter:
    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None):
        raise OSError("terminal went away")


def test_a_failing_prompter_is_marked_too(project, home, tmp_path) -> None:
    log = tmp_path / "review.jsonl"
    policy = policy_for(project, home, [])  # default ask
    gate = Gate(policy, audit=AuditLog(str(log)), prompter=BrokenPrompter())
    outcome = gate.decide(ToolRequest(tool="Bash", input={"command": "ls"}, cwd=str(project)))
    assert outcome.action is Action.DENY
    assert outcome.resolution is Resolution.CONFIRMATION_UNAVAILABLE
    [record] = _records(log)
    assert record["error"] == "prompter_error"
