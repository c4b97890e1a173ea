"""The shape of a policy file: limits, key names, and a JSON Schema for editors.

`config.py` enforces exactly these rules (with line numbers); the JSON Schema mirrors
them for editor completion and CI checks (taplo, VS Code "Even Better TOML", …).
Pattern *syntax* beyond length and control characters is checked only by the loader.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from askgate.policy.model import Surface

MAX_FILE_BYTES = 1024 * 1024
MAX_PATTERN_LENGTH = 1000
MAX_REASON_LENGTH = 500
MAX_AGENT_NAME_LENGTH = 128
MAX_LIST_ITEMS = 1000
MAX_PATH_ENTRY_LENGTH = 4096

AGENT_NAME = re.compile(r"[A-Za-z0-9_.-]+")
PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
RULE_KEYS: tuple[str, ...] = ("action", "reason", "match", "not_match")
SURFACE_NAMES: tuple[str, ...] = tuple(surface.value for surface in Surface)
PATH_LIST_KEYS: tuple[str, ...] = ("infrastructure_read_paths", "extra_directories")
TOP_LEVEL_KEYS: tuple[str, ...] = (
    "default",
    "yolo",
    "profiles",
    *PATH_LIST_KEYS,
    *SURFACE_NAMES,
    "agent",
    "sandbox",
    "approvals",
)
# [approvals]: where asks go when no terminal or parent can answer (read by
# prompters/server.py from the user and managed files only, never from a project file).
APPROVALS_KEYS: dict[str, str] = {"server": "string", "token_file": "string", "budget": "number"}

# No control characters except tab (ECMA-262 syntax, also valid for Python's `re`).
_NO_CONTROL = "^[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]*$"
# ... and at least one character that is not white space.
_TEXT_CHAR = "[^\\u0000-\\u0008\\u000a-\\u001f\\u007f]"
_TEXT = f"^{_TEXT_CHAR}*[^\\s\\u0000-\\u001f\\u007f]{_TEXT_CHAR}*$"

_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://askgate.invalid/schemas/policy.schema.json",
    "title": "askgate policy file",
    "description": "TOML policy for askgate: surfaces map patterns to allow / deny / ask.",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "default": {
            "$ref": "#/$defs/action",
            "description": "Action when no rule matches (default: ask).",
        },
        "yolo": {"type": "boolean", "description": "Turn every ask into allow (never a deny)."},
        "profiles": {
            "type": "array",
            "description": "Built-in profiles to load just below this file's own rules.",
            "items": {"type": "string", "pattern": f"^{PROFILE_NAME.pattern}$"},
            "uniqueItems": True,
        },
        "infrastructure_read_paths": {"$ref": "#/$defs/pathList"},
        "extra_directories": {"$ref": "#/$defs/pathList"},
        **{name: {"$ref": "#/$defs/surfaceTable"} for name in SURFACE_NAMES},
        "sandbox": {"$ref": "#/$defs/sandboxTable"},
        "approvals": {
            "type": "object",
            "description": "Approval server (user and managed files only; ignored in a "
            "project file): server URL, token_file, budget in seconds.",
            "additionalProperties": False,
            "properties": {
                "server": {"type": "string", "pattern": "^https?://"},
                "token_file": {"type": "string"},
                "budget": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400},
            },
        },
        "agent": {
            "type": "object",
            "description": "Per-agent rules: [agent.NAME.SURFACE].",
            "propertyNames": {
                "pattern": f"^{AGENT_NAME.pattern}$",
                "maxLength": MAX_AGENT_NAME_LENGTH,
            },
            "additionalProperties": {"$ref": "#/$defs/agentTables"},
        },
    },
    "$defs": {
        "action": {"enum": ["allow", "deny", "ask"]},
        "rule": {
            "oneOf": [
                {"$ref": "#/$defs/action"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["action"],
                    "properties": {
                        "action": {"$ref": "#/$defs/action"},
                        "reason": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": MAX_REASON_LENGTH,
                            "pattern": _TEXT,
                        },
                        "match": {
                            "$ref": "#/$defs/examples",
                            "description": "Values the pattern must match (checked at load).",
                        },
                        "not_match": {
                            "$ref": "#/$defs/examples",
                            "description": "Values it must not match (checked at load).",
                        },
                    },
                },
            ]
        },
        "surfaceTable": {
            "type": "object",
            "propertyNames": {
                "minLength": 1,
                "maxLength": MAX_PATTERN_LENGTH,
                "pattern": _NO_CONTROL,
            },
            "additionalProperties": {"$ref": "#/$defs/rule"},
        },
        "agentTables": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                **{name: {"$ref": "#/$defs/surfaceTable"} for name in SURFACE_NAMES},
                "sandbox": {"$ref": "#/$defs/sandboxTable"},
            },
        },
        "sandboxTable": {
            "type": "object",
            "description": "Kernel sandbox for shell commands (docs/sandbox.md).",
            "additionalProperties": False,
            "properties": {
                "bash": {"enum": ["off", "on", "required"]},
                "network": {
                    "enum": ["on", "off", "policy", True, False],
                    "description": "policy: only the [net] hosts, through askgate's proxy "
                    "(docs/network.md); true = on, false = off.",
                },
                "hard_links": {"enum": ["warn", "refuse"]},
                "writable": {"$ref": "#/$defs/pathList"},
                "hidden": {"$ref": "#/$defs/pathList"},
                "environment": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*\\*?$"},
                    "description": "Only these variables pass into the sandbox (NAME, PREFIX*).",
                },
            },
        },
        "examples": {
            "type": "array",
            "maxItems": 50,
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_PATTERN_LENGTH},
        },
        "pathList": {
            "type": "array",
            "maxItems": MAX_LIST_ITEMS,
            "items": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_PATH_ENTRY_LENGTH,
                "pattern": _NO_CONTROL,
            },
        },
    },
}


def policy_json_schema() -> dict[str, Any]:
    """A fresh copy of the JSON Schema (draft 2020-12) of the policy file."""
    return copy.deepcopy(_SCHEMA)
