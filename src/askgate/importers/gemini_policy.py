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
    STRICTNESS,
    Conversion,
    Converted,
    ImportError_,
    Skipped,
    drop_shadowed,
    read_text,
    run_import,
)

DECISIONS = {"allow": "allow", "ask_user": "ask", "deny": "deny"}
SHELL_TOOL = "run_shell_command"
UNSUPPORTED = ("commandRegex", "argsPattern", "subagent", "toolAnnotations")
LABEL_KEYS = ("toolName", "mcpName", "commandPrefix", "decision", "priority")


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


def _label(rule: Any) -> str:
    """`[[rule]] toolName="…" decision="…"`: how the rule is named in the output."""
    shown = {k: rule[k] for k in LABEL_KEYS if k in rule} if isinstance(rule, dict) else {}
    text = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in shown.items())
    return "[[rule]] " + (text if len(text) <= 160 else text[:160] + "…")


def _inexpressible(rule: dict[str, Any]) -> str | None:
    """Why askgate cannot apply this rule as Gemini does, or None."""
    if rule.get("decision") not in DECISIONS:
        return f"unknown decision {rule.get('decision')!r}"
    for key in UNSUPPORTED:
        if key in rule:
            return f"{key} has no askgate equivalent"
    if rule.get("interactive") is False:
        return "applies only without a terminal (headless)"
    modes = rule.get("modes")
    if modes is not None and "default" not in (_strings(modes) or []):
        return "applies only in other modes than default"
    priority = rule.get("priority", 0)
    if not isinstance(priority, int | float) or isinstance(priority, bool):
        return "priority is not a number"
    return None


def _tool_pattern(tool: str) -> tuple[str, str] | str:
    """(surface, pattern) for one `toolName` without a prefix, or why not."""
    if tool == SHELL_TOOL:
        return ("bash", "*")
    if tool == "*":
        return ("default", "*")
    if tool.startswith("mcp_"):
        pattern = _mcp_pattern(tool)
        if pattern is None:
            return f"MCP tool name {tool!r} names no single server"
        return ("mcp", pattern)
    return ("tool", tool)


def _patterns(
    tools: list[str], prefixes: list[str], mcp_name: str | None
) -> list[tuple[str, str]] | str:
    """The askgate (surface, pattern)s one rule's names give, or why none can."""
    if mcp_name is not None:
        if mcp_name == "*":
            return [("mcp", "*")]
        names = [t.removeprefix(f"mcp_{mcp_name}_") for t in tools] or ["*"]
        return [("mcp", f"{mcp_name}:{name}") for name in names]
    if prefixes:
        if tools and tools != [SHELL_TOOL]:
            return "commandPrefix on a tool other than run_shell_command"
        return [("bash", prefix.strip() + " *") for prefix in prefixes]
    if not tools:
        return "neither toolName, commandPrefix nor mcpName"
    found: list[tuple[str, str]] = []
    for tool in tools:
        pattern = _tool_pattern(tool)
        if isinstance(pattern, str):
            return pattern
        found.append(pattern)
    return found


def convert_rule(rule: Any, source: str, priority_of: list[float]) -> list[Converted] | Skipped:
    label = _label(rule)
    if not isinstance(rule, dict):
        return Skipped(label, "rule", source, "not a table")
    reason = _inexpressible(rule)
    tools = _strings(rule.get("toolName", []))
    prefixes = _strings(rule.get("commandPrefix", []))
    mcp_name = rule.get("mcpName")
    if reason is None and (
        tools is None
        or prefixes is None
        or (mcp_name is not None and not isinstance(mcp_name, str))
    ):
        reason = "toolName, commandPrefix and mcpName must be strings or lists of them"
    if reason is not None:
        return Skipped(label, "rule", source, reason)
    assert tools is not None and prefixes is not None  # checked just above
    patterns = _patterns(tools, prefixes, mcp_name)
    if isinstance(patterns, str):
        return Skipped(label, "rule", source, patterns)
    action = DECISIONS[rule["decision"]]
    message = rule.get("denyMessage")
    why = f" ({message})" if isinstance(message, str) and message else ""
    priority = float(rule.get("priority", 0))
    priority_of.extend(priority for _ in patterns)
    return [
        Converted(surface, pattern, action, f"{label}{why}", source)
        for surface, pattern in patterns
    ]


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
        conversion.add(convert_rule(rule, source, priority_of))


def convert_files(paths: Sequence[str]) -> Conversion:
    conversion = Conversion(
        profiles_why="Gemini's defaults allow its read-only tools; their shell forms ask nothing",
        rule_prefix="Gemini ",
    )
    priority_of: list[float] = []
    for path in paths:
        convert_text(conversion, read_text(path), path, priority_of)
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
