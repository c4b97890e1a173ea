"""`askgate install AGENT …`: register askgate's hook with an agent (one module per agent)."""

from __future__ import annotations

import importlib
import sys

# agent -> module with `main(argv) -> int` (argv: the arguments after the agent name)
AGENTS: dict[str, str] = {
    "claude-code": "askgate.install.claude_code",
    "codex": "askgate.install.codex",
    "gemini": "askgate.install.gemini",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in AGENTS:
        print(f"askgate: error: usage: askgate install {' | '.join(AGENTS)} …", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(AGENTS[argv[0]])
    except ModuleNotFoundError:
        print(f"askgate: error: install {argv[0]} is not available in this build", file=sys.stderr)
        return 2
    result: int = module.main(argv[1:])
    return result
