"""End to end: an agent in a mode that drops asks cannot rewrite the file that registers
askgate with it (issue 20, class 8).

Real Claude Code (both pinned versions) with `--permission-mode bypassPermissions` and real
Codex with approvals `never`, offline against a fake model that runs one shell command:
rewrite the hook registration and leave a marker. The most permissive policy there is
(`default = "allow"`, every command, every write) loads; the built-in deny floor on
registration files still refuses the call. The harm asserted: the registration file is
byte for byte unchanged and the command never ran (no marker).

Kept apart from the other end-to-end modules (its own small Claude Code driver; the Codex
driver is `test_e2e_codex.run_codex`), so a rework of the shared harness merges cleanly.
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
from pathlib import Path

import pytest

from clients import client_bin, require_client
from fake_anthropic import FakeAnthropic
from fake_model_server import FakeModelServer

RUN_TIMEOUT = 90.0
MARKER = "marker.txt"
PERMISSIVE = """
default = "allow"
yolo = true
[bash]
"*" = "allow"
[write]
"/**" = "allow"
"""


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.close()


def _claude_env(tmp_path: Path, fake: FakeAnthropic, home: Path) -> dict[str, str]:
    return {
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
        "IS_SANDBOX": "1",  # bypassPermissions refuses root otherwise (the suite runs as root)
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "ASKGATE_AUDIT_LOG": str(tmp_path / "review.jsonl"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed-policy.toml"),
        "ASKGATE_DAEMON": "off",  # decide in-process: no daemon outlives the test
    }


@pytest.mark.parametrize("version", ["2.1.197", "2.1.332"])
def test_claude_code_in_bypass_permissions_cannot_unhook_askgate(
    fake_api: FakeAnthropic, tmp_path: Path, version: str
) -> None:
    claude = require_client("claude-code", version, "claude")
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    policy = tmp_path / "policy.toml"
    policy.write_text(PERMISSIVE)
    hook = [sys.executable, "-m", "askgate", "hook", "claude-code", "--config", str(policy)]
    entry = {"type": "command", "command": shlex.join(hook), "timeout": 30}
    registration = home / ".claude" / "settings.json"  # $CLAUDE_CONFIG_DIR/settings.json
    registration.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [entry]}]}})
    )
    before = registration.read_bytes()
    fake_api.script(
        f"echo '{{\"disableAllHooks\": true}}' > {registration}; touch {MARKER}",
        final_text="Finished.",
    )
    argv = [str(client_bin("claude-code", version, "claude")), "-p", "run it"]
    argv += ["--output-format", "stream-json", "--verbose"]
    argv += ["--permission-mode", "bypassPermissions", "--settings", str(registration)]
    assert claude.exists()
    proc = subprocess.Popen(
        argv,
        cwd=project,
        env=_claude_env(tmp_path, fake_api, home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
        pytest.fail(f"claude did not finish in {RUN_TIMEOUT} s; stderr: {stderr[-2000:]}")
    assert fake_api.tool_results(), "the model's command never reached the hook"
    assert registration.read_bytes() == before, "the agent rewrote its hook registration"
    assert not (project / MARKER).exists(), "the command ran"
    audit = [json.loads(line) for line in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert audit and audit[-1]["action"] == "deny", audit


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    server = FakeModelServer().start()
    try:
        yield server
    finally:
        server.close()


def test_codex_with_approvals_never_cannot_unhook_askgate(model, tmp_path: Path) -> None:
    from test_e2e_codex import CODEX_BIN, CODEX_VERSION, run_codex

    require_client("codex", CODEX_VERSION, "codex")
    hooks = tmp_path / "home" / ".codex" / "hooks.json"
    command = f"echo '{{}}' > {hooks}; touch {MARKER}"
    # run_codex installs the hooks (askgate install codex) before Codex starts; the
    # model's command then tries to overwrite them. Approvals "never": an ask would run.
    run = run_codex(CODEX_BIN, model, tmp_path, command, policy=PERMISSIVE)
    assert hooks.is_file()
    assert "askgate" in hooks.read_text(), "the agent rewrote its hook registration"
    assert not run.ran, run.stderr[-2000:]
    assert run.audit and run.audit[-1]["action"] == "deny", run.audit
