"""Which environment variables pass into the sandbox.

Two lists, both names only (never values: the prepared wrapper is handed back to the
agent and logged, so no value may appear in it):

* `plan.unset_env`: the agent-socket variables, dropped when the plan hides secrets;
* `plan.environment`: `[sandbox] environment`, an allow-list (`NAME` or `PREFIX*`); when
  set, every other variable is dropped. Entries are validated as names at load
  (`sandbox_table.ENVIRONMENT_ENTRY`), so they are safe as bash `case` patterns.

The CLI filters the mapping it starts bubblewrap (or the Landlock child) with; the
prepared wrapper unsets the others with bash builtins in the subshell that execs bwrap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from askgate.sandbox.plan import SandboxPlan


def allowed(name: str, patterns: Sequence[str]) -> bool:
    return any(
        name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern
        for pattern in patterns
    )


def inside_env(plan: SandboxPlan, env: Mapping[str, str]) -> dict[str, str]:
    """The variables the command gets."""
    kept = {k: v for k, v in env.items() if k not in plan.unset_env}
    if plan.environment is not None:
        kept = {k: v for k, v in kept.items() if allowed(k, plan.environment)}
    return kept


def shell_filter(plan: SandboxPlan) -> str | None:
    """Bash (builtins only) that unsets every variable the allow-list does not name, or
    None without an allow-list."""
    if plan.environment is None:
        return None
    patterns = "|".join(plan.environment) or "''"
    return f'for v in $(compgen -e); do case $v in {patterns}) ;; *) unset "$v" ;; esac; done'
