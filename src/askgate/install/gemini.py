"""`askgate install gemini [--user | --project [DIR]] [--uninstall] [--dry-run]`.

Adds askgate's BeforeTool command hook to Gemini CLI's ``settings.json``
(``~/.gemini/settings.json``, or ``DIR/.gemini/settings.json``), keeping every other
setting. Gemini's hook timeout is in milliseconds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from askgate.install.hook_files import Group, Target, run

HOOK_TIMEOUT_MS = 600_000  # milliseconds; askgate's own asks end (in deny) before it


def groups(command: str) -> dict[str, Group]:
    handler = {
        "name": "askgate",
        "type": "command",
        "command": command,
        "timeout": HOOK_TIMEOUT_MS,
        "description": "askgate: allow / deny / ask for every tool call",
    }
    return {"BeforeTool": {"matcher": "*", "hooks": [handler]}}


def notes(project: bool) -> list[str]:
    lines = [
        "Gemini runs askgate before every tool call. A hook cannot approve a call Gemini's",
        "own policy asks about, and Gemini lets a call run if the hook times out.",
    ]
    if project:
        lines.append("Gemini asks you to trust a new or changed project hook before it runs.")
    return lines


TARGET = Target(
    agent="gemini",
    display="Gemini CLI",
    user_file=lambda env: (
        Path(env.get("HOME") or os.path.expanduser("~")) / ".gemini" / "settings.json"
    ),
    project_file=lambda root: root / ".gemini" / "settings.json",
    groups=groups,
    notes=notes,
)


def main(argv: Sequence[str]) -> int:
    return run(TARGET, argv)
