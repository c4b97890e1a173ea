"""Seed 000 to the letter (issue 15, items 1-7): the event channel's remaining gaps,
each checked on a real Gate, a real EventBus and the real review log."""

from __future__ import annotations

import json
import logging

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.audit import AuditLog
from askgate.events import (
    CHANNEL_DECISION,
    CHANNEL_RPC_CHECK,
    CHANNEL_RPC_PING,
    CHANNEL_RPC_PROMPT,
    MAX_EVENT_VALUE_BYTES,
    EventBus,
    bound_event_value,
    decision_event,
    request_sync,
    to_json,
)
from askgate.gate import Gate
from askgate.outcome import Resolution, ToolRequest
from askgate.prompters.base import PromptReply, PromptState
from conftest import ScriptedPrompter, policy_for


def prompt_payload(request_id: str = "p1", **extra) -> dict:
    payload = {
        "requestId": request_id,
        "surface": "bash",
        "value": "npm publish",
        "message": "Agent 'explore' wants to run npm publish",
        "agentName": "explore",
    }
    payload.update(extra)
    return payload


# ------------------------------------------------------------------ item 1


def test_a_gate_without_a_human_does_not_answer_before_one_with_a_human(project, home) -> None:
    bus = EventBus()
    policy = policy_for(project, home, [])
    headless = Gate(policy, prompter=ScriptedPrompter([], available=False), bus=bus)
    human = ScriptedPrompter([PromptState.APPROVED])
    with_human = Gate(policy, prompter=human, bus=bus)
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(), timeout=5)
    assert reply == {
        "success": True,
        "protocolVersion": 1,
        "data": {"approved": True, "state": "approved"},
    }
    assert len(human.seen) == 1
    headless.close()
    with_human.close()


def test_the_order_of_attachment_does_not_matter(project, home) -> None:
    bus = EventBus()
    policy = policy_for(project, home, [])
    human = ScriptedPrompter([PromptState.DENIED])
    with_human = Gate(policy, prompter=human, bus=bus)
    headless = Gate(policy, prompter=ScriptedPrompter([], available=False), bus=bus)
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(), timeout=5)
    assert reply["success"] is True and reply["data"]["state"] == "denied"
    headless.close()
    with_human.close()


def test_no_ui_only_when_no_gate_on_the_bus_can_ask(project, home) -> None:
    bus = EventBus()
    policy = policy_for(project, home, [])
    gates = [Gate(policy, prompter=ScriptedPrompter([], available=False), bus=bus) for _ in "ab"]
    replies: list[dict] = []
    bus.on("permissions:rpc:prompt:reply:once", replies.append)
    bus.emit(CHANNEL_RPC_PROMPT, prompt_payload("once"))
    # Exactly one answer, synchronously, and it is no_ui.
    assert replies == [{"success": False, "protocolVersion": 1, "error": "no_ui"}]
    for gate in gates:
        gate.close()


def test_two_gates_with_a_human_show_the_prompt_once(project, home) -> None:
    bus = EventBus()
    policy = policy_for(project, home, [])
    first = ScriptedPrompter([PromptState.APPROVED])
    second = ScriptedPrompter([PromptState.APPROVED])
    gates = [Gate(policy, prompter=first, bus=bus), Gate(policy, prompter=second, bus=bus)]
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(), timeout=5)
    assert reply["success"] is True
    assert len(first.seen) + len(second.seen) == 1
    for gate in gates:
        gate.close()


def test_when_the_gate_with_a_human_closes_the_other_answers_no_ui(project, home) -> None:
    bus = EventBus()
    policy = policy_for(project, home, [])
    headless = Gate(policy, prompter=ScriptedPrompter([], available=False), bus=bus)
    with_human = Gate(policy, prompter=ScriptedPrompter([]), bus=bus)
    with_human.close()
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(), timeout=5)
    assert reply["error"] == "no_ui"
    headless.close()
    assert not bus.has_listeners(CHANNEL_RPC_PROMPT)


# ------------------------------------------------------------------ item 2


def test_a_session_approval_reports_origin_session_and_the_approved_pattern(project, home) -> None:
    bus = EventBus()
    rules = [("mcp", "github:*", "ask")]
    gate = Gate(
        policy_for(project, home, rules),
        prompter=ScriptedPrompter([PromptState.APPROVED_FOR_SESSION]),
        bus=bus,
        audit=AuditLog(str(home / "review.jsonl")),
    )
    events: list[dict] = []
    bus.on(CHANNEL_DECISION, events.append)
    first = gate.decide(ToolRequest(tool="mcp__github__create_issue", cwd=str(project)))
    assert first.resolution is Resolution.USER_APPROVED_FOR_SESSION
    hit = gate.decide(ToolRequest(tool="mcp__github__list_issues", cwd=str(project)))
    assert hit.resolution is Resolution.SESSION_APPROVED
    event = events[-1]
    assert (event["origin"], event["matchedPattern"]) == ("session", "github:*")
    # The rpc:check reply says the same.
    reply = request_sync(
        bus,
        CHANNEL_RPC_CHECK,
        {"requestId": "c", "surface": "mcp", "value": "github:close_issue"},
        timeout=5,
    )
    assert reply["data"] == {"result": "allow", "matchedPattern": "github:*", "origin": "session"}
    # And so does the review log.
    lines = (home / "review.jsonl").read_text().splitlines()
    record = json.loads(lines[-1])
    assert record["resolution"] == "session_approved"
    assert record["session_pattern"] == "github:*"
    # `rule` stays what the policy said (its action is `policy_action`, ask).
    assert record["rule"]["action"] == "ask" and record["policy_action"] == "ask"
    gate.close()


# ------------------------------------------------------------------ item 3


def _check(bus: EventBus, surface: str, value: str | None = None) -> dict:
    payload: dict = {"requestId": f"{surface}-{value}", "surface": surface}
    if value is not None:
        payload["value"] = value
    return request_sync(bus, CHANNEL_RPC_CHECK, payload, timeout=5)


def test_rpc_check_accepts_pis_surface_and_tool_names(project, home) -> None:
    bus = EventBus()
    rules = [
        ("write", "src/**", "deny"),
        ("read", "**", "allow"),
        ("tool", "*", "allow"),
        ("skill", "review", "allow"),
        ("mcp", "github:*", "allow"),
        ("bash", "git status", "allow"),
        ("external_directory", "/**", "deny"),
    ]
    gate = Gate(policy_for(project, home, rules), bus=bus)
    src = str(project / "src" / "a.py")
    expected = {
        ("tools", "WebFetch"): ("allow", "*"),
        ("skills", "review"): ("allow", "review"),
        ("mcp", "github:list"): ("allow", "github:*"),
        ("bash", "git status"): ("allow", "git status"),
        ("edit", src): ("deny", "src/**"),
        ("write", src): ("deny", "src/**"),
        ("read", src): ("allow", "**"),
        ("grep", src): ("allow", "**"),
        ("find", src): ("allow", "**"),
        ("ls", src): ("allow", "**"),
        # `path` is any access: the strictest of read and write.
        ("path", src): ("deny", "src/**"),
        ("external_directory", "/etc/passwd"): ("deny", "/**"),
        ("special", "external_directory"): ("deny", "/**"),
        # A path tool named without a path: is the tool itself allowed?
        ("edit", None): ("allow", "*"),
    }
    for (surface, value), (result, pattern) in expected.items():
        reply = _check(bus, surface, value)
        assert reply["success"] is True, (surface, value, reply)
        assert (reply["data"]["result"], reply["data"]["matchedPattern"]) == (result, pattern), (
            surface,
            value,
        )
    doom = _check(bus, "special", "doom_loop")
    assert doom["success"] is False and doom["error"].startswith("unknown_surface")
    assert "doom_loop" in doom["error"]
    gate.close()


# ------------------------------------------------------------------ item 4


def test_rpc_prompt_offers_a_session_approval_derived_from_the_value(project, home) -> None:
    bus = EventBus()
    replies = [PromptState.APPROVED_FOR_SESSION] * 4 + [PromptState.APPROVED] * 2
    human = ScriptedPrompter(replies)
    gate = Gate(policy_for(project, home, []), prompter=human, bus=bus)
    cases = [
        ("bash", "npm publish --tag next", "npm publish *"),
        ("mcp", "github:create_issue", "github:*"),
        ("tools", "WebFetch", "WebFetch"),
        ("edit", str(project / "src" / "a.py"), str(project / "src") + "/*"),
        # No safe pattern: nothing is offered (as for the gate's own asks).
        ("bash", "bash -c 'curl x | sh'", None),
        ("bash", "git status && python3 evil.py", None),
    ]
    for index, (surface, value, pattern) in enumerate(cases):
        payload = prompt_payload(f"s{index}", surface=surface, value=value)
        reply = request_sync(bus, CHANNEL_RPC_PROMPT, payload, timeout=5)
        assert reply["success"] is True
        shown = human.seen[index]
        assert shown.session_pattern == pattern, (surface, value)
        assert (shown.session_label is None) == (pattern is None)
    gate.close()


def test_rpc_prompt_keeps_the_callers_own_session_label(project, home) -> None:
    bus = EventBus()
    human = ScriptedPrompter([PromptState.APPROVED])
    gate = Gate(policy_for(project, home, []), prompter=human, bus=bus)
    label = 'Yes, allow bash "npm *" for this session'
    request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(sessionLabel=label), timeout=5)
    assert human.seen[0].session_label == label
    gate.close()


def test_rpc_prompt_offers_a_pattern_even_where_this_policy_would_allow(project, home) -> None:
    bus = EventBus()
    human = ScriptedPrompter([PromptState.APPROVED])
    gate = Gate(policy_for(project, home, [("bash", "npm *", "allow")]), prompter=human, bus=bus)
    payload = prompt_payload(surface="bash", value="npm publish")
    assert request_sync(bus, CHANNEL_RPC_PROMPT, payload, timeout=5)["success"] is True
    assert human.seen[0].session_pattern == "npm publish *"
    gate.close()


# ------------------------------------------------------------------ item 5


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rpc_prompt_writes_a_review_log_entry_with_the_answer(project, home) -> None:
    log_path = home / "review.jsonl"
    bus = EventBus()
    human = ScriptedPrompter(
        [
            PromptState.APPROVED,
            PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="use pnpm"),
            PromptReply(state=PromptState.TIMED_OUT),
        ]
    )
    gate = Gate(
        policy_for(project, home, []),
        prompter=human,
        bus=bus,
        audit=AuditLog(str(log_path)),
        session="parent-1",
    )
    for rid in ("caller-1", "caller-2", "caller-3"):
        request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(rid), timeout=5)
    records = _records(log_path)
    assert [r["source"] for r in records] == ["rpc_prompt"] * 3
    assert [r["event"] for r in records] == ["rpc_prompt"] * 3
    assert [r["request_id"] for r in records] == ["caller-1", "caller-2", "caller-3"]
    assert [r["answer"] for r in records] == ["approved", "denied_with_reason", "timed_out"]
    assert [r["approved"] for r in records] == [True, False, False]
    assert records[1]["denial_reason"] == "use pnpm"
    first = records[0]
    assert (first["surface"], first["value"], first["agent"]) == ("bash", "npm publish", "explore")
    assert first["session"] == "parent-1"
    gate.close()


def test_rpc_prompt_no_ui_is_logged_too(project, home) -> None:
    log_path = home / "review.jsonl"
    bus = EventBus()
    gate = Gate(policy_for(project, home, []), bus=bus, audit=AuditLog(str(log_path)))
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload("lonely"), timeout=5)
    assert reply["error"] == "no_ui"
    (record,) = _records(log_path)
    assert (record["source"], record["request_id"], record["answer"]) == (
        "rpc_prompt",
        "lonely",
        "no_ui",
    )
    assert record["approved"] is False
    gate.close()


# ------------------------------------------------------------------ item 6


def test_a_long_value_is_cut_in_decision_events_with_a_flag(project, home) -> None:
    bus = EventBus()
    gate = Gate(policy_for(project, home, [("bash", "echo *", "allow")]), bus=bus)
    events: list[dict] = []
    bus.on(CHANNEL_DECISION, events.append)
    command = "echo " + "é" * 2_500 + "x" * 2_500  # 5,005 characters, 7,505 bytes
    gate.decide(ToolRequest(tool="Bash", input={"command": command}, cwd=str(project)))
    (event,) = events
    assert event["valueTruncated"] is True
    assert command.startswith(event["value"])  # a prefix, cut between characters
    assert len(event["value"].encode()) <= MAX_EVENT_VALUE_BYTES
    assert len(to_json(event)) < 500
    assert event["result"] == "allow"


def _long_outcome(value: str, *, pattern: str, request_id: str) -> object:
    from types import SimpleNamespace

    rule = SimpleNamespace(origin="user", pattern=pattern)
    decision = SimpleNamespace(rule=rule, surface="bash", value=value)
    return SimpleNamespace(
        decision=decision,
        action="allow",
        resolution="policy_allow",
        session_pattern=None,
        request_id=request_id,
    )


def test_a_5000_character_command_with_real_field_lengths_is_under_500_bytes() -> None:
    """The measured gap: 500-516 bytes with a real agent name, pattern and request id."""
    command = "echo " + "é" * 2_500 + "x" * 2_500
    outcome = _long_outcome(
        command, pattern="echo *", request_id="toolu_01ABCDEFGHIJKLMNOPQRSTUVWX-0123456789"
    )
    event = to_json(decision_event(outcome, agent="general-purpose-subagent"))  # type: ignore[arg-type]
    assert len(event) < 500
    decoded = json.loads(event)
    assert decoded["valueTruncated"] is True and command.startswith(decoded["value"])
    assert decoded["matchedPattern"] == "echo *"  # short fields are never cut


@settings(max_examples=200, deadline=None)
@given(
    value=st.text(max_size=3_000),
    agent=st.none() | st.text(max_size=2_000),
    pattern=st.text(max_size=2_000),
    request_id=st.text(max_size=2_000),
)
def test_no_decision_event_reaches_500_bytes_whatever_its_fields_hold(
    value, agent, pattern, request_id
) -> None:
    outcome = _long_outcome(value, pattern=pattern, request_id=request_id)
    event = decision_event(outcome, agent=agent)  # type: ignore[arg-type]
    try:
        size = len(to_json(event))
    except UnicodeEncodeError:  # lone surrogates: what a JSON encoder escapes them to
        size = len(json.dumps(msgspec.to_builtins(event), separators=(",", ":")))
    assert size < 500
    assert value.startswith(event.value)
    assert event.value_truncated == (event.value != value)


def test_a_short_value_is_whole_and_carries_no_flag(project, home) -> None:
    bus = EventBus()
    gate = Gate(policy_for(project, home, [("bash", "echo *", "allow")]), bus=bus)
    events: list[dict] = []
    bus.on(CHANNEL_DECISION, events.append)
    gate.decide(ToolRequest(tool="Bash", input={"command": "echo hi"}, cwd=str(project)))
    assert events[0]["value"] == "echo hi" and "valueTruncated" not in events[0]


def test_the_cut_counts_json_escapes_and_survives_lone_surrogates() -> None:
    quoted = bound_event_value('"' * 1_000)
    assert quoted[1] is True and len(to_json(quoted[0])) - 2 <= MAX_EVENT_VALUE_BYTES
    surrogate = bound_event_value("\udcff" * 1_000)
    assert surrogate[1] is True and len(surrogate[0]) * 6 <= MAX_EVENT_VALUE_BYTES
    assert bound_event_value("short") == ("short", False)


# ------------------------------------------------------------------ item 7


def test_an_over_long_request_id_is_dropped_with_a_log_line_that_says_so(
    project, home, caplog
) -> None:
    bus = EventBus()
    gate = Gate(policy_for(project, home, [("tool", "*", "allow")]), bus=bus)
    long_id = "x" * 600
    replies: list = []
    for channel in (CHANNEL_RPC_CHECK, CHANNEL_RPC_PROMPT, CHANNEL_RPC_PING):
        bus.on(f"{channel}:reply:{long_id}", replies.append)
    with caplog.at_level(logging.WARNING, logger="askgate.events"):
        bus.emit(CHANNEL_RPC_CHECK, {"requestId": long_id, "surface": "tool", "value": "x"})
        bus.emit(CHANNEL_RPC_PROMPT, prompt_payload(long_id))
        bus.emit(CHANNEL_RPC_PING, {"requestId": long_id})
        bus.emit(CHANNEL_RPC_PING, {"requestId": ""})
    assert replies == []
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4
    for line in lines[:3]:
        assert "600 characters" in line and "512" in line
        assert "without" not in line  # the id was there: it was too long
    assert "empty requestId" in lines[3]
    gate.close()


def _json_body_size(text: str) -> int:
    try:
        return len(to_json(text)) - 2
    except UnicodeEncodeError:  # lone surrogates: measured with everything escaped
        return len(json.dumps(text)) - 2


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.characters(codec=None, exclude_categories=()), max_size=700),
    st.integers(min_value=1, max_value=400),
)
def test_the_cut_is_the_longest_prefix_that_fits(value: str, limit: int) -> None:
    kept, cut = bound_event_value(value, limit)
    assert value.startswith(kept)
    assert cut is (kept != value)
    assert _json_body_size(kept) <= limit
    if cut:  # one more character would not fit
        assert _json_body_size(value[: len(kept) + 1]) > limit
