"""End to end: the real Codex CLI (0.171.0), offline, with askgate as its PreToolUse and
PermissionRequest command hooks.

`codex exec` talks to a fake OpenAI Responses API on 127.0.0.1 (tests/fake_model_server.py;
a custom model provider with ``base_url`` in config.toml) whose scripted "model" calls
``exec_command`` once. The hooks are registered in ``$CODEX_HOME/hooks.json`` exactly as
`askgate install codex` writes them (only the policy path and review log are added), and
``--dangerously-bypass-hook-trust`` stands in for the user trusting them in ``/hooks``.

* Without escalation (sandbox ``danger-full-access``, approvals ``never``): only PreToolUse
  runs, so askgate can block but never prompt.
* With ``sandbox_permissions: "require_escalated"`` and ``--approve-for-me``: Codex has an
  approval to make, so PermissionRequest fires first; askgate answers by policy or through
  the approval server; when askgate stays silent, Codex's automatic reviewer (the fake model,
  which gives no verdict) rejects the call.

"Ran" is proven by a marker file in the project, never by what Codex reports.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
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

CODEX_VERSION = "0.171.0"
CODEX_BIN = client_bin("codex", CODEX_VERSION, "codex")
RUN_TIMEOUT = 90.0
MARKER = "marker.txt"
POLICY = """
default = "ask"
[bash]
"touch *" = "allow"
"echo *" = "allow"
"mkdir *" = { action = "deny", reason = "no new directories here" }
[write]
"**/marker*" = "allow"
"""
ASK_POLICY = POLICY.replace('"**/marker*" = "allow"', "")


@dataclass
class CodexRun:
    returncode: int
    stdout: str
    stderr: str
    project: Path
    audit: list[dict[str, Any]]
    tool_outputs: list[str]
    relayed: int = 0  # calls the resident daemon answered (daemon=True)

    @property
    def ran(self) -> bool:
        return (self.project / MARKER).exists()


@pytest.fixture(scope="module")
def codex(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_client("codex", CODEX_VERSION, "codex")
    home = tmp_path_factory.mktemp("codex-version")
    proc = subprocess.run(
        [str(CODEX_BIN), "--version"],
        env={"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.stdout.strip() == f"codex-cli {CODEX_VERSION}", proc.stdout + proc.stderr
    return CODEX_BIN


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    server = FakeModelServer().start()
    try:
        yield server
    finally:
        server.close()


def run_codex(
    codex: Path,
    model: FakeModelServer,
    tmp_path: Path,
    command: str,
    *,
    policy: str = POLICY,
    escalate: bool = False,
    hooks: bool = True,
    server: str | None = None,
    program: str | None = None,
    daemon: bool = False,
) -> CodexRun:
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    project = git_project(tmp_path)
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy)
    audit_log = tmp_path / "review.jsonl"
    arguments: dict[str, Any] = {"cmd": command}
    if escalate:
        arguments |= {"sandbox_permissions": "require_escalated", "justification": "write"}
    model.script("exec_command", arguments, "Finished.")
    (codex_home / "config.toml").write_text(
        f'model = "fake-model"\nmodel_provider = "fake"\n'
        f'sandbox_mode = "{"read-only" if escalate else "danger-full-access"}"\n'
        f'approval_policy = "{"on-request" if escalate else "never"}"\n'
        f"[model_providers.fake]\n"
        f'name = "fake"\nbase_url = "{model.base_url}/v1"\nwire_api = "responses"\n'
        f'env_key = "FAKE_API_KEY"\n'
    )
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
    from askgate.install import codex as install_codex
    from askgate.install.hook_files import run as install

    if program is None:
        env_args = [f"{k}={v}" for k, v in hook_env.items()]
        program = shlex.join(["env", *env_args, sys.executable, "-m", "askgate"])
    if hooks:  # exactly what `askgate install codex --user` writes
        args = ["--user", "--config", str(policy_file), "--command", program]
        installed = install(install_codex.TARGET, args, env={"CODEX_HOME": str(codex_home)})
        assert installed == 0 and (codex_home / "hooks.json").is_file()
    argv = [str(codex), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check"]
    if escalate:
        argv.append("--approve-for-me")
    argv.append("run it")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "FAKE_API_KEY": "dummy",
        "SHELL": shutil.which("bash") or "/bin/bash",
        "LANG": "C.UTF-8",
    }
    with contextlib.ExitStack() as stack:
        answered = stack.enter_context(resident_daemon(env | hook_env)) if daemon else None
        done = run_agent(argv, cwd=project, env=env, timeout=RUN_TIMEOUT, name="codex")
        relayed = answered() if answered is not None else 0
    audit = read_review_log(audit_log)
    outputs = [
        str(item.get("output"))
        for request in model.model_requests()
        for item in (request.body or {}).get("input", [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    return CodexRun(done.returncode, done.stdout, done.stderr, project, audit, outputs, relayed)


def test_premise_without_hooks_the_command_runs(codex: Path, model, tmp_path: Path) -> None:
    run = run_codex(codex, model, tmp_path, f"mkdir -p build; touch {MARKER}", hooks=False)
    assert run.ran, run.stderr[-2000:]
    assert (run.project / "build").is_dir()


def test_allowed_command_runs(codex: Path, model, tmp_path: Path) -> None:
    run = run_codex(codex, model, tmp_path, f"touch {MARKER}")
    assert run.ran, run.stderr[-2000:]
    [record] = run.audit
    assert (record["event"], record["action"], record["client"]) == ("decision", "allow", "codex")
    assert record["tool"] == "Bash" and record["value"] == f"touch {MARKER}"


@pytest.mark.parametrize(
    "command", [f"mkdir build && touch {MARKER}", f"touch {MARKER}; mkdir -p build"]
)
def test_denied_command_does_not_run(codex: Path, model, tmp_path: Path, command: str) -> None:
    run = run_codex(codex, model, tmp_path, command)
    assert not run.ran
    assert not (tmp_path / "proj" / "build").exists()
    assert any("no new directories here" in out for out in run.tool_outputs), run.tool_outputs
    assert run.audit[-1]["action"] == "deny"


@pytest.mark.parametrize("command", [f"mkdir build && touch {MARKER}", f"touch {MARKER}"])
def test_the_codex_hook_relays_to_the_daemon(
    codex: Path, model, tmp_path: Path, command: str
) -> None:
    """With a resident daemon, the codex hook relays (the daemon answers the call) and
    decides as in-process: a deny does not run, an allow runs."""
    run = run_codex(codex, model, tmp_path, command, daemon=True)
    assert run.relayed >= 1, run.stderr[-2000:]
    assert run.ran == command.startswith("touch"), run.stderr[-2000:]
    assert run.audit[-1]["action"] == ("allow" if run.ran else "deny"), run.audit


def test_ask_in_pre_tool_use_is_left_to_codex(codex: Path, model, tmp_path: Path) -> None:
    """The documented limit: with approvals "never", an askgate ask cannot stop the call
    (PreToolUse cannot ask); askgate records it as delegated to Codex."""
    run = run_codex(codex, model, tmp_path, f"touch {MARKER}", policy=ASK_POLICY)
    assert run.ran
    assert run.audit[-1]["event"] == "ask_delegated"


def test_permission_request_allowed_by_policy_runs(codex: Path, model, tmp_path: Path) -> None:
    run = run_codex(codex, model, tmp_path, f"touch {MARKER}", escalate=True)
    assert run.ran, run.stderr[-2000:]
    assert "PermissionRequest" in run.stderr
    assert [r["action"] for r in run.audit] == ["allow", "allow"]


def test_permission_request_unanswered_does_not_run(codex: Path, model, tmp_path: Path) -> None:
    run = run_codex(codex, model, tmp_path, f"touch {MARKER}", policy=ASK_POLICY, escalate=True)
    assert not run.ran
    assert [r["event"] for r in run.audit] == ["ask_delegated", "ask_delegated"]


@pytest.mark.parametrize(("answer", "runs"), [("approve", True), ("deny", False)])
def test_permission_request_ask_through_the_approval_server(
    codex: Path, model, tmp_path: Path, answer: str, runs: bool
) -> None:
    run = run_codex(
        codex, model, tmp_path, f"touch {MARKER}", policy=ASK_POLICY, escalate=True, server=answer
    )
    assert run.ran is runs, run.stderr[-2000:]
    assert "touch" in (tmp_path / "server-asked.log").read_text()
    assert run.audit[-1]["resolution"] == ("user_approved" if runs else "user_denied")


def test_askgate_that_cannot_start_blocks(codex: Path, model, tmp_path: Path) -> None:
    """The installed `|| exit 2` guard: the shell's "not found" on stderr and exit 2 block
    the call (without it, Codex treats a failed hook as no opinion and runs the call)."""
    missing = str(tmp_path / "no-such-askgate")
    run = run_codex(codex, model, tmp_path, f"touch {MARKER}", program=missing)
    assert not run.ran
    assert run.audit == []


SANDBOX_POLICY = POLICY + '\n[sandbox]\nbash = "on"\n'


def test_an_allowed_command_runs_in_the_sandbox(codex: Path, model, tmp_path: Path) -> None:
    """With `[sandbox] bash = "on"` the PreToolUse hook rewrites the command into the
    prepared wrapper; Codex runs it and the command runs inside bwrap (its run record
    says bwrap ran it to exit code 0)."""
    from sandbox_world import require_bwrap

    require_bwrap()
    run = run_codex(codex, model, tmp_path, f"touch {MARKER}", policy=SANDBOX_POLICY)
    assert run.ran, (run.tool_outputs, run.stderr[-2000:])
    assert run.audit[-1]["action"] == "allow"
    runs = tmp_path / "home" / ".local" / "share" / "askgate" / "sandbox" / "runs"
    statuses = [p / "status" for p in runs.iterdir() if p.name.startswith("w-")]
    assert statuses and all(b'"exit-code": 0' in p.read_bytes() for p in statuses)
