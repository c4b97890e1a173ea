"""End to end: an agent in a mode that drops asks cannot rewrite the file that registers
askgate with it (issue 20, class 8).

Real Claude Code (both pinned versions) with `--permission-mode bypassPermissions` and real
Codex with approvals `never`, offline against a fake model that runs one shell command:
rewrite the hook registration and leave a marker. The most permissive policy there is
(`default = "allow"`, every command, every write) loads; the built-in deny floor on
registration files still refuses the call. The harm asserted: the registration file is
byte for byte unchanged and the command never ran (no marker).

Both run through the shared driver (tests/agent_e2e.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_e2e import (
    CLAUDE_CODE_NEW,
    CLAUDE_CODE_OLD,
    CODEX,
    MARKER,
    ClaudeCode,
    registration,
    run_agent,
)

PERMISSIVE = """
default = "allow"
yolo = true
[bash]
"*" = "allow"
[write]
"/**" = "allow"
"""


@pytest.mark.parametrize("claude", [CLAUDE_CODE_OLD, CLAUDE_CODE_NEW], ids=lambda c: c.version)
def test_claude_code_in_bypass_permissions_cannot_unhook_askgate(
    tmp_path: Path, claude: ClaudeCode
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(PERMISSIVE)
    registration_file = tmp_path / "home" / ".claude" / "settings.json"  # $CLAUDE_CONFIG_DIR/
    registration_file.parent.mkdir(parents=True)
    registration_file.write_text(
        json.dumps(registration(claude.hook_command(policy), "PreToolUse"))
    )
    before = registration_file.read_bytes()
    command = f"echo '{{\"disableAllHooks\": true}}' > {registration_file}; touch {MARKER}"
    run = run_agent(
        claude,
        command,
        None,
        tmp_path=tmp_path,
        settings=registration_file,
        cli_args=("--permission-mode", "bypassPermissions"),
        env={
            "IS_SANDBOX": "1"
        },  # bypassPermissions refuses root otherwise (the suite runs as root)
        check=False,
    )
    assert run.transcript, "the model's command never reached the hook"
    assert registration_file.read_bytes() == before, "the agent rewrote its hook registration"
    assert not run.ran, "the command ran"
    assert run.audit and run.audit[-1]["action"] == "deny", run.audit


def test_codex_with_approvals_never_cannot_unhook_askgate(tmp_path: Path) -> None:
    hooks = tmp_path / "home" / ".codex" / "hooks.json"
    command = f"echo '{{}}' > {hooks}; touch {MARKER}"
    # The driver installs the hooks (askgate install codex) before Codex starts; the
    # model's command then tries to overwrite them. Approvals "never": an ask would run.
    run = run_agent(CODEX, command, PERMISSIVE, tmp_path=tmp_path)
    assert hooks.is_file()
    assert "askgate" in hooks.read_text(), "the agent rewrote its hook registration"
    assert not run.ran, run.stderr[-2000:]
    assert run.audit and run.audit[-1]["action"] == "deny", run.audit
