"""The RPC channels a real Gate serves, decision events for every resolution, and an
in-process child asking its parent over the shared bus."""

from __future__ import annotations

import logging
import threading

import pytest

from askgate.events import (
    CHANNEL_DECISION,
    CHANNEL_READY,
    CHANNEL_RPC_CHECK,
    CHANNEL_RPC_PING,
    CHANNEL_RPC_PROMPT,
    EventBus,
    reply_channel,
    request_sync,
)
from askgate.gate import Gate
from askgate.outcome import Resolution, ToolRequest
from askgate.prompters.base import PromptReply, PromptRequest, PromptState
from askgate.prompters.bus import BusPrompter, reply_from_envelope
from conftest import ScriptedPrompter, policy_for


class Recorder:
    def __init__(self, bus: EventBus, channel: str) -> None:
        self.items: list[dict] = []
        bus.on(channel, self.items.append)


def gate_on_bus(project, home, rules, *, prompter=None, **policy_kw) -> tuple[Gate, EventBus]:
    bus = EventBus()
    gate = Gate(policy_for(project, home, rules, **policy_kw), prompter=prompter, bus=bus)
    return gate, bus


def check(bus: EventBus, **payload) -> dict:
    return request_sync(bus, CHANNEL_RPC_CHECK, payload, timeout=5)


# ------------------------------------------------------------------ ready / ping / detach


def test_ready_is_emitted_once_on_attach_and_handlers_go_on_close(project, home) -> None:
    bus = EventBus()
    ready = Recorder(bus, CHANNEL_READY)
    gate = Gate(policy_for(project, home, []), bus=bus)
    assert ready.items == [{"protocolVersion": 1}]
    pong = request_sync(bus, CHANNEL_RPC_PING, {}, timeout=5)
    assert pong == {"success": True, "protocolVersion": 1, "data": {"protocolVersion": 1}}
    gate.close()
    for channel in (CHANNEL_RPC_CHECK, CHANNEL_RPC_PROMPT, CHANNEL_RPC_PING):
        assert not bus.has_listeners(channel)
    gate.close()  # idempotent
    assert ready.items == [{"protocolVersion": 1}]


# ------------------------------------------------------------------ rpc:check


def test_check_allow_deny_ask_with_pattern_and_origin(project, home) -> None:
    rules = [("mcp", "github:list_*", "allow"), ("mcp", "github:delete_*", "deny")]
    _gate, bus = gate_on_bus(project, home, rules)
    allow = check(bus, requestId="1", surface="mcp", value="github:list_issues")
    assert allow == {
        "success": True,
        "protocolVersion": 1,
        "data": {"result": "allow", "matchedPattern": "github:list_*", "origin": "user"},
    }
    deny = check(bus, requestId="2", surface="mcp", value="github:delete_repo", agentName="a")
    assert deny["data"] == {"result": "deny", "matchedPattern": "github:delete_*", "origin": "user"}
    ask = check(bus, requestId="3", surface="tool", value="WebFetch")
    assert ask["data"]["result"] == "ask" and ask["data"]["matchedPattern"] is None


def test_check_honours_per_agent_rules(project, home) -> None:
    rules = [("tool", "WebFetch", "deny", {"agent": "explore"})]
    _gate, bus = gate_on_bus(project, home, rules)
    agent = check(bus, requestId="1", surface="tool", value="WebFetch", agentName="explore")
    other = check(bus, requestId="2", surface="tool", value="WebFetch", agentName="main")
    assert (agent["data"]["result"], other["data"]["result"]) == ("deny", "ask")


def test_check_bash_allow_and_deny(project, home) -> None:
    rules = [("bash", "git status *", "allow"), ("bash", "rm *", "deny")]
    _gate, bus = gate_on_bus(project, home, rules)
    allow = check(bus, requestId="1", surface="bash", value="git status --short")
    assert allow["data"] == {"result": "allow", "matchedPattern": "git status *", "origin": "user"}
    deny = check(bus, requestId="2", surface="bash", value="rm -rf build")
    assert deny["data"] == {"result": "deny", "matchedPattern": "rm *", "origin": "user"}


def test_check_analyses_a_bash_value_like_a_real_command(project, home) -> None:
    _gate, bus = gate_on_bus(
        project, home, [("bash", "git status *", "allow"), ("bash", "rm *", "deny")]
    )
    # The allowed prefix does not carry the chained command (open question 3 answered).
    chained = check(bus, requestId="c", surface="bash", value="git status && rm -rf /")
    assert chained["data"]["result"] == "deny"
    substituted = check(bus, requestId="s", surface="bash", value="git status $(rm -rf ~)")
    assert substituted["data"]["result"] == "deny"


def test_check_includes_session_approvals_without_prompting(project, home) -> None:
    prompter = ScriptedPrompter([PromptState.APPROVED_FOR_SESSION])
    gate, bus = gate_on_bus(project, home, [], prompter=prompter)
    before = check(bus, requestId="a", surface="mcp", value="github:list_issues")
    assert before["data"]["result"] == "ask"
    gate.decide(ToolRequest(tool="mcp__github__create_issue", cwd=str(project)))
    after = check(bus, requestId="b", surface="mcp", value="github:list_issues")
    assert after["data"]["result"] == "allow"
    assert len(prompter.seen) == 1  # the check itself never prompted


def test_check_unknown_surface_and_bad_fields_are_error_replies(project, home) -> None:
    _gate, bus = gate_on_bus(project, home, [("tool", "*", "allow")])
    unknown = check(bus, requestId="u", surface="telepathy", value="x")
    assert unknown["success"] is False and unknown["error"].startswith("unknown_surface")
    missing = check(bus, requestId="m")
    assert missing["success"] is False and missing["error"].startswith("invalid_request")
    assert "surface" in missing["error"]
    wrong_type = check(bus, requestId="w", surface="tool", value=7)
    assert wrong_type["success"] is False and wrong_type["error"].startswith("invalid_request")


def test_requests_without_a_string_request_id_are_dropped_and_logged(project, home, caplog) -> None:
    _gate, bus = gate_on_bus(project, home, [("tool", "*", "allow")])
    replies: list = []
    bus.on(reply_channel(CHANNEL_RPC_CHECK, "7"), replies.append)
    bus.on(reply_channel(CHANNEL_RPC_CHECK, "None"), replies.append)
    with caplog.at_level(logging.WARNING, logger="askgate.events"):
        for bad in ({"surface": "tool", "value": "x"}, {"requestId": 7, "surface": "tool"}, "x"):
            bus.emit(CHANNEL_RPC_CHECK, bad)
            bus.emit(CHANNEL_RPC_PROMPT, bad)
            bus.emit(CHANNEL_RPC_PING, bad)
    assert replies == []
    assert sum("without a string requestId" in r.getMessage() for r in caplog.records) == 9


def test_check_with_a_broken_gate_is_an_internal_error_not_an_allow(project, home) -> None:
    gate, bus = gate_on_bus(project, home, [("tool", "*", "allow")])

    def explode(*args, **kwargs):
        raise RuntimeError("policy exploded")

    gate.check = gate.check_session = explode  # type: ignore[method-assign]
    reply = check(bus, requestId="x", surface="tool", value="Read")
    assert reply == {"success": False, "protocolVersion": 1, "error": "internal_error"}


# ------------------------------------------------------------------ rpc:prompt


def prompt_payload(request_id: str = "p1", **extra) -> dict:
    payload = {
        "requestId": request_id,
        "surface": "bash",
        "value": "npm publish",
        "message": "Agent 'explore' wants to run npm publish",
        "agentName": "explore",
        "sessionLabel": 'Yes, allow bash "npm publish *" for this session',
    }
    payload.update(extra)
    return payload


def test_prompt_without_a_reachable_human_replies_no_ui(project, home) -> None:
    _gate, bus = gate_on_bus(project, home, [])  # NoPrompter
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(), timeout=5)
    assert reply == {"success": False, "protocolVersion": 1, "error": "no_ui"}
    assert reply_from_envelope(reply).state is PromptState.UNAVAILABLE


@pytest.mark.parametrize(
    ("answer", "data"),
    [
        (PromptReply(state=PromptState.APPROVED), {"approved": True, "state": "approved"}),
        (
            PromptReply(state=PromptState.APPROVED_FOR_SESSION),
            {"approved": True, "state": "approved_for_session"},
        ),
        (PromptReply(state=PromptState.DENIED), {"approved": False, "state": "denied"}),
        (
            PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="use pnpm"),
            {"approved": False, "state": "denied_with_reason", "denialReason": "use pnpm"},
        ),
    ],
)
def test_prompt_shows_the_dialog_and_returns_the_answer(project, home, answer, data) -> None:
    prompter = ScriptedPrompter([answer])
    gate, bus = gate_on_bus(project, home, [], prompter=prompter)
    gate.session = "parent-1"
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(), timeout=5)
    assert reply == {"success": True, "protocolVersion": 1, "data": data}
    shown = prompter.seen[0]
    assert (shown.request_id, shown.surface, shown.value) == ("p1", "bash", "npm publish")
    assert shown.agent == "explore" and shown.session == "parent-1"
    assert shown.session_label and shown.session_pattern  # the option is offered
    assert reply_from_envelope(reply).state is answer.state


def test_prompt_timed_out_and_unavailable_are_errors_never_user_denials(project, home) -> None:
    prompter = ScriptedPrompter(
        [PromptReply(state=PromptState.TIMED_OUT), PromptReply(state=PromptState.UNAVAILABLE)]
    )
    _gate, bus = gate_on_bus(project, home, [], prompter=prompter)
    timed_out = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload("a"), timeout=5)
    assert timed_out["error"] == "timed_out"
    assert reply_from_envelope(timed_out).state is PromptState.TIMED_OUT
    unavailable = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload("b"), timeout=5)
    assert unavailable["error"] == "no_ui"


def test_prompt_with_missing_fields_is_an_error_reply(project, home) -> None:
    _gate, bus = gate_on_bus(project, home, [], prompter=ScriptedPrompter([]))
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, {"requestId": "x", "surface": "bash"}, timeout=5)
    assert reply["success"] is False and reply["error"].startswith("invalid_request")


def test_prompter_crash_is_an_error_reply(project, home) -> None:
    _gate, bus = gate_on_bus(project, home, [], prompter=ScriptedPrompter([]))  # raises
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, prompt_payload(), timeout=5)
    assert reply == {"success": False, "protocolVersion": 1, "error": "internal_error"}


class GatedPrompter:
    """Blocks every prompt until released; counts concurrent prompts."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Semaphore(0)
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.started.release()
        self.release.wait(10)
        with self._lock:
            self.active -= 1
        return PromptReply(state=PromptState.APPROVED)


def test_prompts_are_shown_one_at_a_time_and_emit_does_not_block(project, home) -> None:
    prompter = GatedPrompter()
    _gate, bus = gate_on_bus(project, home, [], prompter=prompter)
    replies: list[dict] = []
    done = threading.Semaphore(0)
    for i in range(3):
        bus.on(
            reply_channel(CHANNEL_RPC_PROMPT, f"r{i}"),
            lambda d: (replies.append(d), done.release()),
        )
        bus.emit(CHANNEL_RPC_PROMPT, prompt_payload(f"r{i}"))  # returns at once
    assert prompter.started.acquire(timeout=5)
    prompter.release.set()
    for _ in range(3):
        assert done.acquire(timeout=5)
    assert prompter.max_active == 1
    assert all(r["data"]["approved"] for r in replies)


def test_close_answers_queued_prompts_with_shutdown(project, home) -> None:
    prompter = GatedPrompter()
    gate, bus = gate_on_bus(project, home, [], prompter=prompter)
    replies: dict[str, dict] = {}
    done = threading.Semaphore(0)
    for rid in ("first", "queued"):
        bus.on(
            reply_channel(CHANNEL_RPC_PROMPT, rid),
            lambda d, rid=rid: (replies.__setitem__(rid, d), done.release()),
        )
        bus.emit(CHANNEL_RPC_PROMPT, prompt_payload(rid))
    assert prompter.started.acquire(timeout=5)  # "first" is on screen
    gate.close()
    prompter.release.set()
    assert done.acquire(timeout=5) and done.acquire(timeout=5)
    assert replies["first"]["success"] is True
    assert replies["queued"] == {"success": False, "protocolVersion": 1, "error": "shutdown"}


# ------------------------------------------------------------------ in-process child


def test_in_process_child_asks_the_parent_over_the_shared_bus(project, home) -> None:
    bus = EventBus()
    ready = Recorder(bus, CHANNEL_READY)
    decisions = Recorder(bus, CHANNEL_DECISION)
    parent_prompter = ScriptedPrompter([PromptState.APPROVED_FOR_SESSION])
    parent = Gate(policy_for(project, home, []), prompter=parent_prompter, bus=bus, session="P")
    child = Gate(policy_for(project, home, []), prompter=BusPrompter(bus), bus=bus, session="C")
    # The child serves nothing and announces nothing on the parent's bus.
    assert len(ready.items) == 1 and bus.listener_count(CHANNEL_RPC_PROMPT) == 1
    assert child.prompter.available()
    out = child.decide(
        ToolRequest(tool="mcp__github__create_issue", cwd=str(project), agent="explore")
    )
    assert out.resolution is Resolution.USER_APPROVED_FOR_SESSION
    shown = parent_prompter.seen[0]
    assert shown.agent == "explore" and shown.session == "P" and shown.session_pattern == "github:*"
    # The session approval is recorded in the child, which asked.
    again = child.decide(ToolRequest(tool="mcp__github__list_issues", cwd=str(project)))
    assert again.resolution is Resolution.SESSION_APPROVED
    assert [d["resolution"] for d in decisions.items] == [
        "user_approved_for_session",
        "session_approved",
    ]
    parent.close()
    assert not child.prompter.available()
    gone = child.decide(ToolRequest(tool="WebFetch", cwd=str(project)))
    assert gone.resolution is Resolution.CONFIRMATION_UNAVAILABLE
    child.close()


def test_bus_prompter_without_parent_is_unavailable_not_denied() -> None:
    prompter = BusPrompter(EventBus(), default_timeout=0.1)
    assert not prompter.available()
    reply = prompter.prompt(PromptRequest(request_id="r", surface="bash", value="x", message="m"))
    assert reply.state is PromptState.UNAVAILABLE and "no_handler" in (reply.detail or "")


def test_bus_prompter_times_out_when_the_parent_never_answers() -> None:
    bus = EventBus()
    bus.on(CHANNEL_RPC_PROMPT, lambda data: None)
    reply = BusPrompter(bus).prompt(
        PromptRequest(request_id="r", surface="bash", value="x", message="m"), timeout=0.05
    )
    assert reply.state is PromptState.TIMED_OUT


@pytest.mark.parametrize(
    "envelope",
    [
        {"success": True, "protocolVersion": 1},
        {"success": True, "protocolVersion": 1, "data": {"approved": True, "state": "denied"}},
        {"success": True, "protocolVersion": 1, "data": {"approved": True, "state": "sure"}},
        {"success": True, "protocolVersion": 1, "data": {"approved": "yes", "state": "approved"}},
    ],
)
def test_bus_prompter_fails_closed_on_malformed_replies(envelope) -> None:
    reply = reply_from_envelope(envelope)
    assert not reply.approved and reply.state is PromptState.UNAVAILABLE


# ------------------------------------------------------------------ decision events


def _request(project, tool: str, **inp) -> ToolRequest:
    return ToolRequest(
        tool=tool, input=inp, cwd=str(project), agent="explore", request_id=f"id-{tool}"
    )


def _only_event(decisions: Recorder) -> dict:
    assert len(decisions.items) == 1, decisions.items
    event = decisions.items.pop()
    assert set(event) == {
        "surface",
        "value",
        "result",
        "resolution",
        "origin",
        "agentName",
        "matchedPattern",
        "requestId",
    }
    return event


def test_decision_event_for_policy_allow_and_deny(project, home) -> None:
    gate, bus = gate_on_bus(
        project, home, [("tool", "Lookup", "allow"), ("mcp", "gh:del*", "deny")]
    )
    decisions = Recorder(bus, CHANNEL_DECISION)
    gate.decide(_request(project, "Lookup", q="x"))
    assert _only_event(decisions) == {
        "surface": "tool",
        "value": "Lookup",
        "result": "allow",
        "resolution": "policy_allow",
        "origin": "user",
        "agentName": "explore",
        "matchedPattern": "Lookup",
        "requestId": "id-Lookup",
    }
    gate.decide(_request(project, "mcp__gh__delete_repo"))
    event = _only_event(decisions)
    assert (event["result"], event["resolution"]) == ("deny", "policy_deny")
    assert (event["surface"], event["value"]) == ("mcp", "gh:delete_repo")
    assert (event["matchedPattern"], event["origin"]) == ("gh:del*", "user")


def test_decision_event_for_a_bash_policy_deny(project, home) -> None:
    gate, bus = gate_on_bus(project, home, [("bash", "rm *", "deny")])
    decisions = Recorder(bus, CHANNEL_DECISION)
    gate.decide(_request(project, "Bash", command="rm -rf build"))
    event = _only_event(decisions)
    assert (event["result"], event["resolution"]) == ("deny", "policy_deny")
    assert (event["surface"], event["value"]) == ("bash", "rm -rf build")
    assert (event["matchedPattern"], event["origin"]) == ("rm *", "user")


@pytest.mark.parametrize(
    ("reply", "result", "resolution"),
    [
        (PromptReply(state=PromptState.APPROVED), "allow", "user_approved"),
        (PromptReply(state=PromptState.APPROVED_FOR_SESSION), "allow", "user_approved_for_session"),
        (PromptReply(state=PromptState.DENIED), "deny", "user_denied"),
        (
            PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="no"),
            "deny",
            "user_denied",
        ),
        (PromptReply(state=PromptState.TIMED_OUT), "deny", "timed_out"),
        (PromptReply(state=PromptState.UNAVAILABLE), "deny", "confirmation_unavailable"),
    ],
)
def test_decision_event_for_every_prompt_outcome(project, home, reply, result, resolution) -> None:
    gate, bus = gate_on_bus(project, home, [], prompter=ScriptedPrompter([reply]))
    decisions = Recorder(bus, CHANNEL_DECISION)
    gate.decide(_request(project, "WebFetch", url="https://example.com"))
    event = _only_event(decisions)
    assert (event["result"], event["resolution"]) == (result, resolution)
    assert (event["surface"], event["value"]) == ("net", "example.com:443")
    assert event["agentName"] == "explore"
    assert event["requestId"] == "id-WebFetch"
    assert event["matchedPattern"] is None and event["origin"] is None  # the default asked


def test_decision_event_for_session_hit_no_prompter_yolo_and_infrastructure(project, home) -> None:
    gate, bus = gate_on_bus(
        project, home, [], prompter=ScriptedPrompter([PromptState.APPROVED_FOR_SESSION])
    )
    decisions = Recorder(bus, CHANNEL_DECISION)
    gate.decide(_request(project, "mcp__github__create_issue"))
    decisions.items.clear()
    gate.decide(_request(project, "mcp__github__list_issues"))
    hit = _only_event(decisions)
    assert (hit["result"], hit["resolution"], hit["surface"]) == (
        "allow",
        "session_approved",
        "mcp",
    )
    assert hit["value"] == "github:list_issues"

    bare, bare_bus = gate_on_bus(project, home, [])
    bare_events = Recorder(bare_bus, CHANNEL_DECISION)
    bare.decide(_request(project, "WebFetch"))
    assert _only_event(bare_events)["resolution"] == "confirmation_unavailable"

    yolo, yolo_bus = gate_on_bus(project, home, [], yolo=True)
    yolo_events = Recorder(yolo_bus, CHANNEL_DECISION)
    yolo.decide(_request(project, "WebFetch"))
    event = _only_event(yolo_events)
    assert (event["result"], event["resolution"]) == ("allow", "auto_approved")

    infra = home / ".pi" / "agent"
    infra.mkdir(parents=True)
    ig, ig_bus = gate_on_bus(project, home, [], infrastructure_read_paths=[str(infra)])
    ig_events = Recorder(ig_bus, CHANNEL_DECISION)
    ig.decide(_request(project, "Read", file_path=str(infra / "settings.json")))
    event = _only_event(ig_events)
    assert (event["result"], event["resolution"]) == ("allow", "infrastructure_auto_allowed")
    assert (event["surface"], event["value"]) == ("read", str(infra / "settings.json"))


def test_decision_event_for_malformed_input_is_a_deny(project, home) -> None:
    gate, bus = gate_on_bus(project, home, [("tool", "*", "allow")])
    decisions = Recorder(bus, CHANNEL_DECISION)
    gate.decide(ToolRequest(tool="Read", input={}, cwd=str(project), request_id="bad"))
    event = _only_event(decisions)
    assert (event["result"], event["requestId"]) == ("deny", "bad")


def test_a_broken_subscriber_does_not_change_the_outcome(project, home) -> None:
    gate, bus = gate_on_bus(project, home, [("tool", "Lookup", "allow")])

    def broken(_: dict) -> None:
        raise RuntimeError("subscriber bug")

    bus.on(CHANNEL_DECISION, broken)
    decisions = Recorder(bus, CHANNEL_DECISION)
    out = gate.decide(_request(project, "Lookup"))
    assert out.resolution is Resolution.POLICY_ALLOW
    assert _only_event(decisions)["resolution"] == "policy_allow"
