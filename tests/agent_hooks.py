"""Running `askgate hook AGENT` as a real subprocess, the way an agent CLI runs it, with an
isolated HOME, a policy file, no managed policy and a review log under tmp_path."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from waits import SAFETY_TIMEOUT

POLICY = """
default = "ask"
[bash]
"git status *" = "allow"
"echo *" = "allow"
"rm *" = { action = "deny", reason = "no deleting here" }
[read]
"**" = "allow"
[write]
"**/secret*" = { action = "deny", reason = "secrets are off limits" }
"**/ok*" = "allow"
[mcp]
"github:get_issue" = "allow"
"my_server:delete_all" = "deny"
[tool]
"web_fetch" = "deny"
"""


@dataclass
class HookRun:
    returncode: int
    stdout: bytes
    stderr: str
    audit: list[dict[str, Any]]

    @property
    def json(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.stdout)
        return parsed


def hook_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    # HOME beside tmp_path, not inside it: the hooks run in tmp_path, and a directory above
    # HOME is no project at all (policy/paths.bounded_project_root).
    home = tmp_path.parent / f"{tmp_path.name}-home"
    home.mkdir(exist_ok=True)
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed.toml"),
        "ASKGATE_AUDIT_LOG": str(tmp_path / "review.jsonl"),
        **extra,
    }


def read_audit(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "review.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def run_hook(
    agent: str,
    payload: bytes | dict[str, Any],
    tmp_path: Path,
    *args: str,
    policy: str = POLICY,
    env: dict[str, str] | None = None,
    python_prelude: str | None = None,
) -> HookRun:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy)
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    if python_prelude is None:
        argv = [sys.executable, "-m", "askgate", "hook", agent, "--config", str(policy_file)]
    else:  # run the console entry after some setup code (to break an import, say)
        code = (
            f"{python_prelude}\nimport sys\nfrom askgate.entry import main\n"
            f"sys.exit(main(['hook', {agent!r}, '--config', {str(policy_file)!r}]))"
        )
        argv = [sys.executable, "-c", code]
    proc = subprocess.run(
        [*argv, *args],
        input=data,
        capture_output=True,
        env=env or hook_env(tmp_path),
        timeout=SAFETY_TIMEOUT,
    )
    return HookRun(proc.returncode, proc.stdout, proc.stderr.decode(), read_audit(tmp_path))


class StubServerModule(types.ModuleType):
    """Stands in for `askgate.prompters.server` with its factory
    `configured_prompter(env) -> Prompter | None` (and the older `from_env`); the prompter
    it hands out is a real Prompter (tests/conftest.py ScriptedPrompter)."""

    def __init__(self, prompter: Any) -> None:
        super().__init__("askgate.prompters.server")
        self.prompter = prompter

    def from_env(self, env: Any) -> Any:
        return self.prompter

    def configured_prompter(self, env: Any = None) -> Any:
        return self.prompter


def install_approval_server(monkeypatch: pytest.MonkeyPatch, prompter: Any) -> None:
    """Make `prompter` the configured approval server for an in-process test."""
    monkeypatch.setitem(sys.modules, "askgate.prompters.server", StubServerModule(prompter))


@contextlib.contextmanager
def resident_daemon(env: dict[str, str]) -> Iterator[Callable[[], int]]:
    """`askgate daemon start --no-http` with `env` (the environment the agent will give
    its hook, so the daemon's pinned variables match); yields a function that returns how
    many calls the daemon has answered; stops it (with its control token) at the end."""
    run_dir = Path(env["ASKGATE_RUNTIME_DIR"])
    run_dir.mkdir(mode=0o700, exist_ok=True)
    environ = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}

    def daemon(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "askgate", "daemon", *args],
            capture_output=True,
            text=True,
            env=environ,
            timeout=SAFETY_TIMEOUT,
        )

    started = daemon("start", "--no-http")
    assert started.returncode == 0, started.stderr

    def answered() -> int:
        status = daemon("status").stdout
        return int(status.split(" requests")[0].rsplit(" ", 1)[-1])

    try:
        yield answered
    finally:
        assert daemon("stop").returncode == 0
