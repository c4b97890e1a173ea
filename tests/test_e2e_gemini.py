"""End to end: the real Gemini CLI (0.61.0), offline, with askgate as its BeforeTool hook.

`gemini -p` talks to a fake Gemini API on 127.0.0.1 (tests/fake_model_server.py), reached
through ``GOOGLE_GEMINI_BASE_URL`` with a dummy ``GEMINI_API_KEY``; ``-m`` names the model so
that Gemini's model router (which would classify the prompt with an extra JSON call) is not
consulted. The scripted "model" calls ``run_shell_command`` once. The hook is registered in
``~/.gemini/settings.json`` exactly as `askgate install gemini` writes it (policy path and
review log added). ``--approval-mode yolo`` makes Gemini itself allow every call, so whenever
a command does not run below, askgate stopped it; ``GEMINI_CLI_TRUST_WORKSPACE=true`` stands
in for the user trusting the folder.

"Ran" is proven by a marker file in the project, never by what Gemini reports.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_harness import SERVER_STUB
from agent_e2e import git_project, read_review_log, run_agent
from agent_hooks import resident_daemon
from clients import client_bin, require_client
from fake_model_server import FakeModelServer

GEMINI_VERSION = "0.61.0"
GEMINI_BIN = client_bin("gemini", GEMINI_VERSION, "gemini")
RUN_TIMEOUT = 120.0
MARKER = "marker.txt"
POLICY = """
default = "ask"
[bash]
"touch *" = "allow"
"mkdir *" = { action = "deny", reason = "no new directories here" }
[write]
"**/marker*" = "allow"
"""


@dataclass
class GeminiRun:
    returncode: int
    stdout: str
    stderr: str
    project: Path
    audit: list[dict[str, Any]]
    tool_results: list[str]
    relayed: int = 0  # calls the resident daemon answered (daemon=True)

    @property
    def ran(self) -> bool:
        return (self.project / MARKER).exists()


def base_env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "NO_BROWSER": "1",
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }


@pytest.fixture(scope="module")
def gemini(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_client("gemini", GEMINI_VERSION, "gemini")
    home = tmp_path_factory.mktemp("gemini-version")
    proc = subprocess.run(
        [str(GEMINI_BIN), "--version"],
        env=base_env(home),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout.strip() == GEMINI_VERSION, proc.stdout + proc.stderr
    return GEMINI_BIN


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    server = FakeModelServer().start()
    try:
        yield server
    finally:
        server.close()


def run_gemini(
    gemini: Path,
    model: FakeModelServer,
    tmp_path: Path,
    command: str,
    *,
    policy: str = POLICY,
    hook: bool = True,
    server: str | None = None,
    program: str | None = None,
    daemon: bool = False,
) -> GeminiRun:
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    project = git_project(tmp_path)
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy)
    audit_log = tmp_path / "review.jsonl"
    model.script("run_shell_command", {"command": command, "description": "run"}, "Finished.")
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700, exist_ok=True)
    hook_env = {
        "ASKGATE_AUDIT_LOG": str(audit_log),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed.toml"),
        # In-process unless a test asks for the daemon (then in this run's own directory).
        "ASKGATE_DAEMON": "on" if daemon else "off",
        "ASKGATE_RUNTIME_DIR": str(run_dir),
    }
    if server is not None:
        stub = tmp_path / "server-stub"
        stub.mkdir()
        (stub / "sitecustomize.py").write_text(SERVER_STUB)
        hook_env |= {
            "PYTHONPATH": str(stub),
            "ASKGATE_TEST_SERVER": server,
            "ASKGATE_TEST_SERVER_LOG": str(tmp_path / "server-asked.log"),
        }
    from askgate.install import gemini as install_gemini
    from askgate.install.hook_files import run as install

    if program is None:
        env_args = [f"{k}={v}" for k, v in hook_env.items()]
        program = shlex.join(["env", *env_args, sys.executable, "-m", "askgate"])
    settings: dict[str, Any] = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    if hook:  # exactly what `askgate install gemini --user` adds to the settings
        args = ["--user", "--config", str(policy_file), "--command", program]
        assert install(install_gemini.TARGET, args, env={"HOME": str(home)}) == 0
    env = base_env(home) | {
        "GEMINI_API_KEY": "dummy",
        "GOOGLE_GEMINI_BASE_URL": model.base_url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    argv = [str(gemini), "-p", "run it", "--approval-mode", "yolo", "-o", "json"]
    argv += ["-m", "gemini-2.5-flash"]
    with contextlib.ExitStack() as stack:
        answered = stack.enter_context(resident_daemon(env | hook_env)) if daemon else None
        done = run_agent(argv, cwd=project, env=env, timeout=RUN_TIMEOUT, name="gemini")
        relayed = answered() if answered is not None else 0
    audit = read_review_log(audit_log)
    results = [
        json.dumps(part["functionResponse"])
        for request in model.model_requests()
        for content in (request.body or {}).get("contents", [])
        for part in content.get("parts", [])
        if isinstance(part, dict) and "functionResponse" in part
    ]
    return GeminiRun(done.returncode, done.stdout, done.stderr, project, audit, results, relayed)


def test_premise_without_the_hook_the_command_runs(gemini: Path, model, tmp_path: Path) -> None:
    run = run_gemini(gemini, model, tmp_path, f"mkdir -p build; touch {MARKER}", hook=False)
    assert run.ran, run.stderr[-2000:]
    assert (run.project / "build").is_dir()


def test_allowed_command_runs(gemini: Path, model, tmp_path: Path) -> None:
    run = run_gemini(gemini, model, tmp_path, f"touch {MARKER}")
    assert run.ran, run.stderr[-2000:]
    [record] = run.audit
    assert (record["action"], record["client"], record["tool"]) == (
        "allow",
        "gemini",
        "run_shell_command",
    )


@pytest.mark.parametrize("command", [f"mkdir build && touch {MARKER}", f"touch {MARKER}; mkdir b"])
def test_denied_command_does_not_run(gemini: Path, model, tmp_path: Path, command: str) -> None:
    run = run_gemini(gemini, model, tmp_path, command)
    assert not run.ran
    assert any("no new directories here" in r for r in run.tool_results), run.tool_results
    assert run.audit[-1]["action"] == "deny"


@pytest.mark.parametrize("command", [f"mkdir build && touch {MARKER}", f"touch {MARKER}"])
def test_the_gemini_hook_relays_to_the_daemon(
    gemini: Path, model, tmp_path: Path, command: str
) -> None:
    """With a resident daemon, the gemini hook relays (the daemon answers the call) and
    decides as in-process: a deny does not run, an allow runs."""
    run = run_gemini(gemini, model, tmp_path, command, daemon=True)
    assert run.relayed >= 1, run.stderr[-2000:]
    assert run.ran == command.startswith("touch"), run.stderr[-2000:]
    assert run.audit[-1]["action"] == ("allow" if run.ran else "deny"), run.audit


def test_ask_without_a_human_does_not_run(gemini: Path, model, tmp_path: Path) -> None:
    """`-p` has no one to confirm: the hook's "ask" forces Gemini's confirmation even in
    yolo mode, and with no UI the call does not run."""
    run = run_gemini(gemini, model, tmp_path, "touch other.txt")
    assert not (run.project / "other.txt").exists()
    assert run.audit[-1]["event"] == "ask_delegated"


@pytest.mark.parametrize(("answer", "runs"), [("approve", True), ("deny", False)])
def test_ask_through_the_approval_server(
    gemini: Path, model, tmp_path: Path, answer: str, runs: bool
) -> None:
    policy = POLICY.replace('"**/marker*" = "allow"', "")
    run = run_gemini(gemini, model, tmp_path, f"touch {MARKER}", policy=policy, server=answer)
    assert run.ran is runs, run.stderr[-2000:]
    assert "touch" in (tmp_path / "server-asked.log").read_text()


def test_askgate_that_cannot_start_blocks(gemini: Path, model, tmp_path: Path) -> None:
    """The installed `|| exit 2` guard: a hook command that cannot run exits 2 with text on
    stderr, which Gemini reads as a deny (without it, Gemini fails open)."""
    missing = str(tmp_path / "no-such-askgate")
    run = run_gemini(gemini, model, tmp_path, f"touch {MARKER}", program=missing)
    assert not run.ran
    assert run.audit == []


SANDBOX_POLICY = POLICY + '\n[sandbox]\nbash = "on"\n'


def test_an_allowed_command_runs_in_the_sandbox(gemini: Path, model, tmp_path: Path) -> None:
    """With `[sandbox] bash = "on"` the hook hands Gemini the prepared wrapper (bwrap
    started by bash). Gemini's own command-injection check must accept that form, and the
    command must run inside bwrap: the run record says bwrap ran it to exit code 0."""
    from sandbox_world import require_bwrap

    require_bwrap()
    run = run_gemini(gemini, model, tmp_path, f"touch {MARKER}", policy=SANDBOX_POLICY)
    assert not any("Command injection" in r for r in run.tool_results), run.tool_results
    assert run.ran, "\n".join(run.tool_results)
    assert run.audit[-1]["action"] == "allow"
    runs = tmp_path / "home" / ".local" / "share" / "askgate" / "sandbox" / "runs"
    statuses = [p / "status" for p in runs.iterdir() if p.name.startswith("w-")]
    assert statuses and all(b'"exit-code": 0' in p.read_bytes() for p in statuses)
