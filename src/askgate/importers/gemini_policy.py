"""`askgate import gemini [FILE.toml…] [-o FILE]`: Gemini CLI policy-engine rules as an
askgate policy file that decides the same way.

Gemini reads `[[rule]]` tables from `~/.gemini/policies/*.toml` (and the admin directory):

- `toolName = "run_shell_command"` with `commandPrefix = "git status"`: `[bash] "git status *"`
  (a list of prefixes: one rule each); `run_shell_command` alone: `[bash] "*"`;
- any other `toolName` (`read_file`): `[tool] "read_file"`; `toolName = "*"` alone: `default`;
- `toolName = "mcp_github_create_issue"` / `"mcp_github_*"`: `[mcp] "github:create_issue"` /
  `"github:*"`; `mcpName = "github"` (with `toolName`): `[mcp] "github:*"` (`"github:TOOL"`);
- `decision = "ask_user" | "deny" | "allow"`: ask, deny, allow; `denyMessage`: the reason.

Gemini lets the highest `priority` win (ties: the stricter); askgate lets a narrower rule
override a wider one and otherwise the stricter win. So a rule inside a higher-priority
rule with another decision is left out and listed: Gemini never applies it. The file
selects the read-only profile (Gemini's own defaults allow its read-only tools).

Not expressible (listed, never guessed): `commandRegex` and `argsPattern` (regular
expressions over arguments), `subagent`, `toolAnnotations`, `interactive`, rules limited
to `modes` without `default`, `[[safety_checker]]` tables. `allowRedirection` needs
nothing: askgate decides every redirect target by the write rules.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Sequence
from typing import Any

from askgate.importers.common import (
    Conversion,
    Converted,
    ImportError_,
    Skipped,
    drop_shadowed,
    run_import,
)

DECISIONS = {"allow": "allow", "ask_user": "ask", "deny": "deny"}
STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
SHELL_TOOL = "run_shell_command"
UNSUPPORTED = ("commandRegex", "argsPattern", "subagent", "toolAnnotations")
LABEL_KEYS = ("toolName", "mcpName", "commandPrefix", "decision", "priority")
MAX_FILE_BYTES = 1024 * 1024


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _mcp_pattern(tool: str) -> str | None:
    """`mcp_server_tool` -> `server:tool` (split on the first `_` after `mcp_`)."""
    rest = tool[4:]
    server, sep, name = rest.partition("_")
    if not server or "*" in server:
        return None
    return f"{server}:{name if sep and name else '*'}"


def convert_rule(rule: Any, source: str, priority_of: list[float]) -> list[Converted] | Skipped:
    shown = {k: rule[k] for k in LABEL_KEYS if k in rule} if isinstance(rule, dict) else {}
    text = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in shown.items())
    text = text if len(text) <= 160 else text[:160] + "…"

    def skip(reason: str) -> Skipped:
        return Skipped(f"[[rule]] {text}", "rule", source, reason)

    if not isinstance(rule, dict):
        return skip("not a table")
    decision = rule.get("decision")
    if decision not in DECISIONS:
        return skip(f"unknown decision {decision!r}")
    for key in UNSUPPORTED:
        if key in rule:
            return skip(f"{key} has no askgate equivalent")
    if rule.get("interactive") is False:
        return skip("applies only without a terminal (headless)")
    modes = rule.get("modes")
    if modes is not None and "default" not in (_strings(modes) or []):
        return skip("applies only in other modes than default")
    action = DECISIONS[decision]
    priority = rule.get("priority", 0)
    if not isinstance(priority, int | float) or isinstance(priority, bool):
        return skip("priority is not a number")
    tools = _strings(rule.get("toolName", []))
    prefixes = _strings(rule.get("commandPrefix", []))
    mcp_name = rule.get("mcpName")
    if (
        tools is None
        or prefixes is None
        or (mcp_name is not None and not isinstance(mcp_name, str))
    ):
        return skip("toolName, commandPrefix and mcpName must be strings or lists of them")
    label = f"[[rule]] {text}"
    patterns: list[tuple[str, str]] = []
    if mcp_name is not None:
        if mcp_name == "*":
            patterns += [("mcp", "*")]
        else:
            names = [t.removeprefix(f"mcp_{mcp_name}_") for t in tools] or ["*"]
            patterns += [("mcp", f"{mcp_name}:{name}") for name in names]
    elif prefixes:
        if tools and tools != [SHELL_TOOL]:
            return skip("commandPrefix on a tool other than run_shell_command")
        patterns += [("bash", prefix.strip() + " *") for prefix in prefixes]
    else:
        if not tools:
            return skip("neither toolName, commandPrefix nor mcpName")
        for tool in tools:
            if tool == SHELL_TOOL:
                patterns.append(("bash", "*"))
            elif tool == "*":
                patterns.append(("default", "*"))
            elif tool.startswith("mcp_"):
                pattern = _mcp_pattern(tool)
                if pattern is None:
                    return skip(f"MCP tool name {tool!r} names no single server")
                patterns.append(("mcp", pattern))
            else:
                patterns.append(("tool", tool))
    reason = rule.get("denyMessage")
    why = f" ({reason})" if isinstance(reason, str) and reason else ""
    out = []
    for surface, pattern in patterns:
        priority_of.append(float(priority))
        out.append(Converted(surface, pattern, action, f"{label}{why}", source))
    return out


def convert_text(
    conversion: Conversion, content: str, source: str, priority_of: list[float]
) -> None:
    conversion.sources.append(source)
    try:
        data = tomllib.loads(content)
    except tomllib.TOMLDecodeError as error:
        raise ImportError_(f"{source}: not TOML ({error})") from None
    for key in data:
        if key not in ("rule", "safety_checker"):
            conversion.skipped.append(Skipped(key, "key", source, "not a Gemini policy table"))
    for checker in data.get("safety_checker", []) or []:
        conversion.skipped.append(
            Skipped("[[safety_checker]]", "checker", source, "safety checkers are Gemini code")
        )
        del checker
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise ImportError_(f"{source}: 'rule' must be an array of tables ([[rule]])")
    for rule in rules:
        result = convert_rule(rule, source, priority_of)
        if isinstance(result, Skipped):
            conversion.skipped.append(result)
        else:
            conversion.rules.extend(result)


def convert_files(paths: Sequence[str]) -> Conversion:
    conversion = Conversion(
        profiles_why="Gemini's defaults allow its read-only tools; their shell forms ask nothing",
        rule_prefix="Gemini ",
    )
    priority_of: list[float] = []
    for path in paths:
        convert_text(conversion, _read(path), path, priority_of)
    # `toolName = "*"` alone: the default, from the highest-priority such rule.
    defaults = [
        (priority_of[i], r) for i, r in enumerate(conversion.rules) if r.surface == "default"
    ]
    keep = [i for i, r in enumerate(conversion.rules) if r.surface != "default"]
    if defaults:
        top = max(defaults, key=lambda pr: (pr[0], STRICTNESS[pr[1].action]))[1]
        conversion.default, conversion.default_why = top.action, top.rule
    conversion.rules = [conversion.rules[i] for i in keep]
    priority_of[:] = [priority_of[i] for i in keep]
    rules = conversion.rules

    def beats(j: int, i: int) -> bool:
        if priority_of[j] != priority_of[i]:
            return priority_of[j] > priority_of[i]
        return STRICTNESS[rules[j].action] > STRICTNESS[rules[i].action]

    drop_shadowed(
        conversion,
        beats,
        lambda winner: f"Gemini's higher-priority {winner.rule} decides every call it matches",
    )
    return conversion


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ImportError_(f"{path}: cannot read: {error.strerror or error}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ImportError_(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportError_(f"{path}: not UTF-8 text") from None


def default_files(cwd: str) -> list[str]:
    directory = os.path.expanduser("~/.gemini/policies")
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if n.endswith(".toml")]


def main(argv: Sequence[str]) -> int:
    return run_import(
        argv,
        agent="gemini",
        title="Gemini CLI policy rules",
        defaults=default_files,
        convert=lambda paths: convert_files(paths),
        help_files="policy .toml files (default: ~/.gemini/policies/*.toml)",
    )
