"""Subagent detection, parent resolution and file-based permission forwarding.

A headless child (a subagent started as its own process) forwards its asks to the
parent session through files laid out exactly as pi's permission system does
(see docs/forwarding.md); the parent serves them through its prompter.
"""

from __future__ import annotations

from typing import Any

from askgate.forwarding.env import (
    SUBAGENT_ENV_HINT_KEYS,
    SUBAGENT_PARENT_SESSION_ENV_CANDIDATES,
    ForwardingTarget,
    default_forwarding_root,
    is_subagent,
    normalize_session_id,
    resolve_forwarding,
    resolve_forwarding_target,
)

__all__ = [
    "SUBAGENT_ENV_HINT_KEYS",
    "SUBAGENT_PARENT_SESSION_ENV_CANDIDATES",
    "ForwardingError",
    "ForwardingPrompter",
    "ForwardingServer",
    "ForwardingTarget",
    "default_forwarding_root",
    "is_subagent",
    "normalize_session_id",
    "resolve_forwarding",
    "resolve_forwarding_target",
]

_LAZY = {
    "ForwardingServer": "askgate.forwarding.server",
    "ForwardingError": "askgate.forwarding.server",
    "ForwardingPrompter": "askgate.forwarding.client",
}


def __getattr__(name: str) -> Any:
    # The I/O shells load on first use; detection alone stays cheap to import.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "SUBAGENT_PARENT_SESSION_ENV_KEY":  # deprecated alias, warns
        from askgate.forwarding import env

        return env.__getattr__(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
