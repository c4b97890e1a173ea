"""The gate: every resolution, session approvals, yolo, infrastructure reads, failures."""

from __future__ import annotations

import json
import os
import stat

import pytest

from askgate.audit import AuditLog
from askgate.gate import Gate
from askgate.outcome import Resolution, ToolRequest
from askgate.policy.model import Action
from askgate.prompters.base import PromptReply, PromptState
from conftest import ScriptedPrompter, policy_for


def req(project, tool="Read", **inp):
    return ToolRequest(tool=tool, input=inp, cwd=str(project), agent="main", session="s1")


def test_policy_allow_and_deny(project, home) -> None:
    pol = policy_for(project, home, [("read", "src/**", "allow"), ("read", ".env*", "deny")])
    gate = Gate(pol)
    allow = gate.decide(req(project, file_path=str(project / "src/a.py")))
    assert (allow.action, allow.resolution) == (Action.ALLOW, Resolution.POLICY_ALLOW)
    deny = gate.decide(req(project, file_path=str(project / ".env")))
    assert (deny.action, deny.resolution) == (Action.DENY, Resolution.POLICY_DENY)
    assert "not permitted" in deny.reason and ".env*" in deny.reason


def test_ask_without_prompter_is_unavailable_not_user_denied(project, home) -> None:
    gate = Gate(policy_for(project, home, []))
    out = gate.decide(req(project, tool="WebFetch", url="https://x"))
    assert out.action is Action.DENY
    assert out.resolution is Resolution.CONFIRMATION_UNAVAILABLE


@pytest.mark.parametrize(
    ("reply", "action", "resolution"),
    [
        (PromptReply(state=PromptState.APPROVED), Action.ALLOW, Resolution.USER_APPROVED),
        (PromptReply(state=PromptState.DENIED), Action.DENY, Resolution.USER_DENIED),
        (
            PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="not now"),
            Action.DENY,
            Resolution.USER_DENIED,
        ),
        (PromptReply(state=PromptState.TIMED_OUT), Action.DENY, Resolution.TIMED_OUT),
        (
            PromptReply(state=PromptState.UNAVAILABLE, detail="nobody serving"),
            Action.DENY,
            Resolution.CONFIRMATION_UNAVAILABLE,
        ),
    ],
)
def test_prompt_replies_map_to_resolutions(project, home, reply, action, resolution) -> None:
    prompter = ScriptedPrompter([reply])
    gate = Gate(policy_for(project, home, []), prompter=prompter)
    out = gate.decide(req(project, tool="WebFetch", url="https://x"))
    assert (out.action, out.resolution) == (action, resolution)
    if reply.denial_reason:
        assert reply.denial_reason in out.reason
        assert out.denial_reason == reply.denial_reason
    assert prompter.seen[0].surface == "net" and prompter.seen[0].value == "x:443"


def test_approve_for_session_then_session_hit(project, home) -> None:
    prompter = ScriptedPrompter([PromptState.APPROVED_FOR_SESSION])
    gate = Gate(policy_for(project, home, []), prompter=prompter)
    first = gate.decide(req(project, tool="mcp__github__create_issue", title="x"))
    assert first.resolution is Resolution.USER_APPROVED_FOR_SESSION
    assert prompter.seen[0].session_pattern == "github:*"
    second = gate.decide(req(project, tool="mcp__github__list_issues"))
    assert (second.action, second.resolution) == (Action.ALLOW, Resolution.SESSION_APPROVED)
    # A different server is not covered: the (exhausted) prompter would raise -> unavailable.
    third = gate.decide(req(project, tool="mcp__slack__post"))
    assert third.resolution is Resolution.CONFIRMATION_UNAVAILABLE
    assert third.action is Action.DENY


def test_session_approval_never_lifts_a_deny(project, home) -> None:
    pol = policy_for(project, home, [("mcp", "github:delete_*", "deny")])
    gate = Gate(pol, prompter=ScriptedPrompter([PromptState.APPROVED_FOR_SESSION]))
    gate.decide(req(project, tool="mcp__github__create_issue"))
    out = gate.decide(req(project, tool="mcp__github__delete_repo"))
    assert out.resolution is Resolution.POLICY_DENY


def test_yolo_approves_asks_only(project, home) -> None:
    pol = policy_for(project, home, [("tool", "Danger", "deny")], yolo=True)
    gate = Gate(pol)
    ask = gate.decide(req(project, tool="WebFetch"))
    assert (ask.action, ask.resolution) == (Action.ALLOW, Resolution.AUTO_APPROVED)
    deny = gate.decide(req(project, tool="Danger"))
    assert deny.resolution is Resolution.POLICY_DENY


def test_infrastructure_read_auto_allowed(project, home) -> None:
    infra = home / ".pi" / "agent"
    infra.mkdir(parents=True)
    pol = policy_for(project, home, [], infrastructure_read_paths=[str(infra)])
    gate = Gate(pol)
    out = gate.decide(req(project, file_path=str(infra / "settings.json")))
    assert (out.action, out.resolution) == (Action.ALLOW, Resolution.INFRASTRUCTURE_AUTO_ALLOWED)
    # Writes there are not covered.
    write = gate.decide(req(project, tool="Write", file_path=str(infra / "x"), content=""))
    assert write.resolution is Resolution.CONFIRMATION_UNAVAILABLE


def test_malformed_input_is_denied(project, home) -> None:
    gate = Gate(policy_for(project, home, [("tool", "*", "allow")]))
    for bad in (
        ToolRequest(tool="Read", input={}, cwd=str(project)),
        ToolRequest(tool="Read", input={"file_path": 7}, cwd=str(project)),
        ToolRequest(tool="mcp__broken", input={}, cwd=str(project)),
        ToolRequest(tool="Read", input="not a dict", cwd=str(project)),  # type: ignore[arg-type]
        ToolRequest(tool="Read", input={"file_path": "a\x00b"}, cwd=str(project)),
    ):
        out = gate.decide(bad)
        assert out.action is not Action.ALLOW, bad


def test_internal_error_fails_closed(project, home) -> None:
    pol = policy_for(project, home, [("tool", "*", "allow")])

    def explode(*a, **k):
        raise RuntimeError("boom")

    pol.decide = explode  # type: ignore[method-assign]
    out = Gate(pol).decide(req(project, tool="Anything"))
    assert out.action is Action.DENY and "internal error" in out.reason


def test_prompter_exception_fails_closed(project, home) -> None:
    class Broken:
        def available(self) -> bool:
            return True

        def prompt(self, request, timeout=None):
            raise OSError("tty vanished")

    out = Gate(policy_for(project, home, []), prompter=Broken()).decide(req(project, tool="X"))
    assert (out.action, out.resolution) == (Action.DENY, Resolution.CONFIRMATION_UNAVAILABLE)


def test_clamped_policy_never_allows(project, home) -> None:
    pol = policy_for(project, home, [("tool", "*", "allow")], yolo=True, errors=["bad.toml:1: x"])
    gate = Gate(pol, prompter=ScriptedPrompter([PromptState.APPROVED_FOR_SESSION]))
    out = gate.decide(req(project, tool="Anything"))
    # yolo does not apply to a clamped policy; the human is asked (and may approve once).
    assert out.resolution is Resolution.USER_APPROVED
    assert out.decision.clamped
    assert gate.approvals.patterns() == []


def test_audit_log_records_every_outcome(project, home, tmp_path) -> None:
    path = tmp_path / "logs" / "review.jsonl"
    gate = Gate(policy_for(project, home, [("read", "**", "allow")]), audit=AuditLog(str(path)))
    gate.decide(req(project, file_path=str(project / "src" / "a.py")))
    gate.decide(
        req(project, tool="WebFetch", url="https://x", headers={"Authorization": "t0ps3cret"})
    )
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    first, second = (json.loads(x) for x in lines)
    assert first["resolution"] == "policy_allow" and first["rule"]["pattern"] == "**"
    assert second["resolution"] == "confirmation_unavailable"
    assert "t0ps3cret" not in lines[1]
    assert second["agent"] == "main" and second["session"] == "s1"


def test_an_outcome_can_only_be_allow_or_deny() -> None:
    import pytest

    from askgate.outcome import Outcome, Resolution
    from askgate.policy.model import Action, Decision, Surface

    decision = Decision(surface=Surface.BASH, value="ls", action=Action.ASK, reason="r", rule=None)
    with pytest.raises(ValueError, match="allow or deny"):
        Outcome(
            request_id="r",
            action=Action.ASK,
            resolution=Resolution.POLICY_DENY,
            decision=decision,
            reason="x",
        )
