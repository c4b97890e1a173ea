"""`askgate install AGENT …`: register askgate's hook with an agent (one module per agent)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

# agent -> module with `main(argv) -> int` (argv: the arguments after the agent name); the
# import itself is explicit, in `_installer`, so the import contracts see every arrow.
AGENTS: dict[str, str] = {
    "claude-code": "askgate.install.claude_code",
    "codex": "askgate.install.codex",
    "gemini": "askgate.install.gemini",
}


def _installer(agent: str) -> Callable[[Sequence[str]], int]:
    if agent == "claude-code":
        from askgate.install.claude_code import main as claude_code

        return claude_code
    if agent == "codex":
        from askgate.install.codex import main as codex

        return codex
    if agent == "gemini":
        from askgate.install.gemini import main as gemini

        return gemini
    raise KeyError(agent)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in AGENTS:
        print(f"askgate: error: usage: askgate install {' | '.join(AGENTS)} …", file=sys.stderr)
        return 2
    try:
        installer = _installer(argv[0])
    except ModuleNotFoundError:
        print(f"askgate: error: install {argv[0]} is not available in this build", file=sys.stderr)
        return 2
    return installer(argv[1:])
