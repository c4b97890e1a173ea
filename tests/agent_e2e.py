"""The one end-to-end driver for the real agent CLIs: Claude Code (both pinned versions), Codex
and Gemini, each run offline against the fake model API (tests/fake_model_api.py).

`run_agent(agent, script, policy, tmp_path=…)` gives the run its own HOME, git project, policy
file, review log and daemon runtime directory; registers askgate's hook the way a user does
(Claude Code: a PreToolUse command hook in a ``--settings`` file; Codex and Gemini: what
`askgate install codex|gemini --user` writes); scripts the fake model; runs the CLI to the end
in its own process group; and returns what the tools did: the files the run changed in the
project, what each CLI told the model each tool did (the transcript), and askgate's review log.
"Ran" is always judged by the files, never by what the CLI reports.

pi is no hook-based CLI (askgate drives it over RPC, tests/test_e2e_pi_*.py); it shares the
fake model API only.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acp_harness import approval_stub_env
from agent_hooks import resident_daemon
from clients import require_client
from fake_model_api import FakeModelAPI, RecordedRequest, Script, ToolCall, ToolResult
from waits import SAFETY_TIMEOUT

MARKER = "marker.txt"
HOOK_TIMEOUT = 30  # seconds Claude Code gives one hook call (the registration's "timeout")


def git_project(tmp_path: Path, name: str = "proj") -> Path:
    """A fresh project directory that askgate sees as a project root."""
    project = tmp_path / name
    project.mkdir(parents=True)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=SAFETY_TIMEOUT)
    else:  # askgate finds the project root by the .git entry alone
        (project / ".git").mkdir()
    return project


def read_review_log(path: Path) -> list[dict[str, Any]]:
    """askgate's review log (one JSON object a line), [] when nothing was written."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _snapshot(project: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(project)): p.read_bytes()
        for p in sorted(project.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(project).parts
    }


@dataclass(frozen=True)
class AgentRun:
    returncode: int
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)
    project: Path
    changed: list[str]  # files created, modified or removed in the project, relative
    transcript: list[ToolResult]  # what the CLI told the model each tool call did
    model_requests: list[RecordedRequest] = field(repr=False)
    audit: list[dict[str, Any]]  # askgate's review log, one record per line
    relayed: int = 0  # calls the resident daemon answered (daemon=True)

    @property
    def ran(self) -> bool:
        """Whether the scripted command left its marker file in the project."""
        return (self.project / MARKER).exists()

    @property
    def told(self) -> list[str]:
        """The text of each tool result the model got."""
        return [r.text for r in self.transcript]

    @property
    def frames(self) -> list[dict[str, Any]]:
        """stdout's JSON lines (Claude Code's stream-json)."""
        return [json.loads(x) for x in self.stdout.splitlines() if x.startswith("{")]

    @property
    def result(self) -> dict[str, Any]:
        """Claude Code's last `result` frame."""
        results = [f for f in self.frames if f.get("type") == "result"]
        assert results, f"no result frame; stderr: {self.stderr[-2000:]}"
        return results[-1]


@dataclass
class Run:
    """One run being set up: its directories, and what askgate is given."""

    tmp_path: Path
    model: FakeModelAPI
    project: Path
    policy_file: Path | None
    askgate_env: dict[str, str]  # what askgate's hook (and a daemon) sees
    options: dict[str, Any]

    @property
    def home(self) -> Path:
        return self.tmp_path / "home"

    def program(self) -> str:
        """The askgate program a Codex or Gemini hook runs, carrying askgate's environment."""
        given = self.options.get("program")
        if given is not None:
            return str(given)
        env_args = [f"{k}={v}" for k, v in self.askgate_env.items()]
        return shlex.join(["env", *env_args, sys.executable, "-m", "askgate"])


class Agent:
    """One real CLI: where it is, how it is told to use the fake model, how askgate's hook
    is registered with it, how its shell tool is called."""

    name = ""  # askgate's name for the agent (`askgate hook NAME`)
    client = ""  # scripts/install-clients' name and binary
    binary_name = ""

    def __init__(self, version: str) -> None:
        self.version = version

    def __repr__(self) -> str:
        return f"{self.name}-{self.version}"

    def binary(self) -> Path:
        return _checked_binary(self.client, self.version, self.binary_name, self.version_line)

    def version_line(self, stdout: str) -> bool:
        return stdout.strip() == self.version

    def shell(self, command: str) -> ToolCall:
        raise NotImplementedError

    def cli_env(self, run: Run) -> dict[str, str]:
        raise NotImplementedError

    def prepare(self, run: Run) -> list[str]:
        """Register the hook (unless `hook=False`) and write the CLI's config; the argv."""
        raise NotImplementedError

    def check(self, done: AgentRun) -> None:
        """What every finished run of this CLI must show."""


@functools.cache
def _checked_binary(client: str, version: str, binary: str, line: Any) -> Path:
    path = require_client(client, version, binary)
    with tempfile.TemporaryDirectory() as home:
        proc = subprocess.run(
            [str(path), "--version"],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "LANG": "C.UTF-8"}
            | {"CODEX_HOME": home, "CLAUDE_CONFIG_DIR": home, "GEMINI_CLI_NO_RELAUNCH": "true"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )
    assert proc.returncode == 0 and line(proc.stdout), (
        f"{path} is not {client} {version} (rerun scripts/install-clients): "
        f"{(proc.stdout + proc.stderr).strip()[:500]}"
    )
    return path


CLAUDE_QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no DNS lookups, no telemetry at all
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


class ClaudeCode(Agent):
    name = client = "claude-code"
    binary_name = "claude"

    def version_line(self, stdout: str) -> bool:
        return stdout.startswith(self.version)

    def shell(self, command: str) -> ToolCall:
        return ToolCall("Bash", {"command": command, "description": "Run the scripted command"})

    def hook_command(self, policy: Path, *extra: str) -> str:
        args = [sys.executable, "-m", "askgate", "hook", "claude-code", "--config", str(policy)]
        return shlex.join([*args, *extra])

    def home_env(self, tmp_path: Path) -> dict[str, str]:
        """Nothing from the developer's environment (keys, config dirs) reaches the CLI, its
        hook or a daemon started with this environment (Claude Code hands the hook its own)."""
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
            **CLAUDE_QUIET,
            **askgate_env(tmp_path),
        }

    def cli_env(self, run: Run) -> dict[str, str]:
        return {
            **self.home_env(run.tmp_path),
            **run.askgate_env,
            "ANTHROPIC_BASE_URL": run.model.origin,
            "ANTHROPIC_API_KEY": "sk-ant-dummy",
        }

    def prepare(self, run: Run) -> list[str]:
        settings = run.options.get("settings")
        if settings is None:
            settings = run.tmp_path / "settings.json"
            hooks = {}
            if run.options.get("hook", True):
                assert run.policy_file is not None
                command = self.hook_command(run.policy_file, *run.options.get("hook_args", ()))
                hooks = registration(command, "PreToolUse")
            settings.write_text(json.dumps({"permissions": {"allow": ["Bash"]}, **hooks}))
        argv = [str(self.binary()), "-p", "run it", "--output-format", "stream-json"]
        return [*argv, "--verbose", "--settings", str(settings)]

    def check(self, done: AgentRun) -> None:
        assert done.returncode == 0, f"claude exited {done.returncode}: {done.stderr[-2000:]}"
        assert done.result["subtype"] == "success", done.result


def registration(command: str, *events: str) -> dict[str, Any]:
    """Claude Code settings' `hooks` entry running `command` for every tool on `events`."""
    hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
    return {"hooks": {event: [{"matcher": "*", "hooks": [hook]}] for event in events}}


class Codex(Agent):
    """`codex exec` with a custom model provider (``wire_api = "responses"``);
    ``--dangerously-bypass-hook-trust`` stands in for the user trusting the hooks in /hooks.
    `escalate=True`: the call asks for ``require_escalated`` under approvals ``on-request``
    with ``--approve-for-me``, so PermissionRequest fires too."""

    name = client = binary_name = "codex"

    def __init__(self, version: str, *, escalate: bool = False) -> None:
        super().__init__(version)
        self.escalate = escalate

    def version_line(self, stdout: str) -> bool:
        return stdout.strip() == f"codex-cli {self.version}"

    def shell(self, command: str) -> ToolCall:
        arguments: dict[str, Any] = {"cmd": command}
        if self.escalate:
            arguments |= {"sandbox_permissions": "require_escalated", "justification": "write"}
        return ToolCall("exec_command", arguments)

    def cli_env(self, run: Run) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(run.home),
            "CODEX_HOME": str(run.home / ".codex"),
            "FAKE_API_KEY": "dummy",
            "SHELL": shutil.which("bash") or "/bin/bash",
            "LANG": "C.UTF-8",
        }

    def prepare(self, run: Run) -> list[str]:
        from askgate.install import codex as install_codex
        from askgate.install.hook_files import run as install

        codex_home = run.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            f'model = "fake-model"\nmodel_provider = "fake"\n'
            f'sandbox_mode = "{"read-only" if self.escalate else "danger-full-access"}"\n'
            f'approval_policy = "{"on-request" if self.escalate else "never"}"\n'
            f"[model_providers.fake]\n"
            f'name = "fake"\nbase_url = "{run.model.origin}/v1"\nwire_api = "responses"\n'
            f'env_key = "FAKE_API_KEY"\n'
        )
        if run.options.get("hook", True):  # exactly what `askgate install codex --user` writes
            args = ["--user", "--config", str(run.policy_file), "--command", run.program()]
            installed = install(install_codex.TARGET, args, env={"CODEX_HOME": str(codex_home)})
            assert installed == 0 and (codex_home / "hooks.json").is_file()
        argv = [str(self.binary()), "exec", "--dangerously-bypass-hook-trust"]
        argv.append("--skip-git-repo-check")
        if self.escalate:
            argv.append("--approve-for-me")
        return [*argv, "run it"]


class Gemini(Agent):
    """`gemini -p` against ``GOOGLE_GEMINI_BASE_URL``; ``-m`` names the model so the model
    router (an extra JSON call) is not consulted; ``--approval-mode yolo`` makes Gemini allow
    every call itself; ``GEMINI_CLI_TRUST_WORKSPACE`` stands in for trusting the folder."""

    name = client = binary_name = "gemini"

    def shell(self, command: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": command, "description": "run"})

    def cli_env(self, run: Run) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(run.home),
            "LANG": "C.UTF-8",
            "NO_BROWSER": "1",
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "GEMINI_API_KEY": "dummy",
            "GOOGLE_GEMINI_BASE_URL": run.model.origin,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }

    def prepare(self, run: Run) -> list[str]:
        from askgate.install import gemini as install_gemini
        from askgate.install.hook_files import run as install

        (run.home / ".gemini").mkdir(parents=True, exist_ok=True)
        settings: dict[str, Any] = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        (run.home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        if run.options.get("hook", True):  # exactly what `askgate install gemini --user` adds
            args = ["--user", "--config", str(run.policy_file), "--command", run.program()]
            assert install(install_gemini.TARGET, args, env={"HOME": str(run.home)}) == 0
        argv = [str(self.binary()), "-p", "run it", "--approval-mode", "yolo", "-o", "json"]
        return [*argv, "-m", "gemini-2.5-flash"]


def pi_bash(command: str) -> ToolCall:
    """pi's shell tool call (pi is driven over RPC by askgate, not through `run_agent`)."""
    return ToolCall("bash", {"command": command})


CLAUDE_CODE_OLD = ClaudeCode("2.1.197")  # no onFailure: a failed hook lets the call through
CLAUDE_CODE_NEW = ClaudeCode("2.1.332")  # onFailure: "block"
CODEX = Codex("0.171.0")
GEMINI = Gemini("0.61.0")


def askgate_env(
    tmp_path: Path, *, daemon: bool = False, server: str | None = None
) -> dict[str, str]:
    """What askgate sees in a run: its review log, no managed policy, and a daemon runtime
    directory of the run's own (in-process unless `daemon`); `server` ("approve", "deny",
    "hang") stands in an approval server that answers so."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700, exist_ok=True)
    env = {
        "ASKGATE_AUDIT_LOG": str(tmp_path / "review.jsonl"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed-policy.toml"),
        "ASKGATE_DAEMON": "on" if daemon else "off",
        "ASKGATE_RUNTIME_DIR": str(run_dir),
    }
    if server is not None:
        env |= approval_stub_env(tmp_path, server)
    return env


@dataclass
class Prepared:
    """A run set up but not started (for a test that drives the CLI itself)."""

    argv: list[str]
    env: dict[str, str]
    project: Path
    run: Run


def prepare_run(
    agent: Agent,
    script: Script | str | Sequence[str],
    policy: str | None,
    *,
    tmp_path: Path,
    model: FakeModelAPI,
    project: Path | None = None,
    env: Mapping[str, str] | None = None,
    cli_args: Sequence[str] = (),
    daemon: bool = False,
    server: str | None = None,
    **options: Any,
) -> Prepared:
    if project is None:
        project = git_project(tmp_path)
    elif not project.exists():
        project = git_project(project.parent, project.name)
    policy_file = None
    if policy is not None:
        policy_file = tmp_path / "policy.toml"
        policy_file.write_text(policy)
    run = Run(
        tmp_path,
        model,
        project,
        policy_file,
        askgate_env(tmp_path, daemon=daemon, server=server),
        options,
    )
    if not isinstance(script, Script):
        commands = [script] if isinstance(script, str) else list(script)
        script = Script(tuple(agent.shell(c) for c in commands), "Finished.")
    model.script(*script.turns, final_text=script.final_text)
    argv = [*agent.prepare(run), *cli_args]
    return Prepared(argv, {**agent.cli_env(run), **(env or {})}, project, run)


def run_agent(
    agent: Agent,
    script: Script | str | Sequence[str],
    policy: str | None,
    *,
    tmp_path: Path,
    check: bool = True,
    hook: bool = True,
    daemon: bool = False,
    **options: Any,
) -> AgentRun:
    """One run of `agent` doing `script` (one shell command, several, or any tool calls)
    under `policy` (None: no policy file; the test registered askgate itself). Options:
    `hook=False` runs the CLI without askgate; `daemon=True` runs a resident daemon for the
    run; `server` stands in an approval server; `env` and `cli_args` add to the CLI's;
    `project` places the project; per agent, `settings` (a Claude Code settings file used
    as is), `hook_args` (added to the Claude Code hook command), `program` (the askgate
    program a Codex or Gemini hook runs)."""
    with FakeModelAPI() as model:
        prepared = prepare_run(
            agent, script, policy, tmp_path=tmp_path, model=model, daemon=daemon, hook=hook,
            **options,
        )  # fmt: skip
        before = _snapshot(prepared.project)
        with contextlib.ExitStack() as stack:
            answered = None
            if daemon:
                daemon_env = prepared.env | prepared.run.askgate_env
                answered = stack.enter_context(resident_daemon(daemon_env))
            returncode, stdout, stderr = _run_to_the_end(prepared, agent.name)
            relayed = answered() if answered is not None else 0
        after = _snapshot(prepared.project)
        done = AgentRun(
            returncode,
            stdout,
            stderr,
            prepared.project,
            sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p)),
            model.tool_results(),
            model.model_requests(),
            read_review_log(tmp_path / "review.jsonl"),
            relayed,
        )
    if check:
        agent.check(done)
    return done


def _run_to_the_end(prepared: Prepared, name: str) -> tuple[int, str, str]:
    """Run the CLI in its own process group: if it hangs, the CLI, its shell and askgate's
    hook go down together and the test fails with its stderr."""
    proc = subprocess.Popen(
        prepared.argv,
        cwd=prepared.project,
        env=prepared.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=SAFETY_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"{name} hung (killed after {SAFETY_TIMEOUT} s); stderr: {stderr[-2000:]}")
    return proc.returncode, stdout, stderr
