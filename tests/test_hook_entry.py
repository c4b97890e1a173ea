"""`askgate hook …` fails closed whatever goes wrong, import errors included (issue #8, 4-5).

A hook process that exits 1 (a traceback), 0 without a decision, or anything but 0/2 lets
Claude Code run the tool; these tests hold the entry point to exit 2 with one stderr line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from askgate import entry
from waits import SAFETY_TIMEOUT

REPO_SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture
def broken_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Register a throw-away adapter module `body` under the name 'broken'."""
    counter = iter(range(1000))

    def make(body: str) -> None:
        name = f"askgate_test_broken_{next(counter)}_{os.getpid()}"
        (tmp_path / f"{name}.py").write_text(body)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setitem(entry.HOOKS, "broken", f"{name}:main")

    return make


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("raise ImportError('half-upgraded')\n", id="import-error"),
        pytest.param("import sys\nsys.exit(0)\n", id="exit-0-at-import"),
        pytest.param("raise KeyboardInterrupt\n", id="interrupt-at-import"),
        pytest.param("raise SyntaxError('bad')\n", id="syntax-error"),
        pytest.param("def main(argv):\n    raise RuntimeError('x\\ny')\n", id="main-raises"),
        pytest.param("def main(argv):\n    return None\n", id="main-returns-none"),
        pytest.param("def main(argv):\n    return 1\n", id="main-returns-1"),
        pytest.param("import sys\ndef main(argv):\n    sys.exit(0)\n", id="main-exits-0"),
        pytest.param("def main(argv):\n    raise SystemExit('oops')\n", id="main-exits-text"),
        pytest.param("main = 42\n", id="main-not-callable"),
    ],
)
def test_any_failure_in_the_adapter_blocks(
    broken_hook, capsys: pytest.CaptureFixture[str], body: str
) -> None:
    broken_hook(body)
    assert entry.main(["hook", "broken"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("askgate")
    assert "Traceback" not in err


def test_unknown_agent_blocks(capsys: pytest.CaptureFixture[str]) -> None:
    assert entry.main(["hook", "nope"]) == 2
    assert capsys.readouterr().err.startswith("askgate: error: usage")


def _hook_process(tmp_path: Path, payload: dict, *args: str, cwd: Path | None = None, **env: str):
    environ = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed.toml"),
        "ASKGATE_AUDIT_LOG": "off",
        "ASKGATE_DAEMON": "off",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "askgate", "hook", "claude-code", *args],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=environ,
        cwd=cwd,
        timeout=SAFETY_TIMEOUT,
    )


def _payload(cwd: Path, command: str) -> dict:
    return {
        "session_id": "s",
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }


@pytest.mark.parametrize(
    "shadow",
    [
        "raise ImportError('half-upgraded msgspec')\n",
        "import sys\nsys.exit(0)\n",
        "raise SystemExit(1)\n",
    ],
)
def test_a_broken_dependency_blocks_the_process(tmp_path: Path, shadow: str) -> None:
    """A broken third-party module (shadowed on PYTHONPATH) stops the real process with
    exit 2 and one stderr line, never exit 0/1 with a traceback."""
    shadow_dir = tmp_path / "shadow"
    shadow_dir.mkdir()
    (shadow_dir / "msgspec.py").write_text(shadow)
    proc = _hook_process(
        tmp_path,
        _payload(tmp_path, "git status"),
        PYTHONPATH=os.pathsep.join([str(shadow_dir), REPO_SRC]),
    )
    assert proc.returncode == 2, proc
    assert proc.stdout == b""
    assert proc.stderr.count(b"\n") == 1 and b"Traceback" not in proc.stderr


def test_relative_config_resolves_against_the_process_cwd(tmp_path: Path) -> None:
    """`--config policy.toml` names the file beside the process, never one in the directory
    the agent reports (which the agent can write)."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "policy.toml").write_text('[bash]\n"touch *" = { action = "deny", reason = "MINE" }\n')
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "policy.toml").write_text('[bash]\n"touch *" = "allow"\n')
    proc = _hook_process(
        tmp_path, _payload(agent_dir, "touch x"), "--config", "policy.toml", cwd=mine
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "MINE" in out["permissionDecisionReason"]
