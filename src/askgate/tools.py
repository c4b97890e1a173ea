"""Which surface a tool call is decided on, and with which value: the one table.

Claude Code's tools (``Bash Read Edit Write MultiEdit NotebookEdit Glob Grep WebFetch
mcp__server__tool``), pi's (``bash read edit write grep find ls``), Gemini CLI's
(``run_shell_command write_file replace read_file list_directory glob grep_search``) and
Codex's (``Bash``, ``Edit``/``Write`` aliases; ``apply_patch`` is split into one ``Write``
per file by its adapter) map here; any other tool is decided by its ``tool`` rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import msgspec

from askgate.policy.model import Surface


class ToolTarget(msgspec.Struct, frozen=True):
    """What the policy is asked about for one tool call."""

    surface: Surface
    value: str
    read_only: bool = False  # may take the infrastructure-read shortcut


class ToolInputError(ValueError):
    """The tool input lacks the field its surface needs, or it has the wrong type."""


class ToolRow(NamedTuple):
    """How one known tool is decided."""

    surface: Surface
    keys: tuple[str, ...]  # input keys that hold the value, tried in order
    read_only: bool  # may take the infrastructure-read shortcut
    path_optional: bool  # no path given means the working directory (Glob, ls …)


_TABLE: dict[str, ToolRow] = {
    # Claude Code
    "Bash": ToolRow(Surface.BASH, ("command",), False, False),
    "Read": ToolRow(Surface.READ, ("file_path",), True, False),
    "Edit": ToolRow(Surface.WRITE, ("file_path",), False, False),
    "Write": ToolRow(Surface.WRITE, ("file_path",), False, False),
    "MultiEdit": ToolRow(Surface.WRITE, ("file_path",), False, False),
    "NotebookEdit": ToolRow(Surface.WRITE, ("notebook_path",), False, False),
    "Glob": ToolRow(Surface.READ, ("path",), True, True),
    "Grep": ToolRow(Surface.READ, ("path",), True, True),
    "Skill": ToolRow(Surface.SKILL, ("skill", "name"), False, False),
    # the URL's HOST:PORT on the net surface, then the `tool` rule (docs/network.md)
    "WebFetch": ToolRow(Surface.NET, ("url",), False, False),
    # pi
    "bash": ToolRow(Surface.BASH, ("command",), False, False),
    "read": ToolRow(Surface.READ, ("path", "file_path"), True, False),
    "edit": ToolRow(Surface.WRITE, ("path", "file_path"), False, False),
    "write": ToolRow(Surface.WRITE, ("path", "file_path"), False, False),
    "grep": ToolRow(Surface.READ, ("path",), True, True),
    "find": ToolRow(Surface.READ, ("path",), True, True),
    "ls": ToolRow(Surface.READ, ("path",), True, True),
    "skill": ToolRow(Surface.SKILL, ("name", "skill"), False, False),
    # Gemini CLI (MCP tools arrive as mcp_<server>_<tool>: see `mcp_tool_name`)
    "run_shell_command": ToolRow(Surface.BASH, ("command",), False, False),
    "write_file": ToolRow(Surface.WRITE, ("file_path",), False, False),
    "replace": ToolRow(Surface.WRITE, ("file_path",), False, False),
    "read_file": ToolRow(Surface.READ, ("file_path", "absolute_path"), True, False),
    "list_directory": ToolRow(Surface.READ, ("dir_path", "path"), True, True),
    "glob": ToolRow(Surface.READ, ("dir_path", "path"), True, True),
    "grep_search": ToolRow(Surface.READ, ("dir_path", "path"), True, True),
    "search_file_content": ToolRow(Surface.READ, ("dir_path", "path"), True, True),
    # a prompt naming up to 20 URLs: each on the net surface (policy/engine.py)
    "web_fetch": ToolRow(Surface.NET, ("prompt",), False, False),
}

MCP_PREFIX = "mcp__"


def mcp_tool_name(server: str, tool: str) -> str:
    """The one spelling of an MCP tool (``mcp__server__tool``), for agents that name MCP
    tools differently (Gemini's ``mcp_<server>_<tool>`` cannot be split where either name
    holds ``_``, so its adapter builds the name from the server and tool it is given)."""
    return f"{MCP_PREFIX}{server}__{tool}"


def target_for(tool: str, tool_input: Mapping[str, Any], cwd: str) -> ToolTarget:
    """Map one tool call to the surface and value the policy decides on."""
    if tool.startswith(MCP_PREFIX):
        server, sep, name = tool[len(MCP_PREFIX) :].partition("__")
        if not sep or not server or not name:
            raise ToolInputError(f"malformed MCP tool name {tool!r} (want mcp__SERVER__TOOL)")
        return ToolTarget(Surface.MCP, f"{server}:{name}")
    entry = _TABLE.get(tool)
    if entry is None:
        return ToolTarget(Surface.TOOL, tool)
    surface, read_only = entry.surface, entry.read_only
    for key in entry.keys:
        if key in tool_input:
            value = tool_input[key]
            if not isinstance(value, str):
                raise ToolInputError(f"{tool}: input field {key!r} must be a string")
            if surface.is_path and not value:
                break
            return ToolTarget(surface, _search_root(tool, tool_input, value), read_only)
    if entry.path_optional:
        return ToolTarget(surface, _search_root(tool, tool_input, cwd), read_only)
    if surface is Surface.NET:  # no URL: nothing to connect to, the tool's own rule decides
        return ToolTarget(Surface.TOOL, tool)
    raise ToolInputError(f"{tool}: input has no {' or '.join(repr(k) for k in entry.keys)} field")


# Tools whose `pattern` is a path glob: it may name a directory of its own.
_PATH_PATTERN_TOOLS = frozenset({"Glob", "find", "glob"})
_GLOB_CHARACTER = re.compile(r"[*?\[{]")


def _search_root(tool: str, tool_input: Mapping[str, Any], directory: str) -> str:
    """The directory a Glob-like search reads below: `pattern` `~/.ssh/*` searches
    `~/.ssh` whatever `path` says, `src/**/*.py` searches `path/src` (issue #7)."""
    pattern = tool_input.get("pattern")
    if tool not in _PATH_PATTERN_TOOLS or not isinstance(pattern, str) or not pattern:
        return directory
    glob = _GLOB_CHARACTER.search(pattern)
    if glob is None:
        prefix = pattern  # no wildcard: the pattern names the path itself
    else:
        literal = pattern[: glob.start()]
        prefix = literal.rsplit("/", 1)[0] if "/" in literal else ""
    if pattern.startswith(("/", "~")):
        return prefix or pattern[:1]
    return f"{directory.rstrip('/')}/{prefix}" if prefix else directory
