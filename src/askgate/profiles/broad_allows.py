"""`askgate config validate` warnings: a policy that allows broadly without the sandbox.

`default = "allow"`, a bash `"*" = "allow"`, an interpreter or shell with `*` (`"python *"`),
or the sandboxed-project profile let a started program do whatever the user can — read
the secrets the policy denies, write where it denies — because askgate decides what a
command names, not what the program then opens (docs/policy.md, "Known limits"). With
`[sandbox] bash = "required"` the kernel holds those denies; without it they are advice.
Each warning names the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from askgate.policy.config import LoadedPolicy
from askgate.policy.model import Action, Surface
from askgate.policy.shipped import PROFILES_DIR

# Programs that run whatever code they are given: `NAME *` allowed is "run anything".
INTERPRETERS: tuple[str, ...] = (
    "bash",
    "sh",
    "zsh",
    "dash",
    "fish",
    "python",
    "python3",
    "node",
    "deno",
    "bun",
    "ruby",
    "perl",
    "php",
    "lua",
    "Rscript",
    "osascript",
    "pwsh",
    "npx",
    "uv run",
    "poetry run",
    "make",
)
SANDBOXED_PROFILES = ("sandboxed-project", "sandboxed-fetch")
# Profiles whose allows lean on the `[net]` host list holding inside the sandbox too.
HOST_LIST_PROFILES = ("sandboxed-fetch",)
WHY_HOST_LIST = (
    'without [sandbox] network = "policy": what it starts reaches hosts the list does not name'
)
_BROAD_BASH = re.compile(
    r"^\s*(?:\*|(?:\S*/)?(?:" + "|".join(re.escape(name) for name in INTERPRETERS) + r")\s+\*)\s*$"
)
_DEFAULT_LINE = re.compile(r'^\s*default\s*=\s*["\']allow["\']')
WHY = 'without [sandbox] bash = "required": what it starts can do what the denies forbid'


def _line_of(path: str, pattern: re.Pattern[str]) -> int | None:
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if pattern.match(line):
                    return number
    except (OSError, UnicodeDecodeError):
        return None
    return None


def is_broad_bash(pattern: str) -> bool:
    return _BROAD_BASH.match(pattern) is not None


def broad_allow_warnings(loaded: LoadedPolicy) -> list[str]:
    """`file:line: what: why` for each broad allow, empty when the sandbox is required
    (with `network = "policy"` where a profile leans on the host list)."""
    warnings = _host_list_warnings(loaded)
    if loaded.sandbox.bash == "required":
        return warnings
    for file in loaded.files:
        if not file.trusted:
            continue
        if file.default is Action.ALLOW:
            line = _line_of(file.path, _DEFAULT_LINE)
            warnings.append(f'{file.path}:{line or "?"}: default = "allow" {WHY}')
        for name in file.profiles:
            if name in SANDBOXED_PROFILES:
                at = f"{file.path}:{file.profiles_line or '?'}"
                warnings.append(f"{at}: profiles: {name!r} {WHY}")
    warnings += _broad_rules(loaded.rules)
    return warnings


def _host_list_warnings(loaded: LoadedPolicy) -> list[str]:
    if loaded.sandbox.bash == "required" and loaded.sandbox.network == "policy":
        return []
    return [
        f"{file.path}:{file.profiles_line or '?'}: profiles: {name!r} {WHY_HOST_LIST}"
        for file in loaded.files
        if file.trusted
        for name in file.profiles
        if name in HOST_LIST_PROFILES
    ]


def _broad_rules(rules: Iterable[object]) -> list[str]:
    out: list[str] = []
    for rule in rules:
        surface = getattr(rule, "surface", None)
        if surface is not Surface.BASH or getattr(rule, "action", None) is not Action.ALLOW:
            continue
        source = str(getattr(rule, "source", ""))
        if not source or source.startswith(PROFILES_DIR):
            continue  # profiles are named once, at the line that selects them
        pattern = str(getattr(rule, "pattern", ""))
        if is_broad_bash(pattern):
            line = getattr(rule, "line", None)
            out.append(f'{source}:{line or "?"}: bash."{pattern}" = "allow" {WHY}')
    return out
