"""Forwarding in pi's terms (#8 items 9-11): what askgate writes for a pi child, what an
askgate child reads back, and how an approval by a parent session is worded."""

from __future__ import annotations

import json

import pytest

from askgate.forwarding.protocol import (
    PI_STATES,
    ClientExchange,
    Finished,
    ForwardedRequest,
    ServerCore,
    Wait,
    reply_from_response,
    response_for_reply,
)
from askgate.gate import Gate
from askgate.outcome import Resolution, ToolRequest
from askgate.policy.model import Action
from askgate.prompters.base import PromptReply, PromptState
from conftest import ScriptedPrompter, policy_for

NOW = 1_715_700_000_000


@pytest.mark.parametrize("state", list(PromptState))
def test_every_response_askgate_writes_is_valid_for_pi(state: PromptState) -> None:
    reply = PromptReply(
        state=state, denial_reason="r" if state.value.startswith("denied") else None
    )
    wire = json.loads(
        ServerCore("p", prompt_timeout=600).answered("1-a-2", reply, now_ms=NOW)[1].data
    )
    assert wire["state"] in PI_STATES
    assert isinstance(wire["approved"], bool) and isinstance(wire["responderSessionId"], str)
    # An approval is written only for a human's approval.
    assert wire["approved"] is reply.approved


@pytest.mark.parametrize(
    ("reply", "reason", "askgate_state"),
    [
        (
            PromptReply(state=PromptState.TIMED_OUT, detail="no answer"),
            "nobody answered within 600 s",
            "timed_out",
        ),
        (
            PromptReply(state=PromptState.UNAVAILABLE, detail="terminal closed"),
            "no human could be asked (terminal closed)",
            "unavailable",
        ),
    ],
)
def test_an_unanswered_ask_is_denied_with_what_happened(reply, reason, askgate_state) -> None:
    response = response_for_reply(reply, responder="p", now_ms=NOW, timeout=600)
    assert (response.approved, response.state) == (False, "denied")
    assert response.denial_reason == reason
    assert response.askgate_state == askgate_state
    # An askgate child recovers the real outcome: never a user's denial.
    back = reply_from_response(
        json.dumps(
            {
                "approved": False,
                "state": "denied",
                "denialReason": reason,
                "askgateState": askgate_state,
                "responderSessionId": "p",
            }
        ).encode(),
        expected_responder="p",
    )
    assert back.state is reply.state
    assert back.detail == reason
    assert not back.approved


def test_the_timeout_named_is_the_servers() -> None:
    reply = PromptReply(state=PromptState.TIMED_OUT)
    data = ServerCore("p", prompt_timeout=30).answered("1-a-2", reply, now_ms=NOW)[1].data
    assert json.loads(data)["denialReason"] == "nobody answered within 30 s"


@pytest.mark.parametrize("odd", ["approved", "denied", "bogus", ""])
def test_askgate_state_never_turns_into_anything_but_a_non_answer(odd: str) -> None:
    body = {
        "approved": False,
        "state": "denied",
        "askgateState": odd,
        "responderSessionId": "p",
    }
    reply = reply_from_response(json.dumps(body).encode(), expected_responder="p")
    assert reply.state is PromptState.DENIED
    # On an approval the field is ignored: it cannot make anything stricter or looser.
    body.update(approved=True, state="approved", askgateState="timed_out")
    assert reply_from_response(json.dumps(body).encode(), expected_responder="p").approved


def test_pi_serving_session_grant_is_an_approval_for_this_session() -> None:
    body = {"approved": True, "state": "approved_for_serving_session", "responderSessionId": "p"}
    reply = reply_from_response(json.dumps(body).encode(), expected_responder="p")
    assert reply.state is PromptState.APPROVED_FOR_SESSION
    body["approved"] = False
    bad = reply_from_response(json.dumps(body).encode(), expected_responder="p")
    assert bad.state is PromptState.UNAVAILABLE


def test_approvals_from_a_parent_name_the_parent_not_the_user() -> None:
    body = {"approved": True, "state": "approved", "responderSessionId": "parent-7"}
    reply = reply_from_response(json.dumps(body).encode(), expected_responder="parent-7")
    assert reply.answered_by == "parent session parent-7"
    denied = {"approved": False, "state": "denied", "responderSessionId": "parent-7"}
    assert (
        reply_from_response(json.dumps(denied).encode(), expected_responder="parent-7").answered_by
        is None
    )


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        (PromptState.APPROVED, "approved by parent session parent-7"),
        (PromptState.APPROVED_FOR_SESSION, "approved for this session by parent session parent-7"),
    ],
)
def test_the_gate_records_who_approved(project, home, state, reason) -> None:
    reply = PromptReply(state=state, answered_by="parent session parent-7")
    gate = Gate(
        policy_for(project, home, [("bash", "git *", "ask")]), prompter=ScriptedPrompter([reply])
    )
    request = ToolRequest(
        tool="Bash", input={"command": "git push"}, cwd=str(project), agent="main", session="s1"
    )
    out = gate.decide(request)
    assert out.action is Action.ALLOW
    assert out.resolution in (Resolution.USER_APPROVED, Resolution.USER_APPROVED_FOR_SESSION)
    assert out.reason == reason
    assert "by the user" not in out.reason


def _exchange(**kw) -> ClientExchange:
    request = ForwardedRequest(
        id="1-a-2",
        created_at=NOW,
        requester_session_id="c",
        target_session_id="p",
        requester_agent_name="a",
        message="m",
    )
    return ClientExchange(request, started_ms=0, timeout_ms=10_000, grace_ms=2_000, **kw)


def test_a_target_without_heartbeats_is_waited_for_until_the_deadline() -> None:
    ex = _exchange()
    assert isinstance(ex.step(5_000, response=None, serving=None), Wait)
    assert ex.unchecked
    done = ex.step(10_000, response=None, serving=None)
    assert isinstance(done, Finished) and done.reply.state is PromptState.TIMED_OUT


def test_a_target_whose_heartbeat_was_seen_and_vanished_fails_fast() -> None:
    ex = _exchange()
    assert isinstance(ex.step(100, response=None, serving=True), Wait)
    assert isinstance(ex.step(1_000, response=None, serving=None), Wait)
    done = ex.step(2_100, response=None, serving=None)
    assert isinstance(done, Finished) and done.event == "not_serving"


def test_a_stale_heartbeat_still_fails_fast() -> None:
    ex = _exchange()
    done = ex.step(2_000, response=None, serving=False)
    assert isinstance(done, Finished) and done.reply.state is PromptState.UNAVAILABLE


def test_a_stopped_server_leaves_a_stopped_heartbeat_shown_by_status(tmp_path) -> None:
    import io

    from askgate.forward_cli import status
    from askgate.forwarding import ForwardingPrompter, ForwardingServer

    server = ForwardingServer("p", ScriptedPrompter([]), root=tmp_path)
    server.start()
    assert ForwardingPrompter("p", root=tmp_path).available()
    server.stop()
    assert not ForwardingPrompter("p", root=tmp_path).available()
    out = io.StringIO()
    status(tmp_path, out)
    assert "session 'p'" in out.getvalue() and ": stopped" in out.getvalue()
    # A new server for the same session starts over the stopped heartbeat.
    again = ForwardingServer("p", ScriptedPrompter([]), root=tmp_path)
    again.start()
    try:
        assert ForwardingPrompter("p", root=tmp_path).available()
    finally:
        again.stop()
