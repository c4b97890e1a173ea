"""`askgate install claude-code`: merges, is idempotent, uninstalls only its own entry, picks
the hook form by the real CLI's version (2.1.197: no onFailure; 2.1.332: onFailure)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from askgate.install import claude_code as install
from clients import require_client

OLD, NEW = "2.1.197", "2.1.332"

OTHER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/lint"}]}
        ],
        "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "log-it"}]}],
    },
}


def claude(version: str) -> str:
    return str(require_client("claude-code", version, "claude"))


def run_install(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    environ = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
        **(env or {}),
    }
    environ.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "askgate", "install", "claude-code", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        timeout=120,
    )


def ours(settings: dict[str, Any], event: str = "PreToolUse") -> list[dict[str, Any]]:
    return [
        h
        for group in settings.get("hooks", {}).get(event, [])
        for h in group["hooks"]
        if install.is_ours(h)
    ]


def test_old_cli_gets_the_blocking_command_hook(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    done = run_install(tmp_path, "--settings", str(settings), "--claude", claude(OLD))
    assert done.returncode == 0, done.stderr
    [handler] = ours(json.loads(settings.read_text()))
    assert handler["type"] == "command"
    assert handler["command"].endswith("' hook claude-code || exit 2") or handler[
        "command"
    ].endswith(" hook claude-code || exit 2")
    assert "onFailure" not in handler
    assert handler["timeout"] > install.DEFAULT_BUDGET_S
    assert "budget: approval budget 110 s < hook timeout 170 s" in done.stdout
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600


def test_new_cli_defaults_to_the_command_hook_with_on_failure_block(tmp_path: Path) -> None:
    """The default form has no port another process could take (issue 20, class 4)."""
    settings = tmp_path / "settings.json"
    done = run_install(tmp_path, "--settings", str(settings), "--claude", claude(NEW))
    assert done.returncode == 0, done.stderr
    [handler] = ours(json.loads(settings.read_text()))
    assert handler["type"] == "command" and handler["onFailure"] == "block"
    assert "headers" not in handler and "url" not in handler
    assert not (tmp_path / "state" / "askgate" / "daemon.secret").exists()


def test_http_is_an_opt_in_with_on_failure_block_and_the_risk_stated(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    done = run_install(
        tmp_path, "--settings", str(settings), "--claude", claude(NEW), "--port", "47999", "--http"
    )
    assert done.returncode == 0, done.stderr
    [handler] = ours(json.loads(settings.read_text()))
    assert handler["type"] == "http"
    assert handler["url"] == "http://127.0.0.1:47999/hook/claude-code"
    assert handler["onFailure"] == "block"
    secret_file = tmp_path / "state" / "askgate" / "daemon.secret"
    assert handler["headers"]["X-Askgate-Secret"] == secret_file.read_text().strip()
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert "askgate daemon start" in done.stdout
    assert "forged allow makes the tool run" in done.stdout


def test_the_secret_never_lands_in_a_file_others_can_read(tmp_path: Path) -> None:
    """An existing 0644 settings file is made 0600 before the secret goes in, also when its
    text would not change; a project file (shared) is refused; a dry run masks it."""
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    settings.chmod(0o644)
    args = ("--settings", str(settings), "--claude", claude(NEW), "--http")
    dry = run_install(tmp_path, *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    secret = (tmp_path / "state" / "askgate" / "daemon.secret").read_text().strip()
    assert secret not in dry.stdout and "<the secret in daemon.secret>" in dry.stdout
    assert settings.read_text() == '{"model": "opus"}\n'
    assert run_install(tmp_path, *args).returncode == 0
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    settings.chmod(0o644)
    again = run_install(tmp_path, *args)  # same text: still tightened
    assert again.returncode == 0 and stat.S_IMODE(settings.stat().st_mode) == 0o600
    (tmp_path / ".git").mkdir()
    project = run_install(tmp_path, "--project", "--claude", claude(NEW), "--http")
    assert project.returncode == 2 and "--http" in project.stderr
    assert not (tmp_path / ".claude").exists()
    # --settings naming a file in a work tree (a local settings file): refused too.
    local = tmp_path / "sub" / ".claude" / "settings.local.json"
    inside = run_install(tmp_path, "--settings", str(local), "--claude", claude(NEW), "--http")
    assert inside.returncode == 2 and "git work tree" in inside.stderr, inside
    assert not local.exists() and secret not in inside.stdout + inside.stderr


def test_both_events_are_installed_when_both_are_asked_for(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    both = ("--event", "PreToolUse", "--event", "PermissionRequest")
    for _ in range(2):
        done = run_install(tmp_path, "--settings", str(settings), "--claude", claude(NEW), *both)
        assert done.returncode == 0, done.stderr
    after = json.loads(settings.read_text())
    assert len(ours(after, "PreToolUse")) == 1 and len(ours(after, "PermissionRequest")) == 1
    # Naming one event later replaces that one's entry and keeps the other.
    done = run_install(
        tmp_path,
        "--settings",
        str(settings),
        "--claude",
        claude(NEW),
        "--event",
        "PermissionRequest",
    )
    after = json.loads(settings.read_text())
    assert len(ours(after, "PreToolUse")) == 1 and len(ours(after, "PermissionRequest")) == 1
    assert "removed 2" in run_install(tmp_path, "--settings", str(settings), "--uninstall").stdout


def test_new_cli_command_form_also_blocks_on_failure(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    done = run_install(tmp_path, "--settings", str(settings), "--claude", claude(NEW), "--command")
    assert done.returncode == 0, done.stderr
    [handler] = ours(json.loads(settings.read_text()))
    assert handler["type"] == "command" and handler["onFailure"] == "block"
    assert handler["command"].endswith("|| exit 2")


def test_http_is_refused_where_a_failure_would_let_calls_through(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    done = run_install(tmp_path, "--settings", str(settings), "--claude", claude(OLD), "--http")
    assert done.returncode == 2
    assert "2.1.295" in done.stderr and "Traceback" not in done.stderr
    assert not settings.exists()


def test_unknown_version_falls_back_to_the_command_hook(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    missing = tmp_path / "no-such-claude"
    done = run_install(tmp_path, "--settings", str(settings), "--claude", str(missing))
    assert done.returncode == 0, done.stderr
    [handler] = ours(json.loads(settings.read_text()))
    assert handler["type"] == "command" and "onFailure" not in handler


def test_merge_keeps_everything_else_and_is_idempotent(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(OTHER_SETTINGS, indent=2))
    for _ in range(3):
        done = run_install(tmp_path, "--settings", str(settings), "--claude", claude(OLD))
        assert done.returncode == 0, done.stderr
    after = json.loads(settings.read_text())
    assert len(ours(after)) == 1
    assert after["model"] == "opus"
    assert after["permissions"] == OTHER_SETTINGS["permissions"]
    assert after["hooks"]["PostToolUse"] == OTHER_SETTINGS["hooks"]["PostToolUse"]
    assert OTHER_SETTINGS["hooks"]["PreToolUse"][0] in after["hooks"]["PreToolUse"]
    assert (
        "unchanged"
        in run_install(tmp_path, "--settings", str(settings), "--claude", claude(OLD)).stdout
    )


def test_switching_forms_replaces_the_entry(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    run_install(tmp_path, "--settings", str(settings), "--claude", claude(NEW), "--http")
    run_install(tmp_path, "--settings", str(settings), "--claude", claude(NEW))
    [handler] = ours(json.loads(settings.read_text()))
    assert handler["type"] == "command"


def test_uninstall_removes_only_askgate(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    original = json.dumps(OTHER_SETTINGS, indent=2) + "\n"
    settings.write_text(original)
    run_install(tmp_path, "--settings", str(settings), "--claude", claude(NEW))
    done = run_install(tmp_path, "--settings", str(settings), "--uninstall")
    assert done.returncode == 0, done.stderr
    assert json.loads(settings.read_text()) == OTHER_SETTINGS
    assert "removed 1 askgate hook entry" in done.stdout


def test_uninstall_of_a_fresh_install_leaves_no_hooks_key(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    run_install(tmp_path, "--settings", str(settings), "--claude", claude(OLD))
    run_install(tmp_path, "--settings", str(settings), "--uninstall")
    assert json.loads(settings.read_text()) == {"model": "opus"}


def test_dry_run_shows_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    done = run_install(tmp_path, "--settings", str(settings), "--claude", claude(OLD), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert settings.read_text() == '{"model": "opus"}\n'
    assert "+++ " in done.stdout and '+        "matcher": "*",' in done.stdout
    assert "hook claude-code || exit 2" in done.stdout
    assert "dry run" in done.stdout


def test_user_and_project_locations(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    done = run_install(tmp_path, "--project", "--claude", claude(OLD))
    assert done.returncode == 0, done.stderr
    assert ours(json.loads((tmp_path / ".claude" / "settings.json").read_text()))
    done = run_install(tmp_path, "--user", "--claude", claude(OLD))
    assert ours(json.loads((tmp_path / "home" / ".claude" / "settings.json").read_text()))
    config_dir = tmp_path / "cfgdir"
    done = run_install(tmp_path, "--claude", claude(OLD), env={"CLAUDE_CONFIG_DIR": "x"})
    assert done.returncode == 0
    done = subprocess.run(
        [sys.executable, "-m", "askgate", "install", "claude-code", "--claude", claude(OLD)],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "HOME": str(tmp_path / "home"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
        },
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert ours(json.loads((config_dir / "settings.json").read_text()))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"hooks": []}', "'hooks' is not a JSON object"),
        ('{"hooks": {"PreToolUse": {}}}', "is not a JSON array"),
    ],
)
def test_a_broken_settings_file_is_left_alone(tmp_path: Path, content: str, message: str) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(content)
    done = run_install(tmp_path, "--settings", str(settings), "--claude", claude(OLD))
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert settings.read_text() == content


def test_timeout_must_exceed_the_budget(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    done = run_install(
        tmp_path, "--settings", str(settings), "--claude", claude(OLD), "--timeout", "60"
    )
    assert done.returncode == 2 and "must exceed the approval budget" in done.stderr
    assert not settings.exists()
    done = run_install(
        tmp_path,
        "--settings",
        str(settings),
        "--claude",
        claude(OLD),
        env={"ASKGATE_APPROVAL_BUDGET": "300"},
    )
    assert "approval budget 300 s < hook timeout 360 s" in done.stdout


def test_bad_usage_is_one_line(tmp_path: Path) -> None:
    for args in (("--http", "--command"), ("--user", "--project"), ("--frob",)):
        done = run_install(tmp_path, *args)
        assert done.returncode == 2, args
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_version_parsing() -> None:
    assert install.parse_version("2.1.332 (Claude Code)\n") == (2, 1, 332)
    assert install.parse_version("garbage") is None
    assert (2, 1, 332) >= install.ON_FAILURE_SINCE > (2, 1, 197)
