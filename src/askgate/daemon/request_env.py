"""Which environment variables of a relay request the daemon looks at: the one list.

The daemon decides with **its own** environment, fixed when it started: every path it
writes (the review log, the sandbox's state and placeholder registry, its run files) and
every path it reads a floor from (the managed policy, the user policy, the trust store) is
computed from it, never from a request. A request may only carry:

* `DECISION_INPUTS`: names whose request value is used as a decision input (none today:
  nothing askgate decides from varies per agent process without also naming a path);
* the `pinned` names (`is_pinned`): sent so the daemon can check they equal its own. A
  request whose pinned value differs (`ASKGATE_AUDIT_LOG=~/.bashrc`, another
  `XDG_CONFIG_HOME`, a missing `ASKGATE_MANAGED_POLICY`) is refused without an answer, and
  the hook decides in its own process with its own environment, as without a daemon.

Everything else in a request is dropped unread. Imports nothing: the relay loads it on
every tool call.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

# Names taken from the request and used to decide (their value may differ per call).
DECISION_INPUTS: tuple[str, ...] = ()

# Names that locate policy, state or agent registration files, or configure the
# approval server: the daemon's own value is the only one used.
PINNED_PREFIXES = ("ASKGATE_",)
PINNED_NAMES = frozenset(
    {
        "HOME",
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "TMPDIR",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "GEMINI_CLI_HOME",
        "PI_CODING_AGENT_DIR",
        "PI_PERMISSION_SYSTEM_CONFIG_PATH",
    }
)
# Under the pinned prefix but about the relay or the socket itself, not the decision: the
# relay found this daemon's socket through them, or they tune the hook process only.
NOT_PINNED = frozenset(
    {
        "ASKGATE_RUNTIME_DIR",
        "ASKGATE_RELAY_TIMEOUT",
        "ASKGATE_DAEMON",
        "ASKGATE_DAEMON_PORT",
        "ASKGATE_DEBUG",
    }
)


def is_pinned(name: str) -> bool:
    if name in NOT_PINNED:
        return False
    return name in PINNED_NAMES or name.startswith(PINNED_PREFIXES)


def to_send(env: Mapping[str, str]) -> dict[str, str]:
    """What the relay sends of the hook's environment."""
    return {k: v for k, v in env.items() if k in DECISION_INPUTS or is_pinned(k)}


def mismatch(request: Mapping[str, str], own: Mapping[str, str]) -> str | None:
    """The first pinned name whose request value differs from the daemon's (a name set on
    one side only differs too), else None."""
    for name in sorted({*request, *own}):
        if is_pinned(name) and request.get(name) != own.get(name):
            return name
    return None


def decision_env(request: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The environment a relayed call is decided with: the daemon's own, plus the
    request's `DECISION_INPUTS`."""
    env = dict(own)
    for name in DECISION_INPUTS:
        if name in request:
            env[name] = request[name]
    return env
