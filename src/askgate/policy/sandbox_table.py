"""The `[sandbox]` table of a policy file (and `[agent.NAME.sandbox]`): parsing and merging.

```toml
[sandbox]
bash = "on"              # "off" | "on" | "required": run allowed shell commands in the sandbox
network = "off"          # "on" | "off" | "policy" (true = "on", false = "off"; docs/network.md)
writable = ["~/.cache/pip"]   # extra writable directories (plain paths, no globs)
hidden = ["~/.aws/**"]        # extra paths the command may not read (path globs, like [read] deny)
hard_links = "refuse"    # "warn" | "refuse": a hidden file with other hard links
environment = ["PATH", "HOME", "LANG", "LC_*"]   # only these variables pass in (NAME or PREFIX*)
```

Settings come from the highest scope that sets them (as `default` and `yolo` do); the lists
are the union of every file that loaded. An untrusted project file can only tighten: its
`bash` can raise the mode, a stricter `network` (on < policy < off), `hidden` and
`hard_links = "refuse"` apply,
and its `writable` is ignored. This module parses values and reports problems as
`(key, message)`; `policy_file` turns them into its one-line `file:line: key: message`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import msgspec

SANDBOX_KEYS: tuple[str, ...] = (
    "bash",
    "network",
    "writable",
    "hidden",
    "hard_links",
    "environment",
)
# An environment allow-list entry: a variable name, or a prefix ending in `*` (`LC_*`).
ENVIRONMENT_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")
BASH_MODES: tuple[str, ...] = ("off", "on", "required")
NETWORK_MODES: tuple[str, ...] = ("on", "off", "policy")
# Booleans users write for the network: true = on, false = off.
_NETWORK_BOOLEANS = {True: "on", False: "off"}
_NETWORK_ORDER = {"on": 0, "policy": 1, "off": 2}
HARD_LINK_MODES: tuple[str, ...] = ("warn", "refuse")
_GLOB_CHARS = frozenset("*?")


class SandboxTable(msgspec.Struct, frozen=True, kw_only=True):
    """One file's `[sandbox]` (or `[agent.NAME.sandbox]`) table; None = not set there."""

    bash: str | None = None
    network: str | None = None
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()  # path globs, already absolute (or starting with **)
    hard_links: str | None = None
    environment: tuple[str, ...] | None = None  # None: not set in this table


class SandboxSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The merged settings every sandbox plan starts from."""

    bash: str = "off"
    network: str = "on"
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    hard_links: str = "warn"
    environment: tuple[str, ...] | None = None  # None: every variable passes in


class SandboxTableError(Exception):
    """A bad `[sandbox]` value: `key` is the sub-key (or None for the table itself)."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(key, message)
        self.key = key
        self.message = message


def parse_sandbox_table(
    value: object,
    *,
    normalize_path: Callable[[str], str],
    validate_glob: Callable[[str], None],
    max_items: int,
    max_length: int,
) -> SandboxTable:
    """Validate one table strictly. `normalize_path` makes a path absolute (raises
    ValueError); `validate_glob` checks a path glob (raises ValueError)."""
    if not isinstance(value, dict):
        raise SandboxTableError(None, f"expected a table, got {type(value).__name__}")
    fields: dict[str, object] = {}
    for key, item in value.items():
        if key == "bash":
            fields[key] = _choice(key, item, BASH_MODES)
        elif key == "network":
            mode = _NETWORK_BOOLEANS.get(item) if isinstance(item, bool) else item
            fields[key] = _choice(key, mode, NETWORK_MODES)
        elif key == "hard_links":
            fields[key] = _choice(key, item, HARD_LINK_MODES)
        elif key == "environment":
            names = _strings(key, item, max_items, max_length)
            for index, name in enumerate(names, start=1):
                if not ENVIRONMENT_ENTRY.fullmatch(name):
                    raise SandboxTableError(
                        key, f"entry {index} is not a variable name (NAME or PREFIX*)"
                    )
            fields[key] = tuple(dict.fromkeys(names))
        elif key in ("writable", "hidden"):
            entries = _strings(key, item, max_items, max_length)
            out: list[str] = []
            for index, entry in enumerate(entries, start=1):
                if key == "writable" and _GLOB_CHARS & set(entry):
                    raise SandboxTableError(key, f"entry {index} is a glob; name a directory")
                if key == "hidden":
                    try:
                        validate_glob(entry)
                    except ValueError as error:
                        raise SandboxTableError(key, f"entry {index}: {error}") from None
                absolute = entry if entry.startswith("**") else None
                try:
                    absolute = absolute or normalize_path(entry)
                except ValueError as error:
                    raise SandboxTableError(key, f"entry {index}: {error}") from None
                if absolute not in out:
                    out.append(absolute)
            fields[key] = tuple(out)
        else:
            expected = ", ".join(SANDBOX_KEYS)
            raise SandboxTableError(key, f"unknown key (expected one of: {expected})")
    # `fields` holds only SANDBOX_KEYS, each value checked above for its own type.
    return SandboxTable(**fields)  # type: ignore[arg-type]


def _choice(key: str, value: object, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        shown = msgspec.json.encode(value).decode() if isinstance(value, str) else "a non-string"
        raise SandboxTableError(key, f"invalid value {shown} (expected {' or '.join(choices)})")
    return value


def _strings(key: str, value: object, max_items: int, max_length: int) -> list[str]:
    if not isinstance(value, list):
        raise SandboxTableError(key, "expected an array of paths")
    if len(value) > max_items:
        raise SandboxTableError(key, f"more than {max_items} entries")
    for index, entry in enumerate(value, start=1):
        if not isinstance(entry, str) or not entry:
            raise SandboxTableError(key, f"entry {index} must be a non-empty string")
        if len(entry) > max_length:
            raise SandboxTableError(key, f"entry {index} is longer than {max_length} characters")
        if any(ord(char) < 32 or ord(char) == 127 for char in entry):
            raise SandboxTableError(key, f"entry {index} contains a control character")
    return value


_BASH_ORDER = {mode: index for index, mode in enumerate(BASH_MODES)}


def merge_sandbox_tables(tables: Iterable[tuple[SandboxTable, bool]]) -> SandboxSettings:
    """Merge `(table, trusted)` pairs given lowest rank first.

    A trusted table's settings replace lower ones; an untrusted table only tightens.
    """
    bash, network, hard_links = "off", "on", "warn"
    writable: list[str] = []
    hidden: list[str] = []
    # The allow-list from the highest trusted scope that sets one (a list only a trusted
    # file may loosen; an untrusted project file's is ignored).
    environment: tuple[str, ...] | None = None
    ordered = list(tables)
    for table, trusted in ordered:
        if trusted:
            bash = table.bash or bash
            network = table.network or network
            hard_links = table.hard_links or hard_links
            writable += [p for p in table.writable if p not in writable]
            environment = table.environment if table.environment is not None else environment
        hidden += [p for p in table.hidden if p not in hidden]
    # Untrusted tables stand beside the rest, as untrusted rules do: whatever scope sets
    # the trusted value, the untrusted tightening still applies.
    for table, trusted in ordered:
        if trusted:
            continue
        if table.bash and _BASH_ORDER[table.bash] > _BASH_ORDER[bash]:
            bash = table.bash
        if table.network and _NETWORK_ORDER[table.network] > _NETWORK_ORDER[network]:
            network = table.network
        hard_links = "refuse" if table.hard_links == "refuse" else hard_links
    return SandboxSettings(
        bash=bash,
        network=network,
        writable=tuple(writable),
        hidden=tuple(hidden),
        hard_links=hard_links,
        environment=environment,
    )
