"""The ACP proxy's sans-IO core and its policy translation (reference/agent-hooks.md §6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from askgate.adapters.acp.cli import agent_label, parse_args
from askgate.adapters.acp.core import (
    Audit,
    Decide,
    ProxyCore,
    ToAgent,
    ToClient,
    Verdict,
    choose_option,
)
from askgate.adapters.acp.decide import PermissionDecider, requests_for

OPTIONS = [
    {"optionId": "x1", "name": "Always", "kind": "allow_always"},
    {"optionId": "x2", "name": "No", "kind": "reject_once"},
    {"optionId": "x3", "name": "Yes", "kind": "allow_once"},
    {"optionId": "x4", "name": "Never", "kind": "reject_always"},
]


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def permission(request_id: Any = 7, session: str = "s1", **tool_call: Any) -> bytes:
    call = {"toolCallId": "c1", "title": "t", "kind": "execute", **tool_call}
    params = {"sessionId": session, "toolCall": call, "options": OPTIONS}
    return line(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "session/request_permission",
            "params": params,
        }
    )


def decide(core: ProxyCore, raw: bytes) -> Decide:
    [action] = core.from_agent(raw)
    assert isinstance(action, Decide)
    return action


def result_of(action: Any) -> dict[str, Any]:
    assert isinstance(action, ToAgent)
    message = json.loads(action.line)
    assert message["jsonrpc"] == "2.0"
    outcome: dict[str, Any] = message["result"]["outcome"]
    return outcome


@pytest.mark.parametrize(
    "raw",
    [
        line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        b'{"jsonrpc":"2.0","method":"session/update","params":{"x":  1}}\n',
        b"not json at all\n",
        b'{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":"odd"}\n',
        b"[1,2]\n",
    ],
)
def test_other_lines_pass_through_byte_for_byte(raw: bytes) -> None:
    core = ProxyCore()
    assert core.from_agent(raw) == [ToClient(raw)]
    assert core.from_client(raw) == [ToAgent(raw)]


def test_allow_selects_the_allow_once_option_by_kind() -> None:
    core = ProxyCore()
    action = decide(core, permission())
    [answer] = core.decided(action.key, Verdict.ALLOW, "fine")
    assert result_of(answer) == {"outcome": "selected", "optionId": "x3"}
    assert json.loads(answer.line)["id"] == 7
    assert core.deciding == 0


def test_deny_selects_reject_once_and_tells_the_client() -> None:
    core = ProxyCore()
    action = decide(core, permission(request_id="r-9"))
    notice, answer = core.decided(action.key, Verdict.DENY, "no deleting here")
    assert result_of(answer) == {"outcome": "selected", "optionId": "x2"}
    assert json.loads(answer.line)["id"] == "r-9"
    assert isinstance(notice, ToClient)
    update = json.loads(notice.line)
    assert update["method"] == "session/update"
    assert update["params"]["sessionId"] == "s1"
    assert "no deleting here" in update["params"]["update"]["content"]["text"]


def test_choose_option_never_picks_always_allow() -> None:
    only_always = [
        {"optionId": "a", "kind": "allow_always"},
        {"optionId": "r", "kind": "reject_once"},
    ]
    assert choose_option(only_always, Verdict.ALLOW) is None
    assert choose_option([{"optionId": "n", "kind": "reject_always"}], Verdict.DENY) == "n"
    assert choose_option("junk", Verdict.DENY) is None


def test_allow_without_allow_once_goes_to_the_client() -> None:
    core = ProxyCore()
    raw = permission()
    message = json.loads(raw)
    message["params"]["options"] = [{"optionId": "a", "kind": "allow_always"}]
    raw = line(message)
    action = decide(core, raw)
    assert core.decided(action.key, Verdict.ALLOW) == [ToClient(raw)]


def test_deny_without_a_reject_option_cancels() -> None:
    core = ProxyCore()
    message = json.loads(permission())
    message["params"]["options"] = [{"optionId": "a", "kind": "allow_once"}]
    action = decide(core, line(message))
    actions = core.decided(action.key, Verdict.DENY, "no")
    assert result_of(actions[-1]) == {"outcome": "cancelled"}


def test_forward_sends_the_original_request_unchanged() -> None:
    core = ProxyCore()
    raw = permission()
    action = decide(core, raw)
    assert core.decided(action.key, Verdict.FORWARD) == [ToClient(raw)]
    client_answer = line({"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "x"}}})
    assert core.from_client(client_answer) == [ToAgent(client_answer)]


def test_cancel_answers_cancelled_and_drops_the_late_verdict() -> None:
    core = ProxyCore()
    mine = decide(core, permission(request_id=1, session="s1"))
    other = decide(core, permission(request_id=2, session="s2"))
    cancel = line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
    forwarded, answer = core.from_client(cancel)
    assert forwarded == ToAgent(cancel)
    assert result_of(answer) == {"outcome": "cancelled"}
    assert json.loads(answer.line)["id"] == 1
    assert core.decided(mine.key, Verdict.ALLOW) == []
    assert result_of(core.decided(other.key, Verdict.ALLOW)[0])["optionId"] == "x3"


def test_ids_of_different_types_do_not_collide() -> None:
    core = ProxyCore()
    number = decide(core, permission(request_id=5))
    text = decide(core, permission(request_id="5"))
    assert number.key != text.key
    assert json.loads(core.decided(text.key, Verdict.ALLOW)[0].line)["id"] == "5"


def test_session_cwd_is_learned_from_session_new() -> None:
    core = ProxyCore(default_cwd="/default")
    new = line({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/proj"}})
    core.from_client(new)
    core.from_agent(line({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1"}}))
    assert decide(core, permission(session="s1")).cwd == "/proj"
    assert decide(core, permission(request_id=8, session="unknown")).cwd == "/default"


def test_tool_calls_in_session_update_are_audited() -> None:
    core = ProxyCore()
    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "c9",
        "title": "Run tests",
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": "make test", "api_key": "sk-123456"},
        "locations": [{"path": "/p/a.py"}],
    }
    raw = line(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": update},
        }
    )
    forwarded, audit = core.from_agent(raw)
    assert forwarded == ToClient(raw)
    assert isinstance(audit, Audit)
    record = audit.record
    assert record["event"] == "tool_call_seen"
    assert (record["tool_call_id"], record["kind"], record["session"]) == ("c9", "execute", "s")
    assert record["input"]["command"] == "make test"
    assert record["input"]["api_key"] == "[redacted]"
    assert record["locations"] == ["/p/a.py"]
    progress = dict(update, sessionUpdate="tool_call_update")
    raw2 = line(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": progress},
        }
    )
    assert core.from_agent(raw2) == [ToClient(raw2)]


# --- translation and decisions -------------------------------------------------------------

POLICY = """
default = "ask"
[bash]
"echo *" = "allow"
"rm *" = { action = "deny", reason = "no deleting here" }
[write]
"**/secret*" = "deny"
"**/ok*" = "allow"
[tool]
"acp_fetch" = "deny"
"""


@pytest.fixture
def decider(tmp_path: Path) -> PermissionDecider:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    env = {
        # Beside the session's directory: a directory above HOME is no project at all.
        "HOME": str(tmp_path.parent / f"{tmp_path.name}-home"),
        "PATH": "/usr/bin:/bin",
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml"),
        "ASKGATE_AUDIT_LOG": str(tmp_path / "review.jsonl"),
    }
    return PermissionDecider("acp:test", config_files=[str(policy)], env=env)


def params(**tool_call: Any) -> dict[str, Any]:
    return {"sessionId": "s1", "toolCall": {"toolCallId": "c1", **tool_call}, "options": OPTIONS}


@pytest.mark.parametrize(
    ("tool_call", "verdict"),
    [
        ({"kind": "execute", "rawInput": {"command": "echo hi"}}, Verdict.ALLOW),
        ({"kind": "execute", "rawInput": {"command": ["rm", "-rf", "x"]}}, Verdict.DENY),
        ({"kind": "execute", "rawInput": {"command": "echo hi; rm -rf x"}}, Verdict.DENY),
        ({"kind": "execute", "rawInput": {"command": "make"}}, Verdict.FORWARD),
        ({"kind": "execute", "title": "rm -rf /"}, Verdict.FORWARD),  # no command to judge
        ({"kind": "edit", "locations": [{"path": "ok.txt"}]}, Verdict.ALLOW),
        ({"kind": "edit", "locations": [{"path": "ok.txt"}, {"path": "secret.env"}]}, Verdict.DENY),
        ({"kind": "delete", "rawInput": {"file_path": "secret.key"}}, Verdict.DENY),
        ({"kind": "edit"}, Verdict.FORWARD),
        (
            {"kind": "edit", "content": [{"type": "diff", "path": "x/secret.txt", "newText": ""}]},
            Verdict.DENY,
        ),
        ({"kind": "fetch", "rawInput": {"url": "https://x"}}, Verdict.DENY),
        ({"kind": "think"}, Verdict.FORWARD),
    ],
)
def test_decisions(
    decider: PermissionDecider, tmp_path: Path, tool_call: dict[str, Any], verdict: Verdict
) -> None:
    got, reason = decider.decide(params(**tool_call), str(tmp_path))
    assert got is verdict, reason
    assert reason
    log = [json.loads(x) for x in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert log and all(r["client"] == "acp:test" for r in log)


def test_internal_error_denies(decider: PermissionDecider, tmp_path: Path, monkeypatch) -> None:
    def explode(*args: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(decider, "gate", explode)
    verdict, reason = decider.decide(params(kind="execute", rawInput={"command": "echo"}), None)
    assert verdict is Verdict.DENY and "boom" in reason


def test_broken_policy_never_allows(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY + "\nbroken = = =\n")
    env = {
        "HOME": str(tmp_path),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "n"),
        "ASKGATE_AUDIT_LOG": "off",
    }
    decider = PermissionDecider("acp:test", config_files=[str(policy)], env=env)
    verdict, _ = decider.decide(
        params(kind="execute", rawInput={"command": "echo hi"}), str(tmp_path)
    )
    assert verdict is Verdict.FORWARD


def test_title_is_the_command_only_for_agents_known_to_send_it() -> None:
    call = {"kind": "execute", "title": "touch a && rm -rf /", "toolCallId": "c"}
    assert requests_for(call, "/p", None) == []
    [request] = requests_for(call, "/p", None, title_is_command=True)
    assert request.input == {"command": "touch a && rm -rf /"}
    with_raw = dict(call, rawInput={"command": "ls"})
    assert requests_for(with_raw, "/p", None, title_is_command=True)[0].input == {"command": "ls"}


def test_requests_for_unknown_shapes() -> None:
    assert requests_for({"kind": 3}, "/p", None)[0].tool == "acp_other"
    assert requests_for({"kind": "execute", "rawInput": "x"}, "/p", None) == []


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (["gemini", "--acp"], "acp:gemini"),
        (["npx", "@zed-industries/claude-code-acp"], "acp:claude-code-acp"),
        (["/usr/bin/python3", "/x/my_agent.py"], "acp:my_agent"),
        (["node", "/x/dist/index.js"], "acp:index"),
    ],
)
def test_agent_label(argv: list[str], label: str) -> None:
    assert agent_label(argv) == label


@pytest.mark.parametrize("argv", [[], ["gemini"], ["--"], ["--config"]])
def test_bad_arguments(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert "askgate acp" in capsys.readouterr().err


def test_help(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(["--help"])
    assert exc.value.code == 0
    assert "AGENT-COMMAND" in capsys.readouterr().out
