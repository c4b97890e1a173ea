"""End to end: the real Claude Code CLI (offline, fake model API) runs an allowed Bash command
that askgate's hook rewrote into `askgate sandbox -- <command>` (PreToolUse `updatedInput`).

The command reads the SSH key through a Makefile recipe — opaque to the policy, which allows
it — so only the kernel can stop it. What the model saw (the tool result Claude Code sent
back) proves the sandbox ran: the recipe found no key (~/.ssh reads as an empty
directory), the secret never appeared, and the rest of the command ran (a marker file in
the project). The premise test runs the same command with the sandbox off: the secret
reaches the model.

Runs through the shared end-to-end driver (tests/agent_e2e.py), as the other Claude Code
end-to-end modules do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_e2e import CLAUDE_CODE_NEW, CLAUDE_CODE_OLD, MARKER, ClaudeCode, git_project, run_agent
from sandbox_world import require_bwrap

VERSIONS = (CLAUDE_CODE_OLD, CLAUDE_CODE_NEW)  # the sandboxed form must be one both CLIs run
SECRET = "E2E-SSH-KEY-5d2c"
POLICY = """
default = "allow"
[read]
"~/.ssh/**" = "deny"

[sandbox]
bash = "on"
"""
# The project's Makefile is there before the agent's command (written by the test as the
# user would have): a recipe written by the command itself is asked about (round 3).
MAKEFILE = "leak:\n\t@cat $$HOME/.ssh/id_rsa\n"
COMMAND = f"make -s leak; echo SANDBOX_RAN > {MARKER}"


@pytest.fixture(params=VERSIONS, ids=lambda agent: agent.version)
def claude(request: pytest.FixtureRequest) -> ClaudeCode:
    return request.param


def _run_claude(tmp_path: Path, policy: str, claude: ClaudeCode) -> tuple[Path, str, list[dict]]:
    """One run; the project, what the model saw (the one tool result) and the review log."""
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_rsa").write_text(SECRET + "\n")
    project = git_project(tmp_path)
    (project / "Makefile").write_text(MAKEFILE)
    run = run_agent(claude, COMMAND, policy, tmp_path=tmp_path, project=project)
    assert len(run.transcript) == 1, run.transcript
    return run.project, run.transcript[0].text, run.audit


@pytest.fixture(autouse=True)
def _prerequisites() -> None:
    require_bwrap()


def test_claude_code_runs_the_allowed_command_inside_the_sandbox(
    tmp_path: Path, claude: ClaudeCode
) -> None:
    project, seen, audit = _run_claude(tmp_path, POLICY, claude)
    assert (project / MARKER).read_text() == "SANDBOX_RAN\n"  # the command ran…
    assert SECRET not in seen  # …but the kernel kept the key from the recipe
    assert "No such file or directory" in seen  # ~/.ssh reads as an empty directory
    [record] = audit
    assert record["action"] == "allow" and record["value"] == COMMAND
    # It ran through the prepared wrapper (bwrap started by bash, no Python): its run
    # record says bwrap ran the command to exit code 0 (cleaned by the next askgate).
    runs = tmp_path / "xdg-data" / "askgate" / "sandbox" / "runs"
    (status,) = [p / "status" for p in runs.iterdir() if p.name.startswith("w-")]
    assert b'"exit-code": 0' in status.read_bytes()


def test_without_the_sandbox_the_same_command_leaks(tmp_path: Path, claude: ClaudeCode) -> None:
    """The premise: the policy alone lets the recipe read the key."""
    _, seen, _ = _run_claude(tmp_path, POLICY.replace('bash = "on"', 'bash = "off"'), claude)
    assert SECRET in seen
