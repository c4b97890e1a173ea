"""End to end: the real Claude Code CLI, an ask answered on the approval server.

`claude -p` talks to the fake Anthropic API on 127.0.0.1 (tests/fake_anthropic.py: the real one
is unreachable here), whose scripted model runs one Bash command. askgate is the PreToolUse
command hook; the policy says *ask* for that command, and ASKGATE_SERVER / ASKGATE_TOKEN point
the hook at a real approval server (SQLite) on 127.0.0.1. A human stand-in answers through the
HTTP API, exactly as the page or the phone would.

The settings grant Claude Code's own permission `Bash`, so whenever the marker file is missing,
askgate stopped the command. The hook carries an *agent* token (it can ask, never decide).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_e2e import run_agent
from clients import client_bin, require_client
from fake_anthropic import FakeAnthropic, tool_result_text
from server_support import AutoDecider, LiveServer, free_socket

CLAUDE_CODE_VERSION = "2.1.197"
CLAUDE_BIN = client_bin("claude-code", CLAUDE_CODE_VERSION, "claude")
RUN_TIMEOUT = 90.0
HOOK_TIMEOUT = 30  # seconds; the approval budget stays well below it (askgate doctor)
MARKER = "marker.txt"
COMMAND = f"touch {MARKER}"
POLICY = 'default = "ask"\n'


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    return require_client("claude-code", CLAUDE_CODE_VERSION, "claude")


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    db = f"sqlite+aiosqlite:///{tmp_path / 'server' / 'askgate.sqlite3'}"
    with LiveServer(tmp_path / "server", db) as server:
        yield server


def run_claude(
    claude: Path, fake: FakeAnthropic, tmp_path: Path, server_url: str, token: str, budget: float
) -> tuple[Path, list[dict[str, Any]]]:
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".git").mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    hook = shlex.join(
        [sys.executable, "-m", "askgate", "hook", "claude-code", "--config", str(policy)]
    )
    settings = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "*",
                    "hooks": [{"type": "command", "command": hook, "timeout": HOOK_TIMEOUT}],
                }
            ]
        },
    }
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps(settings))
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "SHELL": shutil.which("bash") or "/bin/bash",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "ASKGATE_AUDIT_LOG": "off",
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed-policy.toml"),
        "ASKGATE_SERVER": server_url,
        "ASKGATE_TOKEN": token,
        "ASKGATE_APPROVAL_BUDGET": str(budget),
        # Decide in-process: a daemon the hook starts would outlive the test.
        "ASKGATE_DAEMON": "off",
    }
    fake.script(COMMAND, final_text="Finished.")
    argv = [str(claude), "-p", "run it", "--output-format", "stream-json", "--verbose"]
    argv += ["--settings", str(settings_file)]
    done = run_agent(argv, cwd=project, env=env, timeout=RUN_TIMEOUT, name="claude")
    assert done.returncode == 0, f"claude exited {done.returncode}: {done.stderr[-2000:]}"
    frames = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return project, frames


def tool_result(fake: FakeAnthropic) -> dict[str, Any]:
    results = fake.tool_results()
    assert len(results) == 1, results
    return results[0]


def test_an_ask_approved_on_the_server_runs(
    claude_bin: Path, fake_api: FakeAnthropic, live: LiveServer, tmp_path: Path
) -> None:
    human = live.add_user("alice")
    hook_token = live.agent_token("alice")
    with AutoDecider(live, human, "allow") as decider:
        project, _ = run_claude(claude_bin, fake_api, tmp_path, live.url, hook_token, 20)
    assert (project / MARKER).exists()
    assert tool_result(fake_api).get("is_error") is not True
    [approval_id] = decider.seen
    row = live.call(lambda: live.ctx.store.get(approval_id))
    assert row is not None and row.status() == "allow" and row.tool == "Bash"
    assert json.loads(row.input_json)["command"] == COMMAND


def test_an_ask_denied_on_the_server_does_not_run(
    claude_bin: Path, fake_api: FakeAnthropic, live: LiveServer, tmp_path: Path
) -> None:
    human = live.add_user("alice")
    with AutoDecider(live, human, "deny", reason="E2E not today") as decider:
        project, _ = run_claude(
            claude_bin, fake_api, tmp_path, live.url, live.agent_token("alice"), 20
        )
    assert not (project / MARKER).exists()
    result = tool_result(fake_api)
    assert result["is_error"] is True
    assert "E2E not today" in tool_result_text(result)
    assert len(decider.seen) == 1


def test_an_unanswered_ask_does_not_run(
    claude_bin: Path, fake_api: FakeAnthropic, live: LiveServer, tmp_path: Path
) -> None:
    human = live.add_user("alice")
    with AutoDecider(live, human, None) as decider:
        project, _ = run_claude(
            claude_bin, fake_api, tmp_path, live.url, live.agent_token("alice"), 2
        )
    assert not (project / MARKER).exists()
    result = tool_result(fake_api)
    assert result["is_error"] is True
    assert "nobody answered in time" in tool_result_text(result)
    [approval_id] = decider.seen
    row = live.call(lambda: live.ctx.store.get(approval_id))
    assert row is not None and row.status() == "timeout"  # recorded as timeout, not deny


def test_with_the_server_down_the_ask_does_not_run(
    claude_bin: Path, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    closed = free_socket()
    url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    project, _ = run_claude(claude_bin, fake_api, tmp_path, url, "agt_whatever", 2)
    assert not (project / MARKER).exists()
    result = tool_result(fake_api)
    assert result["is_error"] is True
    assert "approval-server-unreachable" in tool_result_text(result)
