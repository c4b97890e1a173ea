"""Where the policy files askgate ships live (`policy/builtin/`), and their names.

A leaf: the parser (`policy_file.py`) checks profile names against this catalog, and
`policy.builtin` loads the files through that parser, so the catalog cannot live there.
"""

from __future__ import annotations

import functools
import os

BUILTIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "builtin")
PROFILES_DIR = os.path.join(BUILTIN_DIR, "profiles")
RULES_DIR = os.path.join(BUILTIN_DIR, "rules")


def describe_source(source: str, line: int | None) -> str:
    """Where a rule was written: `path:line`, or `profile NAME line N` / `built-in FILE line N`
    for the TOML files shipped inside the package (their install path says nothing)."""
    at = f" line {line}" if line is not None else ""
    directory, name = os.path.split(source)
    if directory == PROFILES_DIR:
        return f"profile {name.removesuffix('.toml')}{at}"
    if directory == RULES_DIR:
        return f"built-in {name}{at}"
    return f"{source}:{line}" if line is not None else source


def _toml_stems(directory: str) -> tuple[str, ...]:
    try:
        names = os.listdir(directory)
    except OSError:
        return ()
    return tuple(sorted(name[:-5] for name in names if name.endswith(".toml")))


@functools.cache
def profile_names() -> tuple[str, ...]:
    """The names of the shipped profiles, sorted."""
    return _toml_stems(PROFILES_DIR)


def profile_path(name: str) -> str:
    if name not in profile_names():
        raise ValueError(f"unknown profile {name!r}")
    return os.path.join(PROFILES_DIR, name + ".toml")


def builtin_rule_paths() -> tuple[str, ...]:
    return tuple(os.path.join(RULES_DIR, stem + ".toml") for stem in _toml_stems(RULES_DIR))
