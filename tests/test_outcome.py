"""askgate.outcome: the gate's value types (requests in, outcomes out)."""

from __future__ import annotations

import msgspec
import pytest

from askgate.outcome import (
    ERROR_KINDS,
    INTERNAL_ERROR,
    MALFORMED_INPUT,
    PROMPTER_ERROR,
    Outcome,
    Pending,
    Resolution,
    ToolRequest,
)
from askgate.policy.model import Action, Decision, Origin, RuleRef, Surface

RULE = RuleRef(
    surface=Surface.BASH, pattern="git push *", action=Action.ASK, origin=Origin.USER, line=3
)
ASKED = Decision(
    action=Action.ASK, reason="asks", surface=Surface.BASH, value="git push", rule=RULE
)


def outcome(
    action: Action,
    resolution: Resolution = Resolution.USER_APPROVED,
    session_pattern: str | None = None,
) -> Outcome:
    return Outcome(
        request_id="r1",
        action=action,
        resolution=resolution,
        decision=ASKED,
        reason="because",
        session_pattern=session_pattern,
    )


def test_an_outcome_is_allow_or_deny() -> None:
    assert outcome(Action.ALLOW).allowed is True
    assert outcome(Action.DENY, resolution=Resolution.USER_DENIED).allowed is False


def test_an_outcome_that_asks_cannot_be_built() -> None:
    # "ask" is a question for a human, never an answer the agent may be given.
    with pytest.raises(ValueError, match="allow or deny"):
        outcome(Action.ASK)


def test_an_outcome_decoded_from_json_keeps_the_invariant() -> None:
    wire = msgspec.json.encode(outcome(Action.ALLOW))
    assert msgspec.json.decode(wire, type=Outcome) == outcome(Action.ALLOW)
    forged = wire.replace(b'"action":"allow"', b'"action":"ask"')
    assert forged != wire
    with pytest.raises(msgspec.ValidationError, match="allow or deny"):
        msgspec.json.decode(forged, type=Outcome)


def test_an_outcome_reports_the_policy_view_it_resolved() -> None:
    done = outcome(Action.ALLOW, session_pattern="git push *")
    assert (done.surface, done.value, done.rule) == ("bash", "git push", RULE)
    assert done.session_pattern == "git push *"
    assert done.error is None and done.denial_reason is None


def test_outcomes_are_frozen() -> None:
    done = outcome(Action.DENY)
    with pytest.raises(AttributeError):
        done.action = Action.ALLOW


def test_a_tool_request_has_safe_defaults() -> None:
    request = ToolRequest(tool="Bash")
    assert (request.input, request.cwd, request.agent) == ({}, ".", None)
    assert request.session is None and request.request_id is None
    assert ToolRequest(tool="Bash").input is not request.input  # no shared mutable default


def test_pending_carries_the_request_and_the_decision() -> None:
    request = ToolRequest(tool="Bash", input={"command": "git push"}, cwd="/p")
    pending = Pending(request_id="r2", request=request, decision=ASKED)
    assert pending.decision.action is Action.ASK
    assert msgspec.json.decode(msgspec.json.encode(pending), type=Pending) == pending


def test_resolutions_and_error_kinds_are_the_wire_contract() -> None:
    # These strings appear in events and the review log (docs/events.md, docs/audit).
    assert [str(r) for r in Resolution] == [
        "policy_allow",
        "policy_deny",
        "session_approved",
        "infrastructure_auto_allowed",
        "user_approved",
        "user_approved_for_session",
        "user_denied",
        "auto_approved",
        "confirmation_unavailable",
        "timed_out",
    ]
    assert ERROR_KINDS == (INTERNAL_ERROR, MALFORMED_INPUT, PROMPTER_ERROR)
    assert ERROR_KINDS == ("internal_error", "malformed_input", "prompter_error")
