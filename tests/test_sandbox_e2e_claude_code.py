"""End to end: the real Claude Code CLI (offline, fake model API) runs an allowed Bash command
that askgate's hook rewrote into `askgate sandbox -- <command>` (PreToolUse `updatedInput`).

The command reads the SSH key through a Makefile recipe — opaque to the policy, which allows
it — so only the kernel can stop it. What the model saw (the tool result Claude Code sent
back) proves the sandbox ran: the recipe found no key (~/.ssh reads as an empty
directory), the secret never appeared, and the rest of the command ran (a marker file in
the project). The premise test runs the same command with the sandbox off: the secret
reaches the model.

Self-contained on purpose (only the shared fake API and client helpers are imported), so a
rewrite of the other Claude Code end-to-end module cannot break it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_e2e import git_project, read_review_log, run_agent
from clients import client_bin, require_client
from fake_anthropic import FakeAnthropic, tool_result_text
from sandbox_world import require_bwrap

VERSIONS = ("2.1.197", "2.1.332")  # the sandboxed form must be one both CLIs run
RUN_TIMEOUT = 90.0
SECRET = "E2E-SSH-KEY-5d2c"
MARKER = "marker.txt"
POLICY = """
default = "allow"
[read]
"~/.ssh/**" = "deny"

[sandbox]
bash = "on"
"""
# The project's Makefile is there before the agent's command (written by the test as the
# user would have): a recipe written by the command itself is asked about (round 3).
MAKEFILE = "leak:\n\t@cat $$HOME/.ssh/id_rsa\n"
COMMAND = f"make -s leak; echo SANDBOX_RAN > {MARKER}"


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(params=VERSIONS)
def claude_bin(request: pytest.FixtureRequest) -> Path:
    require_client("claude-code", request.param, "claude")
    return client_bin("claude-code", request.param, "claude")


def _run_claude(
    fake: FakeAnthropic, tmp_path: Path, policy: str, claude_bin: Path
) -> tuple[Path, list[dict]]:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n")
    project = git_project(tmp_path)
    (project / "Makefile").write_text(MAKEFILE)
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy)
    audit_log = tmp_path / "review.jsonl"
    hook = [sys.executable, "-m", "askgate", "hook", "claude-code", "--config", str(policy_file)]
    settings = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "*",
                    "hooks": [{"type": "command", "command": shlex.join(hook), "timeout": 30}],
                }
            ]
        },
    }
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps(settings))
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
        "ASKGATE_AUDIT_LOG": str(audit_log),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed-policy.toml"),
        "ASKGATE_DAEMON": "off",  # decide in-process: no daemon outlives the test
    }
    fake.script(COMMAND, final_text="Finished.")
    argv = [str(claude_bin), "-p", "run it", "--output-format", "stream-json", "--verbose"]
    done = run_agent(
        [*argv, "--settings", str(settings_file)],
        cwd=project,
        env=env,
        timeout=RUN_TIMEOUT,
        name="claude",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    audit = read_review_log(audit_log)
    return project, audit


def _seen_by_the_model(fake: FakeAnthropic) -> str:
    results = fake.tool_results()
    assert len(results) == 1, results
    return tool_result_text(results[0])


@pytest.fixture(autouse=True)
def _prerequisites() -> None:
    require_bwrap()


def test_claude_code_runs_the_allowed_command_inside_the_sandbox(
    fake_api: FakeAnthropic, tmp_path: Path, claude_bin: Path
) -> None:
    project, audit = _run_claude(fake_api, tmp_path, POLICY, claude_bin)
    assert (project / MARKER).read_text() == "SANDBOX_RAN\n"  # the command ran…
    seen = _seen_by_the_model(fake_api)
    assert SECRET not in seen  # …but the kernel kept the key from the recipe
    assert "No such file or directory" in seen  # ~/.ssh reads as an empty directory
    [record] = audit
    assert record["action"] == "allow" and record["value"] == COMMAND
    # It ran through the prepared wrapper (bwrap started by bash, no Python): its run
    # record says bwrap ran the command to exit code 0 (cleaned by the next askgate).
    runs = tmp_path / "xdg-data" / "askgate" / "sandbox" / "runs"
    (status,) = [p / "status" for p in runs.iterdir() if p.name.startswith("w-")]
    assert b'"exit-code": 0' in status.read_bytes()


def test_without_the_sandbox_the_same_command_leaks(
    fake_api: FakeAnthropic, tmp_path: Path, claude_bin: Path
) -> None:
    """The premise: the policy alone lets the recipe read the key."""
    _run_claude(fake_api, tmp_path, POLICY.replace('bash = "on"', 'bash = "off"'), claude_bin)
    assert SECRET in _seen_by_the_model(fake_api)
