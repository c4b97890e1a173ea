"""End to end: the real Claude Code CLI (offline, fake model API) runs an allowed Bash command
that askgate's hook rewrote into `askgate sandbox -- <command>` (PreToolUse `updatedInput`).

The command reads the SSH key through a Makefile recipe — opaque to the policy, which allows
it — so only the kernel can stop it. What the model saw (the tool result Claude Code sent
back) proves the sandbox ran: the recipe failed with "Permission denied", the secret never
appeared, and the rest of the command ran (a marker file in the project).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_anthropic import FakeAnthropic, tool_result_text
from sandbox_world import require_bwrap
from test_e2e_claude_code import MARKER, claude_bin, fake_api, run_claude, the_tool_result

__all__ = ["claude_bin", "fake_api"]  # fixtures, re-used from the Claude Code e2e module

SECRET = "E2E-SSH-KEY-5d2c"
POLICY = """
default = "allow"
[read]
"~/.ssh/**" = "deny"

[sandbox]
bash = "on"
"""
COMMAND = (
    "printf 'leak:\\n\\t@cat $$HOME/.ssh/id_rsa\\n' > Makefile; make -s leak; "
    f"echo SANDBOX_RAN > {MARKER}"
)


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    require_bwrap()


def test_claude_code_runs_the_allowed_command_inside_the_sandbox(
    claude_bin: Path, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text(SECRET + "\n")
    run = run_claude(claude_bin, fake_api, tmp_path, command=COMMAND, policy=POLICY)
    assert (run.project / MARKER).read_text() == "SANDBOX_RAN\n"
    seen = tool_result_text(the_tool_result(fake_api))
    assert SECRET not in seen
    assert "Permission denied" in seen
    [record] = run.audit
    assert record["action"] == "allow" and record["value"] == COMMAND


def test_without_the_sandbox_the_same_command_leaks(
    claude_bin: Path, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """The premise: the policy alone lets the recipe read the key."""
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text(SECRET + "\n")
    policy = POLICY.replace('bash = "on"', 'bash = "off"')
    run_claude(claude_bin, fake_api, tmp_path, command=COMMAND, policy=policy)
    assert SECRET in tool_result_text(the_tool_result(fake_api))
