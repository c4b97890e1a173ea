"""End to end: the real Claude Code CLI, an ask answered on the approval server.

`claude -p` through the shared driver (tests/agent_e2e.py, the fake model API on 127.0.0.1),
whose scripted model runs one Bash command. askgate is the PreToolUse
command hook; the policy says *ask* for that command, and ASKGATE_SERVER / ASKGATE_TOKEN point
the hook at a real approval server (SQLite) on 127.0.0.1. A human stand-in answers through the
HTTP API, exactly as the page or the phone would.

The settings grant Claude Code's own permission `Bash`, so whenever the marker file is missing,
askgate stopped the command. The hook carries an *agent* token (it can ask, never decide).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_e2e import CLAUDE_CODE_OLD, MARKER, AgentRun, run_agent
from fake_model_api import ToolResult
from server_support import AutoDecider, LiveServer, free_socket

COMMAND = f"touch {MARKER}"
POLICY = 'default = "ask"\n'


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    db = f"sqlite+aiosqlite:///{tmp_path / 'server' / 'askgate.sqlite3'}"
    with LiveServer(tmp_path / "server", db) as server:
        yield server


def run_claude(tmp_path: Path, server_url: str, token: str, budget: float) -> AgentRun:
    env = {
        "ASKGATE_AUDIT_LOG": "off",
        "ASKGATE_SERVER": server_url,
        "ASKGATE_TOKEN": token,
        "ASKGATE_APPROVAL_BUDGET": str(budget),
    }
    return run_agent(CLAUDE_CODE_OLD, COMMAND, POLICY, tmp_path=tmp_path, env=env)


def tool_result(run: AgentRun) -> ToolResult:
    assert len(run.transcript) == 1, run.transcript
    return run.transcript[0]


def test_an_ask_approved_on_the_server_runs(live: LiveServer, tmp_path: Path) -> None:
    human = live.add_user("alice")
    hook_token = live.agent_token("alice")
    with AutoDecider(live, human, "allow") as decider:
        run = run_claude(tmp_path, live.url, hook_token, 20)
    assert run.ran
    assert tool_result(run).is_error is not True
    [approval_id] = decider.seen
    row = live.call(lambda: live.ctx.store.get(approval_id))
    assert row is not None and row.status() == "allow" and row.tool == "Bash"
    assert json.loads(row.input_json)["command"] == COMMAND


def test_an_ask_denied_on_the_server_does_not_run(live: LiveServer, tmp_path: Path) -> None:
    human = live.add_user("alice")
    with AutoDecider(live, human, "deny", reason="E2E not today") as decider:
        run = run_claude(tmp_path, live.url, live.agent_token("alice"), 20)
    assert not run.ran
    result = tool_result(run)
    assert result.is_error is True
    assert "E2E not today" in result.text
    assert len(decider.seen) == 1


def test_an_unanswered_ask_does_not_run(live: LiveServer, tmp_path: Path) -> None:
    human = live.add_user("alice")
    with AutoDecider(live, human, None) as decider:
        run = run_claude(tmp_path, live.url, live.agent_token("alice"), 2)
    assert not run.ran
    result = tool_result(run)
    assert result.is_error is True
    assert "nobody answered in time" in result.text
    [approval_id] = decider.seen
    row = live.call(lambda: live.ctx.store.get(approval_id))
    assert row is not None and row.status() == "timeout"  # recorded as timeout, not deny


def test_with_the_server_down_the_ask_does_not_run(tmp_path: Path) -> None:
    closed = free_socket()
    url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    run = run_claude(tmp_path, url, "agt_whatever", 2)
    assert not run.ran
    result = tool_result(run)
    assert result.is_error is True
    assert "approval-server-unreachable" in result.text
