"""The hook adapters by name: `askgate hook NAME`, the relay's `agent=NAME`, the daemon's
lookup. Imported explicitly (not by import strings), so the import contracts see them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from askgate.hookrt.contract import Adapter

NAMES = ("claude-code", "codex", "gemini")
# Adapters that also answer over the daemon's loopback HTTP (`POST /hook/NAME`).
HTTP_NAMES = ("claude-code",)


class UnknownAdapter(KeyError):
    """No adapter of that name."""


def adapter(name: str) -> Adapter:
    if name == "claude-code":
        from askgate.adapters.claude_code import ADAPTER as claude_code

        return claude_code
    if name == "codex":
        from askgate.adapters.codex import ADAPTER as codex

        return codex
    if name == "gemini":
        from askgate.adapters.gemini import ADAPTER as gemini

        return gemini
    raise UnknownAdapter(name)
