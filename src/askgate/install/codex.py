"""`askgate install codex [--user | --project [DIR]] [--uninstall] [--dry-run]`.

Writes askgate's PreToolUse and PermissionRequest command hooks into Codex's ``hooks.json``
(``$CODEX_HOME/hooks.json``, default ``~/.codex/hooks.json``, or ``DIR/.codex/hooks.json``),
which Codex reads next to each config layer. Codex runs a new or changed hook only after the
user trusts it in ``/hooks`` (the trust is kept per command hash).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from askgate.install.hook_files import Group, Target, run

HOOK_TIMEOUT_SECONDS = 600  # Codex's unit is seconds; askgate's own asks end before it


def codex_home(env: Mapping[str, str]) -> Path:
    if env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"])
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".codex"


def groups(command: str) -> dict[str, Group]:
    handler = {
        "type": "command",
        "command": command,
        "timeout": HOOK_TIMEOUT_SECONDS,
        "statusMessage": "askgate",
    }
    return {
        "PreToolUse": {"hooks": [handler]},
        "PermissionRequest": {"hooks": [dict(handler)]},
    }


def notes(project: bool) -> list[str]:
    lines = [
        "Codex runs a new or changed hook only after you trust it: start codex, open /hooks",
        "and trust the askgate entries (needed again whenever the hook command changes).",
        "Asks reach a human through PermissionRequest, so keep an approval_policy that",
        'prompts (approval_policy = "on-request"); with "never" Codex asks nobody.',
    ]
    if project:
        lines.append("Project hooks load only when Codex trusts the project itself.")
    return lines


TARGET = Target(
    agent="codex",
    display="Codex",
    user_file=lambda env: codex_home(env) / "hooks.json",
    project_file=lambda root: root / ".codex" / "hooks.json",
    groups=groups,
    notes=notes,
)


def main(argv: Sequence[str]) -> int:
    return run(TARGET, argv)
