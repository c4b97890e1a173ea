"""End to end: the real Codex CLI (0.171.0), offline, with askgate as its PreToolUse and
PermissionRequest command hooks.

Each case is one run of the shared driver (tests/agent_e2e.py: `codex exec` against the fake
model API's Responses shape, tests/fake_model_api.py, with the hooks in
``$CODEX_HOME/hooks.json`` exactly as `askgate install codex` writes them).

* Without escalation (sandbox ``danger-full-access``, approvals ``never``): only PreToolUse
  runs, so askgate can block but never prompt.
* With ``sandbox_permissions: "require_escalated"`` and ``--approve-for-me`` (`ESCALATED`):
  Codex has an approval to make, so PermissionRequest fires first; askgate answers by policy
  or through the approval server; when askgate stays silent, Codex's automatic reviewer (the
  fake model, which gives no verdict) rejects the call.

"Ran" is proven by a marker file in the project, never by what Codex reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_e2e import CODEX, MARKER, AgentRun, Codex, run_agent

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
ESCALATED = Codex(CODEX.version, escalate=True)


def run_codex(tmp_path: Path, command: str, policy: str = POLICY, **options: Any) -> AgentRun:
    return run_agent(CODEX, command, policy, tmp_path=tmp_path, **options)


def test_premise_without_hooks_the_command_runs(tmp_path: Path) -> None:
    run = run_codex(tmp_path, f"mkdir -p build; touch {MARKER}", hook=False)
    assert run.ran, run.stderr[-2000:]
    assert (run.project / "build").is_dir()


def test_allowed_command_runs(tmp_path: Path) -> None:
    run = run_codex(tmp_path, f"touch {MARKER}")
    assert run.ran, run.stderr[-2000:]
    [record] = run.audit
    assert (record["event"], record["action"], record["client"]) == ("decision", "allow", "codex")
    assert record["tool"] == "Bash" and record["value"] == f"touch {MARKER}"


@pytest.mark.parametrize(
    "command", [f"mkdir build && touch {MARKER}", f"touch {MARKER}; mkdir -p build"]
)
def test_denied_command_does_not_run(tmp_path: Path, command: str) -> None:
    run = run_codex(tmp_path, command)
    assert not run.ran
    assert not (tmp_path / "proj" / "build").exists()
    assert any("no new directories here" in out for out in run.told), run.told
    assert run.audit[-1]["action"] == "deny"


@pytest.mark.parametrize("command", [f"mkdir build && touch {MARKER}", f"touch {MARKER}"])
def test_the_codex_hook_relays_to_the_daemon(tmp_path: Path, command: str) -> None:
    """With a resident daemon, the codex hook relays (the daemon answers the call) and
    decides as in-process: a deny does not run, an allow runs."""
    run = run_codex(tmp_path, command, daemon=True)
    assert run.relayed >= 1, run.stderr[-2000:]
    assert run.ran == command.startswith("touch"), run.stderr[-2000:]
    assert run.audit[-1]["action"] == ("allow" if run.ran else "deny"), run.audit


def test_ask_in_pre_tool_use_is_left_to_codex(tmp_path: Path) -> None:
    """The documented limit: with approvals "never", an askgate ask cannot stop the call
    (PreToolUse cannot ask); askgate records it as delegated to Codex."""
    run = run_codex(tmp_path, f"touch {MARKER}", policy=ASK_POLICY)
    assert run.ran
    assert run.audit[-1]["event"] == "ask_delegated"


def test_permission_request_allowed_by_policy_runs(tmp_path: Path) -> None:
    run = run_agent(ESCALATED, f"touch {MARKER}", POLICY, tmp_path=tmp_path)
    assert run.ran, run.stderr[-2000:]
    assert "PermissionRequest" in run.stderr
    assert [r["action"] for r in run.audit] == ["allow", "allow"]


def test_permission_request_unanswered_does_not_run(tmp_path: Path) -> None:
    run = run_agent(ESCALATED, f"touch {MARKER}", ASK_POLICY, tmp_path=tmp_path)
    assert not run.ran
    assert [r["event"] for r in run.audit] == ["ask_delegated", "ask_delegated"]


@pytest.mark.parametrize(("answer", "runs"), [("approve", True), ("deny", False)])
def test_permission_request_ask_through_the_approval_server(
    tmp_path: Path, answer: str, runs: bool
) -> None:
    run = run_agent(ESCALATED, f"touch {MARKER}", ASK_POLICY, tmp_path=tmp_path, server=answer)
    assert run.ran is runs, run.stderr[-2000:]
    assert "touch" in (tmp_path / "server-asked.log").read_text()
    assert run.audit[-1]["resolution"] == ("user_approved" if runs else "user_denied")


def test_askgate_that_cannot_start_blocks(tmp_path: Path) -> None:
    """The installed `|| exit 2` guard: the shell's "not found" on stderr and exit 2 block
    the call (without it, Codex treats a failed hook as no opinion and runs the call)."""
    missing = str(tmp_path / "no-such-askgate")
    run = run_codex(tmp_path, f"touch {MARKER}", program=missing)
    assert not run.ran
    assert run.audit == []


SANDBOX_POLICY = POLICY + '\n[sandbox]\nbash = "on"\n'


def test_an_allowed_command_runs_in_the_sandbox(tmp_path: Path) -> None:
    """With `[sandbox] bash = "on"` the PreToolUse hook rewrites the command into the
    prepared wrapper; Codex runs it and the command runs inside bwrap (its run record
    says bwrap ran it to exit code 0)."""
    from sandbox_world import require_bwrap

    require_bwrap()
    run = run_codex(tmp_path, f"touch {MARKER}", policy=SANDBOX_POLICY)
    assert run.ran, (run.told, run.stderr[-2000:])
    assert run.audit[-1]["action"] == "allow"
    runs = tmp_path / "home" / ".local" / "share" / "askgate" / "sandbox" / "runs"
    statuses = [p / "status" for p in runs.iterdir() if p.name.startswith("w-")]
    assert statuses and all(b'"exit-code": 0' in p.read_bytes() for p in statuses)
