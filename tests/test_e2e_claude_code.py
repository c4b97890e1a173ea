"""End to end: the real Claude Code CLI, offline, deciding every tool call through askgate.

`claude -p` talks to a fake Anthropic API on 127.0.0.1 (tests/fake_anthropic.py; the real one
is unreachable here) whose scripted "model" asks to run one Bash command. askgate is registered
as a PreToolUse command hook in a --settings file, exactly as a user would register it. Each run
has its own HOME, CLAUDE_CONFIG_DIR, git project, policy file and review log under tmp_path.

The settings also grant Claude Code's own permission `Bash`, so without the hook every command
would run (test_premise_* proves it): whenever a command does not run below, askgate stopped it.
"Ran" is proven by a marker file in the project, not by anything the CLI reports.

The CLI is installed by scripts/install-clients (pinned, into ~/.cache/askgate/clients/); without
it these tests skip, and fail in CI (tests/clients.py).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from clients import client_bin, require_client
from fake_anthropic import FakeAnthropic, tool_result_text

CLAUDE_CODE_VERSION = "2.1.197"
REPO_ROOT = Path(__file__).resolve().parents[1]
CLAUDE_BIN = client_bin("claude-code", CLAUDE_CODE_VERSION, "claude")
RUN_TIMEOUT = 60.0  # a run takes 1-3 s; the deadline only stops a hung CLI from hanging pytest
MARKER = "marker.txt"
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no DNS lookups, no telemetry at all
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


@dataclass(frozen=True)
class ClaudeRun:
    returncode: int
    frames: list[dict[str, Any]] = field(repr=False)  # the stream-json lines of stdout
    stderr: str = field(repr=False)
    project: Path
    audit: list[dict[str, Any]]  # askgate's review log, one record per line

    @property
    def result(self) -> dict[str, Any]:
        results = [f for f in self.frames if f.get("type") == "result"]
        assert results, f"no result frame; stderr: {self.stderr[-2000:]}"
        return results[-1]

    @property
    def marker_written(self) -> bool:
        return (self.project / MARKER).exists()


def isolated_env(tmp_path: Path) -> dict[str, str]:
    """Nothing from the developer's environment (keys, config dirs) reaches the CLI."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "SHELL": shutil.which("bash") or "/bin/bash",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        **QUIET_ENV,
    }


@pytest.fixture(scope="module")
def claude_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_client("claude-code", CLAUDE_CODE_VERSION, "claude")
    env = isolated_env(tmp_path_factory.mktemp("claude-version"))
    proc = subprocess.run(
        [str(CLAUDE_BIN), "--version"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 0 and proc.stdout.startswith(CLAUDE_CODE_VERSION), (
        f"{CLAUDE_BIN} is not Claude Code {CLAUDE_CODE_VERSION} (rerun scripts/install-clients): "
        f"{(proc.stdout + proc.stderr).strip()[:500]}"
    )
    return CLAUDE_BIN


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.close()


def make_project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    else:  # askgate finds the project root by the .git entry alone
        (project / ".git").mkdir()
    return project


def hook_command(policy: Path, *extra: str) -> str:
    args = [sys.executable, "-m", "askgate", "hook", "claude-code", "--config", str(policy)]
    return shlex.join([*args, *extra])


def run_claude(
    claude: Path,
    fake: FakeAnthropic,
    tmp_path: Path,
    *,
    command: str,
    policy: str,
    hook_args: tuple[str, ...] = (),
    with_hook: bool = True,
) -> ClaudeRun:
    project = make_project(tmp_path)
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy)
    audit_log = tmp_path / "review.jsonl"
    settings: dict[str, Any] = {"permissions": {"allow": ["Bash"]}}
    if with_hook:
        settings["hooks"] = {
            "PreToolUse": [
                {
                    "matcher": "*",
                    "hooks": [
                        {
                            "type": "command",
                            "command": hook_command(policy_file, *hook_args),
                            "timeout": 30,
                        }
                    ],
                }
            ]
        }
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps(settings, indent=2))
    env = {
        **isolated_env(tmp_path),
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "ASKGATE_AUDIT_LOG": str(audit_log),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed-policy.toml"),
    }
    fake.script(command, final_text="Finished.")
    argv = [str(claude), "-p", "run it", "--output-format", "stream-json", "--verbose"]
    argv += ["--settings", str(settings_file)]
    # Own process group: on a timeout the CLI, its shell and our hook all go down together.
    proc = subprocess.Popen(
        argv,
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"claude did not finish in {RUN_TIMEOUT} s; stderr: {stderr[-2000:]}")
    frames = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    audit = (
        [json.loads(line) for line in audit_log.read_text().splitlines()]
        if audit_log.exists()
        else []
    )
    run = ClaudeRun(proc.returncode, frames, stderr, project, audit)
    assert run.returncode == 0, f"claude exited {run.returncode}: {stderr[-2000:]}"
    assert run.result["subtype"] == "success", run.result
    return run


def the_tool_result(fake: FakeAnthropic) -> dict[str, Any]:
    """The tool_result Claude Code sent back in the 2nd Messages request: what the model saw."""
    posts = fake.message_requests()
    assert len(posts) == 2, [r.path for r in posts]
    results = fake.tool_results()
    assert len(results) == 1, results
    assert results[0]["tool_use_id"].startswith("toolu_fake")
    return results[0]


def denied_ids(run: ClaudeRun) -> list[str]:
    return [d["tool_use_id"] for d in run.result.get("permission_denials", [])]


ALLOW_ECHO_TEE = """
default = "ask"
[bash]
"echo *" = "allow"
"tee -a *" = "allow"
[write]
"marker.txt" = "allow"
"""
TEE_COMMAND = f"echo E2E_TOOL_RAN | tee -a {MARKER}"


def test_premise_without_the_hook_the_command_runs(
    claude_bin: Path, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    run = run_claude(
        claude_bin, fake_api, tmp_path, command=f"touch {MARKER}", policy="", with_hook=False
    )
    assert run.marker_written
    assert the_tool_result(fake_api).get("is_error") is not True
    assert run.audit == []


def test_allowed_command_runs(claude_bin: Path, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    run = run_claude(claude_bin, fake_api, tmp_path, command=TEE_COMMAND, policy=ALLOW_ECHO_TEE)

    assert (run.project / MARKER).read_text() == "E2E_TOOL_RAN\n"
    result = the_tool_result(fake_api)
    assert result.get("is_error") is not True
    assert "E2E_TOOL_RAN" in tool_result_text(result)
    assert denied_ids(run) == []
    [record] = run.audit
    assert record["event"] == "decision"
    assert record["resolution"] == "policy_allow"
    assert record["action"] == "allow"
    assert record["tool"] == "Bash"
    assert record["value"] == TEE_COMMAND
    assert record["request_id"] == result["tool_use_id"]
    assert [u["command"] for u in record["units"]] == ["echo E2E_TOOL_RAN", f"tee -a {MARKER}"]


@pytest.mark.parametrize(
    ("command", "policy", "reason"),
    [
        pytest.param(
            TEE_COMMAND,
            ALLOW_ECHO_TEE.replace(
                '"marker.txt" = "allow"',
                '"marker.txt" = { action = "deny", reason = "E2E marker is protected" }',
            ),
            "E2E marker is protected",
            id="write-path-deny",
        ),
        pytest.param(
            f"touch {MARKER}",
            '[bash]\n"touch *" = { action = "deny", reason = "E2E no touching" }\n',
            "E2E no touching",
            id="bash-rule-deny",
        ),
    ],
)
def test_denied_command_does_not_run(
    claude_bin: Path,
    fake_api: FakeAnthropic,
    tmp_path: Path,
    command: str,
    policy: str,
    reason: str,
) -> None:
    run = run_claude(claude_bin, fake_api, tmp_path, command=command, policy=policy)

    assert not run.marker_written
    result = the_tool_result(fake_api)
    assert result["is_error"] is True
    assert reason in tool_result_text(result)
    assert "not permitted" in tool_result_text(result)
    assert denied_ids(run) == [result["tool_use_id"]]
    [record] = run.audit
    assert record["event"] == "decision"
    assert record["resolution"] == "policy_deny"
    assert record["action"] == "deny"
    assert record["request_id"] == result["tool_use_id"]


def test_ask_is_denied_in_print_mode(
    claude_bin: Path, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    # Claude Code owns the prompt for an ask; `-p` has none, so it refuses the call.
    command = f"touch {MARKER}"
    run = run_claude(claude_bin, fake_api, tmp_path, command=command, policy='default = "ask"\n')

    assert not run.marker_written
    result = the_tool_result(fake_api)
    assert result["is_error"] is True
    assert tool_result_text(result).startswith("askgate: ")
    assert "default is ask" in tool_result_text(result)
    assert denied_ids(run) == [result["tool_use_id"]]
    [record] = run.audit
    assert record["event"] == "ask_delegated"
    assert record["delegated_to"] == "claude-code"
    assert record["value"] == command
    assert record["request_id"] == result["tool_use_id"]


def test_compound_command_needs_every_part_allowed(
    claude_bin: Path, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    command = f"true && touch {MARKER}"
    policy = 'default = "deny"\n[bash]\n"true" = "allow"\n'
    run = run_claude(claude_bin, fake_api, tmp_path, command=command, policy=policy)

    assert not run.marker_written
    result = the_tool_result(fake_api)
    assert result["is_error"] is True
    assert f"'touch {MARKER}'" in tool_result_text(result)
    [record] = run.audit
    assert record["resolution"] == "policy_deny"
    assert {u["command"]: u["action"] for u in record["units"]} == {
        "true": "allow",
        f"touch {MARKER}": "deny",
    }


def test_broken_hook_fails_closed(
    claude_bin: Path, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    # A typo in the registered hook command: askgate exits 2, which blocks the call.
    run = run_claude(
        claude_bin,
        fake_api,
        tmp_path,
        command=TEE_COMMAND,
        policy=ALLOW_ECHO_TEE,
        hook_args=("--confg", "typo.toml"),
    )

    assert not run.marker_written
    result = the_tool_result(fake_api)
    assert result["is_error"] is True
    assert "askgate hook claude-code: unknown argument '--confg'" in tool_result_text(result)
    assert denied_ids(run) == [result["tool_use_id"]]
    assert run.audit == []
