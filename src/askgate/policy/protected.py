"""Built-in protections: rules that rank above every scope, managed included.

1. askgate's own configuration and state, which no agent may write (deny). An agent
   allowed to write under `~` could otherwise grant itself permissions (edit the user
   policy, the trust store), answer its own forwarded asks (write a response file), or
   rewrite the review log. Where these live is askgate.locations' business.
2. The files that register askgate with an agent (deny for writes). An agent that may
   write `.claude/settings.json` could quietly remove the hook that gates it. Not an ask:
   agent modes that drop asks (Claude Code's `bypassPermissions`, Codex's approvals
   `never`) would then let the agent unhook its own gate.

Nothing in a policy file can lift either: a rule is only ever overridden by a narrower
one from the same or a higher scope, and nothing ranks above these; a user's own deny
only adds to them. A human edits these files by hand, outside the agent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from askgate import locations
from askgate.policy.model import Action, Origin, Rule, Surface

PROTECTED_RANK = 1_000_000
REASON = "askgate protects its own configuration and state from agents; edit it yourself"
REGISTRATION_REASON = (
    "this file registers askgate (or another permission gate) with an agent: "
    "no agent may write it; edit it yourself"
)

# --- askgate's state: deny -----------------------------------------------------------------


def protected_paths(env: Mapping[str, str], project_root: str) -> list[str]:
    """Path globs (absolute) that agents may never write."""
    found = [*locations.state_paths(env), os.path.join(project_root, ".askgate") + "/**"]
    return [p for p in dict.fromkeys(found) if p.startswith("/")]


# --- askgate's secrets: deny for reads ------------------------------------------------------
SECRET_REASON = (
    "askgate's own secrets (daemon credentials, approval server keys) are not for agents"
)


def secret_paths(env: Mapping[str, str]) -> list[str]:
    """Path globs (absolute) that agents may never read: askgate's whole state directory
    (the daemon's secret and control token — the token stops the daemon —, the review
    log, the daemon's state), the daemon's socket directory, the approval server's keys
    and database, and the sandbox's run records and plans. The same control plane the
    sandbox hides in every plan (sandbox/plan.py), so the policy and the kernel agree."""
    found: list[str] = []
    try:
        state = locations.state_dir(env)
        found += [os.path.join(state, "daemon.secret"), os.path.join(state, "daemon.control")]
        found.append(state.rstrip("/") + "/**")
        found.append(locations.server_data_dir(env) + "/**")
        found.append(os.path.join(locations.trust_store_dir(env), "sandbox") + "/**")
        found.append(locations.daemon_socket_dir(env).rstrip("/") + "/**")
    except ValueError:
        return []
    return [p for p in dict.fromkeys(found) if p.startswith("/") and p != "/**"]


# --- files that register askgate with an agent: deny for writes ----------------------------
# One data list. `~` is the home directory; `{pi}` is pi's agent directory
# ($PI_CODING_AGENT_DIR or ~/.pi/agent); `{codex}` is $CODEX_HOME and `{claude}` is
# $CLAUDE_CONFIG_DIR, each when set to an absolute path (else the entry is left out);
# a pattern starting with `**/` matches in any directory (the project's own copies, and
# those of any directory an agent may be started in).
REGISTRATION_FILES: tuple[str, ...] = (
    # Claude Code: hooks live in settings files (user, project, project-local).
    "~/.claude/settings.json",
    "~/.claude/settings.local.json",
    "**/.claude/settings.json",
    "**/.claude/settings.local.json",
    "{claude}/settings.json",
    "{claude}/settings.local.json",
    # Codex CLI: the user config and hooks file, and a project's whole .codex/.
    "~/.codex/config.toml",
    "~/.codex/hooks.json",
    "{codex}/config.toml",
    "{codex}/hooks.json",
    "**/.codex/**",
    # Gemini CLI: user settings and a project's whole .gemini/.
    "~/.gemini/settings.json",
    "**/.gemini/**",
    # pi: settings (extension and package lists), extensions and their config
    # (pi-permission-system's config.json), user and project.
    "{pi}/settings.json",
    "{pi}/extensions/**",
    "**/.pi/settings.json",
    "**/.pi/extensions/**",
)
PI_PERMISSION_CONFIG_ENV = "PI_PERMISSION_SYSTEM_CONFIG_PATH"


def _absolute_env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "")
    return value if value.startswith("/") else None


def registration_paths(env: Mapping[str, str]) -> list[str]:
    """`REGISTRATION_FILES` with `{pi}`, `{codex}` and `{claude}` filled in (entries whose
    directory is unknown are left out), plus pi-permission-system's config override."""
    try:
        pi = locations.pi_agent_dir(env)
    except ValueError:
        pi = None
    places = {
        "{pi}": pi,
        "{codex}": _absolute_env(env, "CODEX_HOME"),
        "{claude}": _absolute_env(env, "CLAUDE_CONFIG_DIR"),
    }
    found: list[str] = []
    for pattern in REGISTRATION_FILES:
        placeholder = next((p for p in places if p in pattern), None)
        if placeholder is not None:
            place = places[placeholder]
            if place is None:
                continue
            pattern = pattern.replace(placeholder, place.rstrip("/"))
        found.append(pattern)
    override = env.get(PI_PERMISSION_CONFIG_ENV, "")
    if override.startswith("/"):
        found.append(override)
    return list(dict.fromkeys(found))


def protected_rules(env: Mapping[str, str], project_root: str) -> list[Rule]:
    state = [
        Rule(
            surface=Surface.WRITE,
            pattern=pattern,
            action=Action.DENY,
            origin=Origin.BUILTIN,
            rank=PROTECTED_RANK,
            reason=REASON,
        )
        for pattern in protected_paths(env, project_root)
    ]
    registration = [
        Rule(
            surface=Surface.WRITE,
            pattern=pattern,
            action=Action.DENY,
            origin=Origin.BUILTIN,
            rank=PROTECTED_RANK,
            reason=REGISTRATION_REASON,
            # A floor that lifts nothing: it overrides no rule of a policy file (a user's
            # own deny of the same file stays that user's rule, with its reason).
            trusted=False,
        )
        for pattern in registration_paths(env)
    ]
    secrets = [
        Rule(
            surface=Surface.READ,
            pattern=pattern,
            action=Action.DENY,
            origin=Origin.BUILTIN,
            rank=PROTECTED_RANK,
            reason=SECRET_REASON,
        )
        for pattern in secret_paths(env)
    ]
    return state + registration + secrets
