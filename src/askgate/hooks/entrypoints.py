"""`askgate hook AGENT …` for each agent: the hook runner with the agent's name.

What `askgate.hooks.HOOKS` routes to. Imports only the runner (lean: the relay path)."""

from __future__ import annotations

from askgate.hooks.runner import main

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def claude_code(argv: Sequence[str]) -> int:
    return main("claude-code", argv)


def codex(argv: Sequence[str]) -> int:
    return main("codex", argv)


def gemini(argv: Sequence[str]) -> int:
    return main("gemini", argv)
