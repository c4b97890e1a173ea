"""The shape of a policy file: limits, the file's types, its key names, and its JSON Schema.

The file's shape is written once, as msgspec types (`PolicyFileShape` and the tables in
it): the loader (`policy_file.py`) takes its key names from them and enforces them with
line numbers, and the JSON Schema for editors and CI checks (taplo, VS Code "Even Better
TOML", …) is derived from them with `msgspec.json.schema`, never written beside them.
Pattern *syntax* beyond length and control characters is checked only by the loader.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from askgate.policy.model import Surface
from askgate.policy.sandbox_table import (
    BASH_MODES,
    ENVIRONMENT_ENTRY,
    HARD_LINK_MODES,
    NETWORK_MODES,
    SANDBOX_KEYS,
)

MAX_FILE_BYTES = 1024 * 1024
MAX_PATTERN_LENGTH = 1000
MAX_REASON_LENGTH = 500
MAX_AGENT_NAME_LENGTH = 128
MAX_LIST_ITEMS = 1000
MAX_PATH_ENTRY_LENGTH = 4096

AGENT_NAME = re.compile(r"[A-Za-z0-9_.-]+")
PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
# No control characters except tab (ECMA-262 syntax, also valid for Python's `re`).
_NO_CONTROL = "^[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]*$"
# ... and at least one character that is not white space.
_TEXT_CHAR = "[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]"
_TEXT = f"^{_TEXT_CHAR}*[^\\s\\u0000-\\u001f\\u007f]{_TEXT_CHAR}*$"
SURFACE_NAMES: tuple[str, ...] = tuple(surface.value for surface in Surface)

Action = Literal["allow", "deny", "ask"]
Pattern = Annotated[
    str, msgspec.Meta(min_length=1, max_length=MAX_PATTERN_LENGTH, pattern=_NO_CONTROL)
]
Example = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PATTERN_LENGTH)]
Examples = Annotated[list[Example], msgspec.Meta(max_length=50)]
PathEntry = Annotated[
    str, msgspec.Meta(min_length=1, max_length=MAX_PATH_ENTRY_LENGTH, pattern=_NO_CONTROL)
]
PathList = Annotated[list[PathEntry], msgspec.Meta(max_length=MAX_LIST_ITEMS)]
ProfileName = Annotated[str, msgspec.Meta(pattern=f"^{PROFILE_NAME.pattern}$")]
AgentName = Annotated[
    str, msgspec.Meta(pattern=f"^{AGENT_NAME.pattern}$", max_length=MAX_AGENT_NAME_LENGTH)
]
EnvironmentEntry = Annotated[str, msgspec.Meta(pattern=f"^{ENVIRONMENT_ENTRY.pattern}$")]
_UNSET: Any = msgspec.UNSET  # every key of a policy file is optional; TOML has no null


class RuleTable(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A rule written as an inline table: its action, a reason shown with it, and
    examples checked at load."""

    action: Action
    reason: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_REASON_LENGTH, pattern=_TEXT)]
        | msgspec.UnsetType
    ) = _UNSET
    match: (
        Annotated[
            Examples, msgspec.Meta(description="Values the pattern must match (checked at load).")
        ]
        | msgspec.UnsetType
    ) = _UNSET
    not_match: (
        Annotated[Examples, msgspec.Meta(description="Values it must not match (checked at load).")]
        | msgspec.UnsetType
    ) = _UNSET


Rule = Action | RuleTable
SurfaceTable = dict[Pattern, Rule]


class SandboxTableShape(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Kernel sandbox for shell commands (docs/sandbox.md)."""

    bash: Literal[BASH_MODES] | msgspec.UnsetType = _UNSET  # type: ignore[valid-type]
    network: (
        Annotated[
            Literal[NETWORK_MODES] | bool,  # type: ignore[valid-type]
            msgspec.Meta(
                description="policy: only the [net] hosts, through askgate's proxy "
                "(docs/network.md); true = on, false = off."
            ),
        ]
        | msgspec.UnsetType
    ) = _UNSET
    writable: PathList | msgspec.UnsetType = _UNSET
    hidden: PathList | msgspec.UnsetType = _UNSET
    hard_links: Literal[HARD_LINK_MODES] | msgspec.UnsetType = _UNSET  # type: ignore[valid-type]
    environment: (
        Annotated[
            list[EnvironmentEntry],
            msgspec.Meta(description="Only these variables pass into the sandbox (NAME, PREFIX*)."),
        ]
        | msgspec.UnsetType
    ) = _UNSET


class ApprovalsTable(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Approval server (user and managed files only; ignored in a project file): server
    URL, token_file, budget in seconds."""

    server: Annotated[str, msgspec.Meta(pattern="^https?://")] | msgspec.UnsetType = _UNSET
    token_file: str | msgspec.UnsetType = _UNSET
    budget: Annotated[float, msgspec.Meta(gt=0, le=86400)] | msgspec.UnsetType = _UNSET


_SURFACE_FIELDS: list[tuple[str, Any, Any]] = [
    (name, SurfaceTable | msgspec.UnsetType, _UNSET) for name in SURFACE_NAMES
]
AgentTables: Any = msgspec.defstruct(
    "AgentTables",
    [*_SURFACE_FIELDS, ("sandbox", SandboxTableShape | msgspec.UnsetType, _UNSET)],
    forbid_unknown_fields=True,
    kw_only=True,
)
AgentTables.__doc__ = "One agent's rules and sandbox: [agent.NAME.SURFACE], [agent.NAME.sandbox]."


def _described(kind: Any, description: str) -> Any:
    return Annotated[kind, msgspec.Meta(description=description)] | msgspec.UnsetType


# The policy file's keys, in the order its errors list them. `policy_file` checks each key
# with line numbers; the JSON Schema is derived from these same types (policy_json_schema)
# and `msgspec.convert(document, PolicyFileShape)` accepts what the loader accepts
# (tests/test_policy_schema_derived.py).
PolicyFileShape: Any = msgspec.defstruct(
    "PolicyFile",
    [
        ("default", _described(Action, "Action when no rule matches (default: ask)."), _UNSET),
        ("yolo", _described(bool, "Turn every ask into allow (never a deny)."), _UNSET),
        (
            "profiles",
            _described(
                frozenset[ProfileName],
                "Built-in profiles to load just below this file's own rules.",
            ),
            _UNSET,
        ),
        ("infrastructure_read_paths", PathList | msgspec.UnsetType, _UNSET),
        ("extra_directories", PathList | msgspec.UnsetType, _UNSET),
        *_SURFACE_FIELDS,
        (
            "agent",
            _described(dict[AgentName, AgentTables], "Per-agent rules: [agent.NAME.SURFACE]."),
            _UNSET,
        ),
        ("sandbox", SandboxTableShape | msgspec.UnsetType, _UNSET),
        ("approvals", ApprovalsTable | msgspec.UnsetType, _UNSET),
    ],
    forbid_unknown_fields=True,
    kw_only=True,
)
PolicyFileShape.__doc__ = "TOML policy for askgate: surfaces map patterns to allow / deny / ask."

TOP_LEVEL_KEYS: tuple[str, ...] = PolicyFileShape.__struct_fields__
RULE_KEYS: tuple[str, ...] = RuleTable.__struct_fields__
PATH_LIST_KEYS: tuple[str, ...] = ("infrastructure_read_paths", "extra_directories")
# [approvals]: where asks go when no terminal or parent can answer (read by
# prompters/server.py from the user and managed files only, never from a project file).
APPROVALS_KEYS: dict[str, str] = {
    name: "number" if name == "budget" else "string" for name in ApprovalsTable.__struct_fields__
}
assert set(SandboxTableShape.__struct_fields__) == set(SANDBOX_KEYS)


# The $defs names users' schemas and editors refer to (stable across releases), for the
# types msgspec names after their classes.
_DEF_NAMES = {
    "AgentTables": "agentTables",
    "SandboxTableShape": "sandboxTable",
    "ApprovalsTable": "approvalsTable",
}


def _derived_schema() -> dict[str, Any]:
    generated = msgspec.json.schema(PolicyFileShape)
    definitions: dict[str, Any] = generated["$defs"]
    root = definitions.pop("PolicyFile")
    root.pop("title", None)
    # A rule: an action, or the inline table (msgspec names it after its class).
    inline_rule = definitions.pop("RuleTable")
    definitions["action"] = {"enum": list(msgspec.json.schema(Action)["enum"])}
    definitions["rule"] = {"oneOf": [{"$ref": "#/$defs/action"}, inline_rule]}
    # One surface table, referenced from every surface (msgspec inlines a dict type at
    # each use).
    surface_table = msgspec.json.schema(SurfaceTable)
    surface_table.pop("$defs", None)
    definitions["surfaceTable"] = {
        **surface_table,
        "additionalProperties": {"$ref": "#/$defs/rule"},
    }
    definitions = {_DEF_NAMES.get(name, name): item for name, item in definitions.items()}
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://askgate.invalid/schemas/policy.schema.json",
        "title": "askgate policy file",
        **root,
        "$defs": definitions,
    }
    tidy: dict[str, Any] = _tidy(schema, surface_table, top=True)
    return tidy


def _tidy(node: Any, surface_table: dict[str, Any], *, top: bool = False) -> Any:
    """References to the one surface table and the renamed $defs, one-line descriptions,
    a union of enums and booleans as one enum, no empty `required`."""
    if isinstance(node, list):
        return [_tidy(item, surface_table) for item in node]
    if not isinstance(node, dict):
        return node
    if node == surface_table:
        return {"$ref": "#/$defs/surfaceTable"}
    alternatives = node.get("anyOf")
    if alternatives and all(set(a) == {"enum"} or a == {"type": "boolean"} for a in alternatives):
        merged: list[Any] = []
        for alternative in alternatives:
            merged += alternative.get("enum", [True, False])
        node = {**{k: v for k, v in node.items() if k != "anyOf"}, "enum": merged}
    tidy: dict[str, Any] = {}
    for key, value in node.items():
        if key == "required" and value == []:
            continue
        if key == "title" and isinstance(value, str) and not top:
            continue  # msgspec's class names: the $defs keys already say them
        if key == "description" and isinstance(value, str):
            value = " ".join(value.split())
        elif key == "$ref" and isinstance(value, str):
            name = value.removeprefix("#/$defs/")
            value = f"#/$defs/{_DEF_NAMES.get(name, name)}"
        elif key == "$defs":
            value = {name: _tidy(item, surface_table) for name, item in value.items()}
        else:
            value = _tidy(value, surface_table)
        tidy[key] = value
    return tidy


def policy_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the policy file, derived from `PolicyFileShape`
    (on demand: the hook's in-process path imports this module and never needs it)."""
    return _derived_schema()
