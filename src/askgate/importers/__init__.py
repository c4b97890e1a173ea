"""`askgate import AGENT …`: convert an agent's own permission settings into an askgate
policy file (one module per agent)."""

from __future__ import annotations

import importlib
import sys

# agent -> module with `main(argv) -> int` (argv: the arguments after the agent name)
AGENTS: dict[str, str] = {
    "claude-code": "askgate.importers.claude_code",
    "codex": "askgate.importers.codex_rules",
    "gemini": "askgate.importers.gemini_policy",
    "pi": "askgate.importers.pi_permissions",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in AGENTS:
        print(f"askgate: error: usage: askgate import {' | '.join(AGENTS)} …", file=sys.stderr)
        return 2
    module = importlib.import_module(AGENTS[argv[0]])
    result: int = module.main(argv[1:])
    return result
