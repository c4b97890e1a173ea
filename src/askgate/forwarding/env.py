"""Am I a subagent, and which session should my asks go to? (seed 001)

Pure functions over an environment mapping; the only side effect is one structured
log entry when a subagent cannot find its parent.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

logger = logging.getLogger("askgate.forwarding")

# Any non-blank one of these marks the process as a subagent (a child with no UI).
SUBAGENT_ENV_HINT_KEYS: tuple[str, ...] = (
    # pi-agent-router (the original convention)
    "PI_IS_SUBAGENT",
    "PI_SUBAGENT_SESSION_ID",
    "PI_AGENT_ROUTER_SUBAGENT",
    # nicobailon/pi-subagents
    "PI_SUBAGENT_CHILD",
    "PI_SUBAGENT_RUN_ID",
    "PI_SUBAGENT_CHILD_AGENT",
    "PI_SUBAGENT_DEPTH",
    # HazAT/pi-interactive-subagents
    "PI_SUBAGENT_NAME",
    "PI_SUBAGENT_ID",
    "PI_SUBAGENT_SESSION",  # the child's own session file: a hint, never a parent id
    "PI_SUBAGENT_ACTIVITY_FILE",
)

# Where a child finds its parent's session id, tried in order.
SUBAGENT_PARENT_SESSION_ENV_CANDIDATES: tuple[str, ...] = (
    "PI_AGENT_ROUTER_PARENT_SESSION_ID",  # pi-agent-router
    "PI_SUBAGENT_PARENT_SESSION",  # nicobailon/pi-subagents >= 0.31
)

_DEPRECATED = {"SUBAGENT_PARENT_SESSION_ENV_KEY": SUBAGENT_PARENT_SESSION_ENV_CANDIDATES[0]}

FORWARDING_DIR_ENV = "ASKGATE_FORWARDING_DIR"
PI_AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"


def __getattr__(name: str) -> Any:
    # SUBAGENT_PARENT_SESSION_ENV_KEY: the single-key name of older releases.
    if name in _DEPRECATED:
        warnings.warn(
            f"{name} is deprecated; use SUBAGENT_PARENT_SESSION_ENV_CANDIDATES",
            DeprecationWarning,
            stacklevel=2,
        )
        return _DEPRECATED[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def normalize_session_id(value: object) -> str | None:
    """A usable session id, or None for missing, blank and pi's placeholder "unknown" in
    any case (`Unknown`, `UNKNOWN`: the real extension compares case-insensitively; a
    placeholder taken for a session would send the ask to nobody and wait out the budget)."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or value.casefold() == "unknown":
        return None
    return value


def pi_agent_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$PI_CODING_AGENT_DIR` (absolute), else `~/.pi/agent` (askgate.locations)."""
    from askgate import locations

    return Path(locations.pi_agent_dir(env))


def default_forwarding_root(env: Mapping[str, str] | None = None) -> Path:
    """`$ASKGATE_FORWARDING_DIR`, else pi's own location, so a Python parent and a pi
    child (or the other way round) meet in the same directory."""
    from askgate import locations

    return Path(locations.forwarding_root(env))


def subagent_hints(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The hint keys set (non-blank) in `env`."""
    environ = _environ(env)
    return tuple(key for key in SUBAGENT_ENV_HINT_KEYS if environ.get(key, "").strip())


def is_subagent(
    env: Mapping[str, str] | None = None,
    session_dir: str | os.PathLike[str] | None = None,
    *,
    subagent_sessions_dir: str | os.PathLike[str] | None = None,
) -> bool:
    """True when a hint key is set, or when the session directory lies under the agent
    dir's `subagent-sessions/` (pi's layout-dependent fallback)."""
    if subagent_hints(env):
        return True
    if session_dir is None:
        return False
    base = (
        Path(subagent_sessions_dir)
        if subagent_sessions_dir is not None
        else pi_agent_dir(env) / "subagent-sessions"
    )
    try:
        resolved_dir = Path(session_dir).expanduser().resolve()
        resolved_base = base.expanduser().resolve()
    except (OSError, RuntimeError):
        return False
    return resolved_dir != resolved_base and resolved_dir.is_relative_to(resolved_base)


class ForwardingTarget(msgspec.Struct, frozen=True, kw_only=True):
    """Where a process's asks go, and why."""

    target: str | None  # session id to forward to (or to serve, with a UI); None = nowhere
    variable: str | None = None  # the env variable that named the target
    checked: tuple[str, ...] = ()  # variables looked at, in order
    skipped_self: tuple[str, ...] = ()  # variables that named this very session
    reason: str | None = None  # why there is no target


def resolve_forwarding(
    *,
    has_ui: bool,
    is_subagent: bool,
    current_session_id: str | None,
    env: Mapping[str, str] | None = None,
) -> ForwardingTarget:
    """Resolve the forwarding target with the evidence behind it.

    With a UI the process answers its own asks (and serves its own session). A subagent
    takes the first candidate variable holding a session id *other than its own*: a
    root process may carry a parent-session variable naming itself (nicobailon sets it
    in the root and children inherit it; pi's #722), which is no proof of being a child.
    """
    current = normalize_session_id(current_session_id)
    if has_ui:
        return ForwardingTarget(target=current, reason=None if current else "no session id")
    if not is_subagent:
        return ForwardingTarget(target=None, reason="not a subagent and no UI")
    environ = _environ(env)
    skipped: list[str] = []
    for key in SUBAGENT_PARENT_SESSION_ENV_CANDIDATES:
        candidate = normalize_session_id(environ.get(key))
        if candidate is None:
            continue
        if candidate == current:
            skipped.append(key)
            continue
        return ForwardingTarget(
            target=candidate,
            variable=key,
            checked=SUBAGENT_PARENT_SESSION_ENV_CANDIDATES,
            skipped_self=tuple(skipped),
        )
    return ForwardingTarget(
        target=None,
        checked=SUBAGENT_PARENT_SESSION_ENV_CANDIDATES,
        skipped_self=tuple(skipped),
        reason="no parent session variable names another session",
    )


# Which subagent tools set which parent-session variable (seed 001's inventory, updated:
# nicobailon/pi-subagents sets PI_SUBAGENT_PARENT_SESSION since 0.31).
PARENT_SESSION_SETTERS: dict[str, str] = {
    "PI_AGENT_ROUTER_PARENT_SESSION_ID": "pi-agent-router",
    "PI_SUBAGENT_PARENT_SESSION": "nicobailon/pi-subagents (0.31 or later)",
}
# Subagent tools known to set none of them.
SETS_NO_PARENT_SESSION: tuple[str, ...] = ("HazAT/pi-interactive-subagents",)


def unresolved_message(resolution: ForwardingTarget) -> str:
    """Why a subagent has nobody to forward to, and what the user can do about it."""
    checked = resolution.checked or SUBAGENT_PARENT_SESSION_ENV_CANDIDATES
    message = (
        "permission forwarding: this subagent's parent session could not be resolved;"
        f" checked env vars: {', '.join(checked)}"
    )
    if resolution.skipped_self:
        message += f" ({', '.join(resolution.skipped_self)} named this session itself)"
    setters = "; ".join(f"{tool} sets {key}" for key, tool in PARENT_SESSION_SETTERS.items())
    return (
        f"{message}. To forward asks, the tool that starts the subagent must set one of them"
        f" to the parent's session id ({setters}; {', '.join(SETS_NO_PARENT_SESSION)} sets"
        " none: ask its maintainer to set PI_SUBAGENT_PARENT_SESSION). In-process subagents"
        " ask their parent over the event bus instead (BusPrompter). Until then the ask"
        " resolves as unavailable."
    )


def log_unresolved(resolution: ForwardingTarget, *, current_session_id: str | None) -> None:
    """The one structured log entry for a subagent with no resolvable parent."""
    logger.warning(
        unresolved_message(resolution),
        extra={
            "event": "forwarding.target_unresolved",
            "checked": list(resolution.checked or SUBAGENT_PARENT_SESSION_ENV_CANDIDATES),
            "skipped_self": list(resolution.skipped_self),
            "session": current_session_id,
        },
    )


def resolve_forwarding_target(
    has_ui: bool,
    is_subagent: bool,
    current_session_id: str | None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """The session id asks go to, or None. Logs once when a subagent has no parent."""
    resolution = resolve_forwarding(
        has_ui=has_ui, is_subagent=is_subagent, current_session_id=current_session_id, env=env
    )
    if resolution.target is None and is_subagent and not has_ui:
        log_unresolved(resolution, current_session_id=current_session_id)
    return resolution.target
