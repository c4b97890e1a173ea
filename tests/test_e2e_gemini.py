"""End to end: the real Gemini CLI (0.61.0), offline, with askgate as its BeforeTool hook.

Each case is one run of the shared driver (tests/agent_e2e.py: `gemini -p` against the fake
model API, tests/fake_model_api.py, with the hook installed as `askgate install gemini`
writes it). ``--approval-mode yolo`` makes Gemini itself allow every call, so whenever a
command does not run below, askgate stopped it. "Ran" is proven by a marker file in the
project, never by what Gemini reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_e2e import GEMINI, MARKER, AgentRun, run_agent

POLICY = """
default = "ask"
[bash]
"touch *" = "allow"
"mkdir *" = { action = "deny", reason = "no new directories here" }
[write]
"**/marker*" = "allow"
"""


def run_gemini(tmp_path: Path, command: str, policy: str = POLICY, **options: Any) -> AgentRun:
    return run_agent(GEMINI, command, policy, tmp_path=tmp_path, **options)


def test_premise_without_the_hook_the_command_runs(tmp_path: Path) -> None:
    run = run_gemini(tmp_path, f"mkdir -p build; touch {MARKER}", hook=False)
    assert run.ran, run.stderr[-2000:]
    assert (run.project / "build").is_dir()


def test_allowed_command_runs(tmp_path: Path) -> None:
    run = run_gemini(tmp_path, f"touch {MARKER}")
    assert run.ran, run.stderr[-2000:]
    [record] = run.audit
    assert (record["action"], record["client"], record["tool"]) == (
        "allow",
        "gemini",
        "run_shell_command",
    )


@pytest.mark.parametrize("command", [f"mkdir build && touch {MARKER}", f"touch {MARKER}; mkdir b"])
def test_denied_command_does_not_run(tmp_path: Path, command: str) -> None:
    run = run_gemini(tmp_path, command)
    assert not run.ran
    assert any("no new directories here" in r for r in run.told), run.told
    assert run.audit[-1]["action"] == "deny"


@pytest.mark.parametrize("command", [f"mkdir build && touch {MARKER}", f"touch {MARKER}"])
def test_the_gemini_hook_relays_to_the_daemon(tmp_path: Path, command: str) -> None:
    """With a resident daemon, the gemini hook relays (the daemon answers the call) and
    decides as in-process: a deny does not run, an allow runs."""
    run = run_gemini(tmp_path, command, daemon=True)
    assert run.relayed >= 1, run.stderr[-2000:]
    assert run.ran == command.startswith("touch"), run.stderr[-2000:]
    assert run.audit[-1]["action"] == ("allow" if run.ran else "deny"), run.audit


def test_ask_without_a_human_does_not_run(tmp_path: Path) -> None:
    """`-p` has no one to confirm: the hook's "ask" forces Gemini's confirmation even in
    yolo mode, and with no UI the call does not run."""
    run = run_gemini(tmp_path, "touch other.txt")
    assert not (run.project / "other.txt").exists()
    assert run.audit[-1]["event"] == "ask_delegated"


@pytest.mark.parametrize(("answer", "runs"), [("approve", True), ("deny", False)])
def test_ask_through_the_approval_server(tmp_path: Path, answer: str, runs: bool) -> None:
    policy = POLICY.replace('"**/marker*" = "allow"', "")
    run = run_gemini(tmp_path, f"touch {MARKER}", policy=policy, server=answer)
    assert run.ran is runs, run.stderr[-2000:]
    assert "touch" in (tmp_path / "server-asked.log").read_text()


def test_askgate_that_cannot_start_blocks(tmp_path: Path) -> None:
    """The installed `|| exit 2` guard: a hook command that cannot run exits 2 with text on
    stderr, which Gemini reads as a deny (without it, Gemini fails open)."""
    missing = str(tmp_path / "no-such-askgate")
    run = run_gemini(tmp_path, f"touch {MARKER}", program=missing)
    assert not run.ran
    assert run.audit == []


SANDBOX_POLICY = POLICY + '\n[sandbox]\nbash = "on"\n'


def test_an_allowed_command_runs_in_the_sandbox(tmp_path: Path) -> None:
    """With `[sandbox] bash = "on"` the hook hands Gemini the prepared wrapper (bwrap
    started by bash). Gemini's own command-injection check must accept that form, and the
    command must run inside bwrap: the run record says bwrap ran it to exit code 0."""
    from sandbox_world import require_bwrap

    require_bwrap()
    run = run_gemini(tmp_path, f"touch {MARKER}", policy=SANDBOX_POLICY)
    assert not any("Command injection" in r for r in run.told), run.told
    assert run.ran, "\n".join(run.told)
    assert run.audit[-1]["action"] == "allow"
    runs = tmp_path / "home" / ".local" / "share" / "askgate" / "sandbox" / "runs"
    statuses = [p / "status" for p in runs.iterdir() if p.name.startswith("w-")]
    assert statuses and all(b'"exit-code": 0' in p.read_bytes() for p in statuses)
