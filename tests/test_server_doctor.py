"""`askgate doctor`, run as a command with configured values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from server_support import LiveServer, free_socket


def doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data-home"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml"),
    }
    return subprocess.run(
        [sys.executable, "-m", "askgate", "doctor", "--cwd", str(tmp_path), *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_budget_inequality_holds(tmp_path: Path) -> None:
    with LiveServer(tmp_path / "srv", f"sqlite+aiosqlite:///{tmp_path / 'd.db'}") as live:
        token = live.add_user("a")
        done = doctor(
            tmp_path,
            "--hook-timeout",
            "120",
            "--turn-limit",
            "600",
            ASKGATE_SERVER=live.url,
            ASKGATE_TOKEN=token,
            ASKGATE_APPROVAL_BUDGET="110",
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   budget: approval budget 110s + 10s <= hook timeout 120s" in done.stdout
    assert "hook timeout + 10s <= turn limit 600s" in done.stdout
    assert "ok   server:" in done.stdout


def test_a_budget_not_below_the_hook_timeout_fails(tmp_path: Path) -> None:
    claude = tmp_path / "home" / ".claude"
    claude.mkdir(parents=True)
    hook = {"type": "command", "command": "askgate hook claude-code", "timeout": 60}
    settings = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]}}
    (claude / "settings.json").write_text(json.dumps(settings))
    closed = free_socket()
    url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    done = doctor(tmp_path, ASKGATE_SERVER=url, ASKGATE_TOKEN="agt", ASKGATE_APPROVAL_BUDGET="110")
    assert done.returncode == 1
    assert "FAIL budget: approval budget 110s + 10s <= hook timeout 60s" in done.stdout
    assert "FAIL server:" in done.stdout and "unreachable" in done.stdout


def test_a_turn_limit_below_the_hook_timeout_fails(tmp_path: Path) -> None:
    done = doctor(
        tmp_path,
        "--hook-timeout",
        "600",
        ASKGATE_SERVER="http://127.0.0.1:9",
        ASKGATE_TOKEN="agt",
        ASKGATE_APPROVAL_BUDGET="100",
        ASKGATE_TURN_LIMIT="300",
    )
    assert done.returncode == 1
    assert "FAIL budget:" in done.stdout and "turn limit 300s" in done.stdout


@pytest.mark.parametrize(
    ("budget", "hook", "turn", "drain", "fails"),
    [
        ("110", "111", "112", None, True),  # round 1 accepted this: no room for the hook itself
        ("110", "120", "130", None, False),
        ("110", "120", "125", None, True),
        ("110", None, None, None, False),  # against Claude Code's 600 s default
        ("110", "600", None, "570", True),  # the hook outlives the drain budget
        ("110", "300", None, "570", False),
    ],
)
def test_the_margin_is_required_at_each_step(
    tmp_path: Path,
    budget: str,
    hook: str | None,
    turn: str | None,
    drain: str | None,
    fails: bool,
) -> None:
    args = [*(["--hook-timeout", hook] if hook else []), *(["--turn-limit", turn] if turn else [])]
    env = {"ASKGATE_DRAIN_BUDGET": drain} if drain else {}
    done = doctor(
        tmp_path,
        *args,
        ASKGATE_SERVER="http://127.0.0.1:9",
        ASKGATE_TOKEN="agt",
        ASKGATE_APPROVAL_BUDGET=budget,
        **env,
    )
    budget_line = next(line for line in done.stdout.splitlines() if " budget:" in line)
    assert budget_line.startswith("FAIL" if fails else "ok"), budget_line


def test_a_budget_over_the_bound_is_refused(tmp_path: Path) -> None:
    done = doctor(
        tmp_path,
        ASKGATE_SERVER="http://127.0.0.1:9",
        ASKGATE_TOKEN="agt",
        ASKGATE_APPROVAL_BUDGET="700",  # above Claude Code's 600 s default hook timeout
    )
    assert done.returncode == 1
    assert "FAIL approvals: misconfigured" in done.stdout and "590" in done.stdout


def test_database_secret_and_notifier_checks(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with LiveServer(data, f"sqlite+aiosqlite:///{data / 'askgate.sqlite3'}"):
        pass  # creates the database and the secret
    closed = free_socket()
    ntfy = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    done = doctor(tmp_path, "--data-dir", str(data), ASKGATE_NTFY_URL=ntfy)
    assert "ok   database:" in done.stdout
    assert "ok   secret:" in done.stdout and "mode 600" in done.stdout
    assert "FAIL ntfy:" in done.stdout and done.returncode == 1
    (data / "secret").chmod(0o644)
    done = doctor(tmp_path, "--data-dir", str(data))
    assert "FAIL secret:" in done.stdout and "chmod 600" in done.stdout
    assert done.returncode == 1


def test_nothing_configured_is_not_a_failure(tmp_path: Path) -> None:
    done = doctor(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skip budget: no approval server configured" in done.stdout


def test_half_configured_approvals_fail(tmp_path: Path) -> None:
    done = doctor(tmp_path, ASKGATE_SERVER="http://127.0.0.1:9")
    assert done.returncode == 1 and "FAIL approvals: misconfigured" in done.stdout
    assert "Traceback" not in done.stderr
