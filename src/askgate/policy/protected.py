"""askgate's own configuration and state, which no agent may write.

An agent allowed to write under `~` could otherwise grant itself permissions (edit
the user policy, the trust store), answer its own forwarded asks (write a response
file), or rewrite the review log. These deny rules rank above every scope, managed
included, so nothing in a policy file can lift them; a human edits these files
outside the agent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from askgate.policy.model import Action, Origin, Rule, Surface

PROTECTED_RANK = 1_000_000
REASON = "askgate protects its own configuration and state from agents; edit it yourself"


def protected_paths(env: Mapping[str, str], project_root: str) -> list[str]:
    """Path globs (absolute) that agents may never write."""
    from askgate.audit import default_log_path
    from askgate.daemon.paths import runtime_dir, secret_path
    from askgate.forwarding.env import default_forwarding_root
    from askgate.policy.config import config_home, managed_policy_path
    from askgate.policy.trust import trust_store_path

    found = [
        os.path.join(config_home(env), "askgate") + "/**",
        os.path.dirname(trust_store_path(env)) + "/**",
        str(default_forwarding_root(env)) + "/**",
        managed_policy_path(env),
        default_log_path(env),
        os.path.join(project_root, ".askgate") + "/**",
        runtime_dir(env) + "/**",  # the daemon's socket: a fake daemon there answers hooks
        secret_path(env),
    ]
    return [p for p in dict.fromkeys(found) if p.startswith("/")]


def protected_rules(env: Mapping[str, str], project_root: str) -> list[Rule]:
    return [
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
