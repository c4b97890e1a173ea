"""The sans-IO forwarding core: layout, wire shapes, parent and child state machines."""

from __future__ import annotations

import json
import re

import pytest

from askgate.forwarding.protocol import (
    MALFORMED_GRACE_MS,
    MAX_REQUEST_BYTES,
    ClientExchange,
    FileInfo,
    Finished,
    ForwardedRequest,
    Heartbeat,
    InvalidSessionId,
    Layout,
    Log,
    Respond,
    ServerCore,
    SessionApproval,
    Show,
    Wait,
    encode,
    heartbeat_is_fresh,
    new_request_id,
    quote_session_id,
    reply_from_response,
)
from askgate.prompters.base import PromptReply, PromptState

NOW = 1_715_700_000_000


@pytest.mark.parametrize(
    ("session", "quoted"),
    [
        ("abc-123_x.y", "abc-123_x.y"),
        ("a b/c", "a%20b%2Fc"),
        ("!~*'()", "!~*'()"),
        ("ü?#&=", "%C3%BC%3F%23%26%3D"),
        ("../x", "..%2Fx"),
    ],
)
def test_session_ids_are_quoted_like_encode_uri_component(session: str, quoted: str) -> None:
    assert quote_session_id(session) == quoted


@pytest.mark.parametrize("session", ["", ".", "..", "\ud800"])
def test_unusable_session_ids_are_refused(session: str) -> None:
    with pytest.raises(InvalidSessionId):
        quote_session_id(session)


def test_layout_matches_pi() -> None:
    layout = Layout("/r")
    assert str(layout.request_path("s 1", "id")) == "/r/sessions/s%201/requests/id.json"
    assert str(layout.response_path("s 1", "id")) == "/r/sessions/s%201/responses/id.json"
    assert str(layout.heartbeat_path("s 1")) == "/r/serving/s%201.json"


def test_request_ids_have_pis_shape() -> None:
    assert re.fullmatch(r"\d{13}-[0-9a-z]{8}-4242", new_request_id(NOW, 4242))
    assert new_request_id(NOW, 1, "abcdefgh") == f"{NOW}-abcdefgh-1"


def wire_request(**overrides) -> dict:
    body = {
        "id": f"{NOW}-k3j9x2ab-4242",
        "createdAt": NOW,
        "requesterSessionId": "child-1",
        "targetSessionId": "parent-1",
        "requesterAgentName": "Explore",
        "message": "Run `npm publish`?",
    }
    body.update(overrides)
    return body


def info_for(name: str, data: bytes, *, mtime_ms: int = NOW - 5000) -> FileInfo:
    return FileInfo(name, len(data), mtime_ms * 1_000_000)


def feed(core: ServerCore, body: dict | bytes, *, name: str | None = None, now: int = NOW):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    name = name or f"{wire_request()['id']}.json"
    info = info_for(name, data)
    assert core.to_read([info]) == [info]
    return info, core.received(info, data, now_ms=now)


def test_request_encoding_uses_pis_field_names() -> None:
    request = ForwardedRequest(
        id="1-a-2",
        created_at=NOW,
        requester_session_id="c",
        target_session_id="p",
        requester_agent_name="Explore",
        message="m",
    )
    assert json.loads(encode(request)) == {
        "id": "1-a-2",
        "createdAt": NOW,
        "requesterSessionId": "c",
        "targetSessionId": "p",
        "requesterAgentName": "Explore",
        "message": "m",
    }
    extended = ForwardedRequest(
        id="1-a-2",
        created_at=NOW,
        requester_session_id="c",
        target_session_id="p",
        requester_agent_name="Explore",
        message="m",
        surface="bash",
        value="npm publish",
        session_approval=SessionApproval(surface="bash", patterns=("npm publish *",)),
    )
    assert json.loads(encode(extended))["sessionApproval"] == {
        "surface": "bash",
        "patterns": ["npm publish *"],
    }


def test_a_valid_pi_request_is_shown_with_pis_wording() -> None:
    core = ServerCore("parent-1")
    _, actions = feed(core, wire_request())
    show = next(a for a in actions if isinstance(a, Show))
    assert show.prompt.message == (
        "Subagent 'Explore' requested permission.\nSession ID: child-1\n\nRun `npm publish`?"
    )
    assert show.prompt.agent == "Explore" and show.prompt.session == "parent-1"
    assert show.prompt.session_pattern is None  # pi children say nothing to record
    assert core.in_flight == {wire_request()["id"]}
    # While it is being answered it is not read again.
    data = json.dumps(wire_request()).encode()
    assert core.to_read([info_for(f"{wire_request()['id']}.json", data)]) == []


def test_an_answer_becomes_a_pi_response_and_done_clears_it() -> None:
    core = ServerCore("parent-1")
    feed(core, wire_request())
    actions = core.answered(
        wire_request()["id"],
        PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="use pnpm"),
        now_ms=NOW + 1,
    )
    respond = next(a for a in actions if isinstance(a, Respond))
    assert json.loads(respond.data) == {
        "approved": False,
        "state": "denied_with_reason",
        "denialReason": "use pnpm",
        "responderSessionId": "parent-1",
        "respondedAt": NOW + 1,
    }
    core.done(wire_request()["id"])
    assert core.in_flight == frozenset()


def test_a_request_for_another_session_is_left_alone_until_it_changes() -> None:
    core = ServerCore("parent-1")
    info, actions = feed(core, wire_request(targetSessionId="someone-else"))
    assert [a.event for a in actions if isinstance(a, Log)] == ["request_wrong_target"]
    assert not any(isinstance(a, (Show, Respond)) for a in actions)
    assert core.to_read([info]) == []  # not re-read, not re-logged
    changed = FileInfo(info.name, info.size + 1, info.mtime_ns + 1)
    assert core.to_read([changed]) == [changed]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"{not json", "malformed"),
        (json.dumps(wire_request(createdAt="yesterday")).encode(), "malformed"),
        (json.dumps({"id": wire_request()["id"]}).encode(), "malformed"),
        (json.dumps(wire_request(id="other-id")).encode(), "names itself"),
        (b"[]", "malformed"),
    ],
)
def test_malformed_requests_are_answered_unavailable_not_shown(body: bytes, why: str) -> None:
    core = ServerCore("parent-1")
    _, actions = feed(core, body)
    respond = next(a for a in actions if isinstance(a, Respond))
    response = json.loads(respond.data)
    # pi has no "unavailable" state: denied, with the reason and askgate's own field.
    assert response["approved"] is False and response["state"] == "denied"
    assert response["askgateState"] == "unavailable"
    assert why in response["denialReason"]
    assert not any(isinstance(a, Show) for a in actions)


def test_a_fresh_unparsable_file_gets_time_to_become_whole() -> None:
    core = ServerCore("parent-1")
    name = f"{wire_request()['id']}.json"
    partial = b'{"id": "17157'
    info = FileInfo(name, len(partial), NOW * 1_000_000)
    assert core.received(info, partial, now_ms=NOW + 10) == []
    assert core.to_read([info]) == [info]  # looked at again
    late = core.received(info, partial, now_ms=NOW + MALFORMED_GRACE_MS + 1)
    assert any(isinstance(a, Respond) for a in late)


def test_an_oversized_request_is_refused_without_parsing() -> None:
    core = ServerCore("parent-1")
    name = f"{wire_request()['id']}.json"
    info = FileInfo(name, MAX_REQUEST_BYTES * 10, (NOW - 5000) * 1_000_000)
    actions = core.received(info, b"x" * (MAX_REQUEST_BYTES + 1), now_ms=NOW)
    assert (
        "larger than"
        in json.loads(next(a for a in actions if isinstance(a, Respond)).data)["denialReason"]
    )


@pytest.mark.parametrize("name", ["../evil.json", ".hidden.json", "a b.json", "x" * 200 + ".json"])
def test_files_with_unusable_names_are_ignored(name: str) -> None:
    core = ServerCore("parent-1")
    data = json.dumps(wire_request()).encode()
    info = info_for(name, data)
    actions = core.received(info, data, now_ms=NOW)
    assert [type(a) for a in actions] == [Log]
    assert core.to_read([info]) == []


def test_non_json_files_and_tmp_files_are_not_read() -> None:
    core = ServerCore("parent-1")
    listing = [
        FileInfo("a.json.4242.1.tmp", 10, 0),
        FileInfo("notes.txt", 10, 0),
        FileInfo("b.json", 10, 0),
        FileInfo("a.json", 10, 0),
    ]
    assert [i.name for i in core.to_read(listing)] == ["a.json", "b.json"]


# ------------------------------------------------------------------ responses


def response(**overrides) -> bytes:
    body = {
        "approved": True,
        "state": "approved",
        "responderSessionId": "parent-1",
        "respondedAt": NOW,
    }
    body.update(overrides)
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("body", "state"),
    [
        (response(), PromptState.APPROVED),
        (response(state="approved_for_session"), PromptState.APPROVED_FOR_SESSION),
        (response(approved=False, state="denied"), PromptState.DENIED),
        (response(approved=False, state="unavailable"), PromptState.UNAVAILABLE),
        (response(approved=False, state="timed_out"), PromptState.TIMED_OUT),
    ],
)
def test_responses_map_to_replies(body: bytes, state: PromptState) -> None:
    assert reply_from_response(body, expected_responder="parent-1").state is state


def test_a_pi_response_without_responded_at_is_accepted() -> None:
    body = json.dumps(
        {
            "approved": False,
            "state": "denied_with_reason",
            "denialReason": "no",
            "responderSessionId": "p",
        }
    ).encode()
    reply = reply_from_response(body, expected_responder="p")
    assert (reply.state, reply.denial_reason) == (PromptState.DENIED_WITH_REASON, "no")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"garbage",
        response(state="denied"),  # approved=true contradicts the state
        response(approved=False, state="approved"),
        response(state="approved_for_serving_session_x"),
        response(responderSessionId="intruder"),
        response(approved="true"),
    ],
)
def test_odd_responses_fail_closed_as_unavailable(body: bytes) -> None:
    reply = reply_from_response(body, expected_responder="parent-1")
    assert reply.state is PromptState.UNAVAILABLE and not reply.approved


# ------------------------------------------------------------------ child exchange


def exchange(**kw) -> ClientExchange:
    request = ForwardedRequest(
        id="1-a-2",
        created_at=NOW,
        requester_session_id="c",
        target_session_id="parent-1",
        requester_agent_name="a",
        message="m",
    )
    options = {"started_ms": NOW, "timeout_ms": 10_000, "grace_ms": 2_000} | kw
    return ClientExchange(request, **options)


def test_child_finishes_on_a_response() -> None:
    ex = exchange()
    assert ex.step(NOW + 1, response=None, serving=True) == Wait(NOW + 10_000)
    done = ex.step(NOW + 2, response=response(), serving=True)
    assert isinstance(done, Finished) and done.reply.approved and done.event == "response_received"


def test_child_gives_up_when_nobody_serves_within_the_grace() -> None:
    ex = exchange()
    assert isinstance(ex.step(NOW + 1_999, response=None, serving=False), Wait)
    done = ex.step(NOW + 2_000, response=None, serving=False)
    assert isinstance(done, Finished) and done.event == "not_serving"
    assert done.reply.state is PromptState.UNAVAILABLE
    assert done.reply.detail == "nobody is serving session parent-1"


def test_serving_resets_the_grace_and_losing_it_mid_request_ends_the_wait() -> None:
    ex = exchange()
    assert isinstance(ex.step(NOW + 5_000, response=None, serving=True), Wait)
    assert isinstance(ex.step(NOW + 6_500, response=None, serving=False), Wait)
    done = ex.step(NOW + 7_000, response=None, serving=False)
    assert isinstance(done, Finished) and done.reply.state is PromptState.UNAVAILABLE


def test_child_times_out_as_timed_out_not_denied() -> None:
    ex = exchange(timeout_ms=3_000)
    done = ex.step(NOW + 3_000, response=None, serving=True)
    assert isinstance(done, Finished) and done.reply.state is PromptState.TIMED_OUT
    assert done.event == "response_timed_out"


def test_without_required_heartbeat_only_the_deadline_applies() -> None:
    ex = exchange(require_heartbeat=False)
    assert isinstance(ex.step(NOW + 9_000, response=None, serving=False), Wait)
    done = ex.step(NOW + 10_000, response=None, serving=False)
    assert isinstance(done, Finished) and done.reply.state is PromptState.TIMED_OUT


def test_heartbeat_freshness_window_and_clamping() -> None:
    beat = Heartbeat(session_id="s", pid=1, host="h", refreshed_at=NOW, interval_ms=2_000)
    assert heartbeat_is_fresh(beat, NOW + 6_000)
    assert not heartbeat_is_fresh(beat, NOW + 6_001)
    assert not heartbeat_is_fresh(beat, NOW - 6_001)  # far in the future: not trusted
    forever = Heartbeat(session_id="s", pid=1, host="h", refreshed_at=NOW, interval_ms=10**12)
    assert not heartbeat_is_fresh(forever, NOW + 3 * 60_000 + 1)
