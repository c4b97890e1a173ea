"""`askgate import pi [FILE…] [-o FILE]`: the pi permission system's policy as an askgate
policy file that decides the same way. Both of its formats are read:

* the flat `config.json` (`<agentDir>/extensions/pi-permission-system/config.json`, a
  project's `.pi/extensions/pi-permission-system/config.json`): a `permission` object;
* the legacy `pi-permissions.jsonc` (`~/.pi/agent/`, a project's `.pi/agent/`): sections
  `defaultPolicy`, `tools`, `bash`, `mcp`, `skills`, `special`.

- `"*": "ask"` (legacy `defaultPolicy.tools`): `default`;
- `"bash": {"git *": "ask"}`: `[bash] "git *"` (the same wildcard dialect);
- `"read": "allow"`, `"task": "deny"` (a tool and one state): `[tool] "read"`, `[tool] "task"`;
- `"write": {"src/*": "allow"}`: `[write] "src/**"` (pi's `*` crosses `/`, askgate's `**` does);
- `"path": {"*.env": "deny"}`: `[read]` and `[write] "**.env"` (denies and asks; an allow
  only as an exception nested inside them: pi's path rules only restrict);
- `"mcp": {"github:create": "allow"}`: `[mcp] "github:create"`; `"github"`: `"github:*"`;
- `"skill"`, `"external_directory"`: `[skill]`, `[external_directory]`;
- `{"action": "deny", "reason": "…"}`: a deny with that reason;
- `"yoloMode": true` (the global file only): `yolo = true`.

pi lets the LAST matching rule win (files: global, then project); askgate lets a narrower
rule override a wider one. So a rule that a later rule with another action contains is
left out and listed (pi never applies it).

Not expressible (listed): MCP keys of the `server_tool` form (server and tool cannot be
told apart), pi's own MCP proxy tools (`mcp_status`, …), `special.doom_loop`, and keys
that are not surfaces or tools.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from askgate.importers.common import (
    Conversion,
    Converted,
    ImportError_,
    Skipped,
    drop_shadowed,
    read_bounded,
    run_import,
)

STATES = ("allow", "ask", "deny")
PATH_TOOLS = {"read": "read", "write": "write", "edit": "write"}


def strip_jsonc(text: str) -> str:
    """`//` and `/* */` comments and trailing commas removed (outside strings)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            in_string = ch != '"'
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in "}]":
            while out and out[-1] in " \t\r\n":
                out.pop()
            if out and out[-1] == ",":
                out.pop()
            out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _path_pattern(pattern: str) -> str:
    """pi's `*` crosses `/`; askgate's `**` does (also inside a segment)."""
    return "**".join(pattern.replace("**", "*").split("*"))


def _state(value: Any) -> tuple[str, str | None] | None:
    if isinstance(value, str) and value in STATES:
        return value, None
    if isinstance(value, dict) and value.get("action") in STATES:
        reason = value.get("reason")
        return value["action"], reason if isinstance(reason, str) and reason else None
    return None


class _File:
    def __init__(self, conversion: Conversion, source: str) -> None:
        self.conversion = conversion
        self.source = source

    def add(self, surface: str, pattern: str, value: Any, label: str) -> None:
        state = _state(value)
        if state is None:
            self.skip(label, f"{value!r} is not allow, ask or deny")
            return
        action, reason = state
        text = label if reason is None else f"{label} ({reason})"
        self.conversion.rules.append(Converted(surface, pattern, action, text, self.source))

    def skip(self, label: str, why: str) -> None:
        self.conversion.skipped.append(Skipped(label, "rule", self.source, why))

    def pattern_map(self, key: str, value: Any, surfaces: Sequence[str], *, paths: bool) -> None:
        entries = value.items() if isinstance(value, dict) else [("*", value)]
        for pattern, state in entries:
            converted = _path_pattern(pattern) if paths else pattern
            if paths and converted in ("**", "/**"):
                converted = "/**"
            for surface in surfaces:
                self.add(surface, converted, state, f'{key} "{pattern}"')

    def mcp(self, value: Any) -> None:
        entries = value.items() if isinstance(value, dict) else [("*", value)]
        for key, state in entries:
            label = f'mcp "{key}"'
            if key == "*" or ":" in key:
                self.add("mcp", key, state, label)
            elif key.startswith("mcp_"):
                self.skip(label, "pi's own MCP proxy tool; askgate sees the server's tools")
            elif "_" in key:
                self.skip(label, "a server_tool key: where the server name ends is unknown")
            else:
                self.add("mcp", f"{key}:*", state, label)


def convert_flat(file: _File, permission: Any) -> None:
    if not isinstance(permission, dict):
        raise ImportError_(f"{file.source}: 'permission' is not a JSON object")
    for key, value in permission.items():
        if key == "*":
            state = _state(value)
            if state is not None:
                file.conversion.default, file.conversion.default_why = state[0], 'permission "*"'
        elif key == "bash":
            file.pattern_map("bash", value, ["bash"], paths=False)
        elif key in PATH_TOOLS and isinstance(value, dict):
            file.pattern_map(key, value, [PATH_TOOLS[key]], paths=True)
        elif key == "path":
            _path_surface(file, value)
        elif key == "mcp":
            file.mcp(value)
        elif key == "skill":
            file.pattern_map("skill", value, ["skill"], paths=False)
        elif key == "external_directory":
            file.pattern_map(key, value, ["external_directory"], paths=True)
        elif isinstance(value, str):
            file.add("tool", key, value, f'tool "{key}"')
        else:
            file.skip(f'"{key}"', "per-pattern rules for this tool have no askgate surface")


def _path_surface(file: _File, value: Any) -> None:
    """pi's `path` rules only restrict (the most restrictive of tool and path decides): its
    denies and asks become read and write rules; an allow only as an exception nested in
    them (an allow of its own would permit what pi's tool rule still asks about)."""
    entries = list(value.items()) if isinstance(value, dict) else [("*", value)]
    strict = [_path_pattern(p) for p, s in entries if (_state(s) or ("allow",))[0] != "allow"]
    for pattern, state in entries:
        converted = _path_pattern(pattern)
        action = (_state(state) or ("?",))[0]
        if action == "allow" and not any(_nested(converted, outer) for outer in strict):
            file.skip(f'path "{pattern}"', "a pi path allow permits nothing on its own")
            continue
        for surface in ("read", "write"):
            file.add(surface, converted, state, f'path "{pattern}"')


def _nested(inner: str, outer: str) -> bool:
    from askgate.policy.patterns import compile_pattern, contains

    anchor = "/__project__/"
    a = compile_pattern("path", inner if inner.startswith(("/", "**")) else anchor + inner)
    b = compile_pattern("path", outer if outer.startswith(("/", "**")) else anchor + outer)
    return bool(contains(b, a)) and inner != outer


def convert_legacy(file: _File, data: dict[str, Any]) -> None:
    defaults = data.get("defaultPolicy", {})
    if isinstance(defaults, dict):
        tools_default = _state(defaults.get("tools"))
        if tools_default is not None:
            file.conversion.default = tools_default[0]
            file.conversion.default_why = "defaultPolicy.tools"
        for section, surface, pattern in (
            ("bash", "bash", "*"),
            ("mcp", "mcp", "*"),
            ("skills", "skill", "*"),
        ):
            if section in defaults:
                file.add(surface, pattern, defaults[section], f"defaultPolicy.{section}")
    for name, value in (data.get("tools") or {}).items():
        file.add("tool", name, value, f'tools "{name}"')
    file.pattern_map("bash", data.get("bash") or {}, ["bash"], paths=False)
    file.mcp(data.get("mcp") or {})
    file.pattern_map("skills", data.get("skills") or {}, ["skill"], paths=False)
    for name, value in (data.get("special") or {}).items():
        if name == "external_directory":
            file.add("external_directory", "/**", value, "special.external_directory")
        else:
            file.skip(f'special "{name}"', "no askgate equivalent")


def convert_files(paths: Sequence[str]) -> Conversion:
    conversion = Conversion(profiles=[], profiles_why="", rule_prefix="pi ")
    for path in paths:
        data = _load(path)
        conversion.sources.append(path)
        file = _File(conversion, path)
        project = f"{os.sep}.pi{os.sep}" in path and not path.startswith(_agent_dir() + os.sep)
        if data.get("yoloMode") is True:
            if project:
                file.skip("yoloMode: true", "a project's file cannot switch prompts off")
            else:
                conversion.yolo = True
        if "permission" in data:
            convert_flat(file, data["permission"])
        else:
            convert_legacy(file, data)
    drop_shadowed(
        conversion,
        lambda j, i: j > i,
        lambda winner: f"pi's later {winner.rule} ({winner.source}) decides what it matches",
    )
    return conversion


def _agent_dir() -> str:
    value = os.environ.get("PI_CODING_AGENT_DIR", "")
    return value if value.startswith("/") else os.path.expanduser("~/.pi/agent")


def _load(path: str) -> dict[str, Any]:
    raw = read_bounded(path)
    try:
        data = json.loads(strip_jsonc(raw.decode("utf-8")))
    except (UnicodeDecodeError, ValueError) as error:
        raise ImportError_(f"{path}: not JSON with comments ({error})") from None
    if not isinstance(data, dict):
        raise ImportError_(f"{path}: the top level is not a JSON object")
    return data


def default_files(cwd: str) -> list[str]:
    from askgate.policy.config import find_project_root

    root = find_project_root(cwd)
    agent = _agent_dir()
    candidates = [
        os.path.join(agent, "pi-permissions.jsonc"),
        os.path.join(agent, "extensions", "pi-permission-system", "config.json"),
        os.path.join(root, ".pi", "agent", "pi-permissions.jsonc"),
        os.path.join(root, ".pi", "extensions", "pi-permission-system", "config.json"),
    ]
    return [path for path in candidates if os.path.isfile(path)]


def main(argv: Sequence[str]) -> int:
    return run_import(
        argv,
        agent="pi",
        title="pi permission-system policy",
        defaults=default_files,
        convert=lambda paths: convert_files(paths),
        help_files="pi-permissions.jsonc or config.json (default: global, then project)",
    )
