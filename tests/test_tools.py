"""askgate.tools: the one table from a tool call to the surface and value decided on."""

from __future__ import annotations

import pytest

from askgate.policy.model import Surface
from askgate.tools import _TABLE, ToolInputError, ToolRow, ToolTarget, mcp_tool_name, target_for

CWD = "/work/project"


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Bash", {"command": "make"}, ToolTarget(Surface.BASH, "make")),
        ("Read", {"file_path": "/a/b"}, ToolTarget(Surface.READ, "/a/b", read_only=True)),
        ("Edit", {"file_path": "/a/b"}, ToolTarget(Surface.WRITE, "/a/b")),
        ("NotebookEdit", {"notebook_path": "/n.ipynb"}, ToolTarget(Surface.WRITE, "/n.ipynb")),
        ("Skill", {"skill": "pdf"}, ToolTarget(Surface.SKILL, "pdf")),
        ("bash", {"command": "ls"}, ToolTarget(Surface.BASH, "ls")),
        ("read", {"path": "x.txt"}, ToolTarget(Surface.READ, "x.txt", read_only=True)),
        ("write", {"file_path": "y"}, ToolTarget(Surface.WRITE, "y")),
        ("run_shell_command", {"command": "pwd"}, ToolTarget(Surface.BASH, "pwd")),
        ("replace", {"file_path": "/z"}, ToolTarget(Surface.WRITE, "/z")),
        ("read_file", {"absolute_path": "/r"}, ToolTarget(Surface.READ, "/r", read_only=True)),
    ],
)
def test_known_tools_map_to_their_surface_and_value(tool, tool_input, expected) -> None:
    assert target_for(tool, tool_input, CWD) == expected


def test_input_keys_are_tried_in_table_order() -> None:
    # pi's `read` takes `path` first, then `file_path`.
    both = {"path": "first", "file_path": "second"}
    assert target_for("read", both, CWD).value == "first"
    assert target_for("read", {"file_path": "second"}, CWD).value == "second"


def test_a_search_tool_without_a_path_searches_the_working_directory() -> None:
    assert target_for("Grep", {"pattern": "x"}, CWD) == ToolTarget(Surface.READ, CWD, True)
    # An empty path is no path: the working directory, never "" (the policy root).
    assert target_for("glob", {"dir_path": ""}, CWD) == ToolTarget(Surface.READ, CWD, True)


def test_a_file_tool_without_its_path_is_an_input_error() -> None:
    with pytest.raises(ToolInputError, match="'file_path'"):
        target_for("Write", {"content": "x"}, CWD)
    with pytest.raises(ToolInputError, match="'path' or 'file_path'"):
        target_for("edit", {"file_path": ""}, CWD)  # empty is missing, not the cwd


def test_a_field_of_the_wrong_type_is_an_input_error() -> None:
    with pytest.raises(ToolInputError, match="must be a string"):
        target_for("Bash", {"command": ["rm", "-rf", "/"]}, CWD)


def test_mcp_tools_become_server_colon_tool() -> None:
    name = mcp_tool_name("github", "get_issue")
    assert name == "mcp__github__get_issue"
    assert target_for(name, {}, CWD) == ToolTarget(Surface.MCP, "github:get_issue")


@pytest.mark.parametrize("tool", ["mcp__", "mcp__github", "mcp____x", "mcp__github__"])
def test_a_malformed_mcp_name_is_an_input_error(tool: str) -> None:
    with pytest.raises(ToolInputError, match="malformed MCP tool name"):
        target_for(tool, {}, CWD)


def test_an_unknown_tool_is_decided_by_its_name_on_the_tool_surface() -> None:
    assert target_for("WebSearch", {"query": "x"}, CWD) == ToolTarget(Surface.TOOL, "WebSearch")


def test_webfetch_is_decided_by_the_host_of_its_url_on_the_net_surface() -> None:
    assert target_for("WebFetch", {"url": "https://x"}, CWD) == ToolTarget(Surface.NET, "https://x")


def test_every_row_of_the_table_is_consistent() -> None:
    for tool, row in _TABLE.items():
        assert isinstance(row, ToolRow), tool
        assert row.keys, tool
        # Only reads may take the infrastructure-read shortcut, and only path tools may
        # default to the working directory.
        assert not row.read_only or row.surface is Surface.READ, tool
        assert not row.path_optional or row.surface.is_path, tool
