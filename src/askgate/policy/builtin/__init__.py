"""Rules askgate ships as data: profiles a policy file can select, and built-in rules.

Both are ordinary policy files inside the package, parsed by the same strict parser as a
user's file (so their examples are checked too), and reviewable by anyone:

- `profiles/NAME.toml`: selected with `profiles = ["NAME", …]` in a policy file; their
  rules load just below the selecting file's own rules (config.py gives the rank).
- `rules/*.toml`: built-in deny and ask rules that rank above every scope, managed
  included, and override nothing (a floor). Paths that depend on the environment
  (askgate's own state under XDG directories, the files that register askgate with an
  agent, whose directories come from CODEX_HOME or PI_CODING_AGENT_DIR) are computed in
  `protected.py`; what can be written as a fixed pattern lives here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import msgspec

from askgate.policy.model import Action, Origin
from askgate.policy.policy_file import PolicyFile, parse_policy_bytes
from askgate.policy.shipped import (
    PROFILES_DIR,
    RULES_DIR,
    builtin_rule_paths,
    describe_source,
    profile_names,
    profile_path,
)

__all__ = [
    "BUILTIN_RANK",
    "PROFILES_DIR",
    "RULES_DIR",
    "builtin_rule_paths",
    "describe_source",
    "load_builtin_rules",
    "load_profile",
    "profile_names",
    "profile_path",
]

BUILTIN_RANK = 1_000_000  # the same rank as protected.py's denies: above managed


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def load_profile(
    name: str,
    *,
    origin: Origin,
    rank: int,
    base_dir: str,
    env: Mapping[str, str] | None,
) -> PolicyFile:
    """One profile as rules of `origin` at `rank` (the selecting file's scope, just below
    its own rules). Raises ConfigError (naming the profile's file and line) or OSError."""
    path = profile_path(name)
    return parse_policy_bytes(
        _read(path),
        path=path,
        origin=origin,
        rank_base=rank,
        agent_rank=rank,
        trusted=True,
        base_dir=base_dir,
        env=env,
    )


# (project root, home) -> the parsed rule files. The files ship inside the package and do
# not change while a process runs (an upgrade changes the daemon's installation identity,
# and it exits), so a resident daemon parses them once per project instead of per request.
_LOADED: dict[tuple[str, str | None], list[PolicyFile]] = {}
_LOADED_LIMIT = 256


def load_builtin_rules(*, base_dir: str, env: Mapping[str, str] | None) -> list[PolicyFile]:
    """Every `rules/*.toml`, as built-in rules above managed. A broken built-in file is a
    packaging error: it raises, and the caller fails closed."""
    key = (base_dir, (os.environ if env is None else env).get("HOME"))
    cached = _LOADED.get(key)
    if cached is None:
        cached = _parse_builtin_rules(base_dir, env)
        if len(_LOADED) >= _LOADED_LIMIT:
            _LOADED.clear()
        _LOADED[key] = cached
    return list(cached)


def _parse_builtin_rules(base_dir: str, env: Mapping[str, str] | None) -> list[PolicyFile]:
    files = []
    for path in builtin_rule_paths():
        parsed = parse_policy_bytes(
            _read(path),
            path=path,
            origin=Origin.BUILTIN,
            rank_base=BUILTIN_RANK,
            agent_rank=BUILTIN_RANK,
            trusted=True,
            base_dir=base_dir,
            env=env,
        )
        if any(rule.action is Action.ALLOW for rule in parsed.rules):
            raise ValueError(f"{path}: a built-in rule file may only deny or ask")
        # Built-in rules add strictness and lift nothing: at the top rank, a built-in ask
        # would otherwise override a user's own deny of a path inside it. Untrusted rules
        # override nothing (rules.py), which is exactly the floor they are meant to be.
        rules = tuple(msgspec.structs.replace(rule, trusted=False) for rule in parsed.rules)
        files.append(msgspec.structs.replace(parsed, rules=rules))
    return files
