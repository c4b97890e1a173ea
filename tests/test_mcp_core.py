"""The MCP gateway's pure parts: framing, the sans-IO core, argument classification and
the decisions of calls with their arguments (a real Policy on a real directory tree)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from askgate.mcp.arguments import Role, ToolShape, classify, file_uri_path
from askgate.mcp.core import Answered, Decide, GatewayCore, ToClient, ToServer
from askgate.mcp.decide import decide_call
from askgate.mcp.frames import Lines, Oversized, guess_id
from askgate.policy.engine import Policy
from askgate.policy.model import Action

# --- framing ---------------------------------------------------------------------------


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    st.lists(st.integers(1, 50), max_size=20),
)
def test_lines_come_out_whole_however_the_bytes_are_cut(
    lines: list[bytes], cuts: list[int]
) -> None:
    data = b"".join(line + b"\n" for line in lines)
    framer, out, pos = Lines(limit=1024), [], 0
    for cut in [*cuts, len(data)]:
        out += framer.feed(data[pos : pos + cut])
        pos += cut
    out += framer.end()
    assert out == [line + b"\n" for line in lines]


def test_an_oversized_line_is_dropped_and_reported_once_and_the_next_line_survives() -> None:
    framer = Lines(limit=100)
    head = b'{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"x":"'
    out = framer.feed(head + b"y" * 60)
    out += framer.feed(b"y" * 500)
    out += framer.feed(b'"}}\n{"id":1}\n')
    assert len(out) == 2 and isinstance(out[0], Oversized)
    assert guess_id(out[0].prefix) == 42
    assert out[1] == b'{"id":1}\n'


# --- the core --------------------------------------------------------------------------


def frame(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def test_frames_it_does_not_decide_pass_byte_for_byte() -> None:
    core = GatewayCore()
    odd = b'{"jsonrpc":"2.0",  "id":"a\\u00e9", "method":"ping", "params":{}}\n'
    assert core.from_client(odd) == [ToServer(odd, "a\u00e9", True)]
    note = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1.50}}\n'
    assert core.from_server(note) == [ToClient(note)]
    answer = b'{"jsonrpc":"2.0","id":"a\\u00e9","result":{ "z":1 }}\n'
    assert core.from_server(answer) == [ToClient(answer, "a\u00e9")]


def test_tools_list_drops_denied_tools_and_remembers_schemas() -> None:
    core = GatewayCore(visible=lambda tool: tool != "secret")
    core.from_client(frame({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    tools = [
        {"name": "read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "secret", "inputSchema": {"type": "object"}},
    ]
    [out] = core.from_server(frame({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}))
    assert isinstance(out, ToClient)
    assert [t["name"] for t in json.loads(out.data)["result"]["tools"]] == ["read"]
    assert set(core.tools) == {"read", "secret"}


def test_a_call_is_forwarded_only_after_an_allow_and_unchanged() -> None:
    core = GatewayCore()
    call = frame({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "write", "arguments": {"path": "/x"}}})  # fmt: skip
    [decide] = core.from_client(call)
    assert isinstance(decide, Decide) and decide.arguments == {"path": "/x"}
    assert core.decided(decide.key, True, "ok") == [ToServer(call, 3, True)]
    [decide] = core.from_client(call.replace(b'"id": 3', b'"id": 4'))
    [denied] = core.decided(decide.key, False, "askgate: no")
    assert isinstance(denied, ToClient)
    result = json.loads(denied.data)
    assert result["id"] == 4 and result["result"]["isError"] is True
    assert result["result"]["content"][0]["text"] == "askgate: no"


def test_a_call_cancelled_while_deciding_is_never_sent() -> None:
    core = GatewayCore()
    call = {"name": "write", "arguments": {}}
    [decide] = core.from_client(frame({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                       "params": call}))  # fmt: skip
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
    assert core.from_client(frame(cancel)) == []
    assert core.decided(decide.key, True, "ok") == []


def test_the_elicitation_answer_is_the_gateways_and_is_not_forwarded() -> None:
    core = GatewayCore()
    ask_id, [request] = core.ask("allow?")
    assert isinstance(request, ToClient) and json.loads(request.data)["id"] == ask_id
    answer = {"jsonrpc": "2.0", "id": ask_id, "result": {"action": "accept"}}
    assert core.from_client(frame(answer)) == [Answered(ask_id, {"action": "accept"})]
    # the client's answer to a *server's* elicitation goes to the server
    other = frame({"jsonrpc": "2.0", "id": 5, "result": {"action": "accept"}})
    assert core.from_client(other) == [ToServer(other)]


def test_a_late_answer_after_a_timeout_is_dropped() -> None:
    core = GatewayCore()
    core.from_client(frame({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    ended, cancel = core.timed_out(2, "too slow")
    assert isinstance(ended, ToClient) and "too slow" in ended.data.decode()
    assert isinstance(cancel, ToServer) and b"notifications/cancelled" in cancel.data
    assert core.from_server(frame({"jsonrpc": "2.0", "id": 2, "result": {}})) == []


def test_server_gone_ends_open_requests_and_refuses_new_ones() -> None:
    core = GatewayCore()
    call = frame({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "t", "arguments": {}}})  # fmt: skip
    [decide] = core.from_client(call)
    core.decided(decide.key, True, "ok")
    [ended] = core.server_closed("the MCP server exited (code 3)")
    assert json.loads(ended.data)["result"]["isError"] is True  # type: ignore[union-attr]
    [decide] = core.from_client(call.replace(b'"id": 1', b'"id": 2'))
    [refused] = core.decided(decide.key, True, "ok")
    assert isinstance(refused, ToClient) and b"exited" in refused.data


# --- arguments -------------------------------------------------------------------------


def roles(tool: str, arguments: Any, entry: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    return [(a.where, a.role) for a in classify(ToolShape.of(tool, entry), arguments)]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("read_text_file", {"path": "/a"}, [("arguments.path", Role.READ)]),
        ("write_file", {"path": "/a", "content": "/etc/passwd"}, [("arguments.path", Role.WRITE)]),
        ("move_file", {"source": "/a", "destination": "/b"},
         [("arguments.source", Role.WRITE), ("arguments.destination", Role.WRITE)]),
        ("copy_file", {"source": "/a", "destination": "/b"},
         [("arguments.source", Role.READ), ("arguments.destination", Role.WRITE)]),
        ("read_multiple_files", {"paths": ["/a", "/b"]},
         [("arguments.paths[0]", Role.READ), ("arguments.paths[1]", Role.READ)]),
        ("edit_file", {"path": "/a", "edits": [{"oldText": "/x", "newText": "/y"}]},
         [("arguments.path", Role.WRITE)]),
        ("frobnicate", {"thing": "~/.ssh/id_rsa"}, [("arguments.thing", Role.WRITE)]),
        ("frobnicate", {"opts": {"deep": [{"f": "file:///etc/shadow"}]}},
         [("arguments.opts.deep[0].f", Role.WRITE)]),
        ("fetch", {"url": "https://example.org/"}, [("arguments.url", Role.URL)]),
        ("run_command", {"command": "rm -rf /"}, [("arguments.command", Role.COMMAND)]),
        ("exec", {"cmd": ["rm", "-rf", "/"]}, [("arguments.cmd", Role.COMMAND)]),
        ("get_weather", {"city": "Paris", "days": 3}, []),
        ("read_resource", {"uri": "memo://notes/1"}, []),
        ("read_resource", {"uri": "ftp://host/x"}, [("arguments.uri", Role.URL)]),
        ("open_link", {"link": "javascript:alert(1)"}, [("arguments.link", Role.URL)]),
        ("frobnicate", {"f": "file://otherhost/etc/x"}, [("arguments.f", Role.OPAQUE)]),
    ],
)  # fmt: skip
def test_arguments_are_classified(tool: str, arguments: Any, expected: list[Any]) -> None:
    assert roles(tool, arguments) == expected


def test_annotations_only_tighten() -> None:
    # readOnlyHint on a tool named like a writer: its paths are still writes
    assert roles("write_file", {"path": "/a"}, {"annotations": {"readOnlyHint": True}}) == [
        ("arguments.path", Role.WRITE)
    ]
    # destructiveHint turns a reader's paths into writes
    assert roles("read_file", {"path": "/a"}, {"annotations": {"destructiveHint": True}}) == [
        ("arguments.path", Role.WRITE)
    ]


def test_schema_format_marks_a_path_and_a_uri() -> None:
    schema = {"properties": {"where": {"type": "string", "format": "uri"},
                             "loc": {"type": "string", "format": "path"}}}  # fmt: skip
    found = roles("get_x", {"where": "https://h/", "loc": "data.txt"}, {"inputSchema": schema})
    assert found == [("arguments.where", Role.URL), ("arguments.loc", Role.READ)]


def test_file_uris() -> None:
    assert file_uri_path("file:///home/u/a%20b") == "/home/u/a b"
    assert file_uri_path("file://localhost/etc/x") == "/etc/x"
    assert file_uri_path("file://evil/etc/x") is None
    assert file_uri_path("file:relative") is None


def test_deep_or_huge_arguments_ask() -> None:
    deep: Any = "leaf"
    for _ in range(60):
        deep = {"k": deep}
    assert ("arguments" + ".k" * 33, Role.OPAQUE) in roles("frob", deep)


# --- decisions -------------------------------------------------------------------------


@pytest.fixture
def world(tmp_path: Path) -> tuple[Policy, Path]:
    home = tmp_path / "home"
    project = home / "work"
    (project / ".git").mkdir(parents=True)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("k")
    (project / "ok.txt").write_text("ok")
    (project / "link").symlink_to(home / ".aws" / "credentials")
    (project / "dirlink").symlink_to(home / ".aws")
    policy_file = tmp_path / "p.toml"
    policy_file.write_text(
        """
default = "ask"
[mcp]
"fs:*" = "allow"
"sh:*" = "allow"
"web:*" = "allow"
[read]
"~/.aws/**" = { action = "deny", reason = "cloud credentials" }
[write]
"~/work/**" = "allow"
[bash]
"ls *" = "allow"
"rm *" = "deny"
[tool]
"WebFetch" = "allow"
"""
    )
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml"),
        "PATH": os.environ.get("PATH", ""),
    }
    return Policy.load(str(project), config_files=[str(policy_file)], env=env), project


def action(world: tuple[Policy, Path], server: str, tool: str, arguments: Any) -> Action:
    policy, project = world
    return decide_call(policy, server, tool, arguments, cwd=str(project)).action


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("read_text_file", {"path": "ok.txt"}, Action.ALLOW),
        ("read_text_file", {"path": "~/.aws/credentials"}, Action.DENY),
        ("read_text_file", {"path": "link"}, Action.DENY),  # through a symlink
        ("read_text_file", {"path": "dirlink/credentials"}, Action.DENY),
        ("read_text_file", {"path": "dirlink/../work/../.aws/credentials"}, Action.DENY),
        ("read_text_file", {"uri": "file:///{home}/.aws/credentials"}, Action.DENY),
        ("search_files", {"path": "~", "pattern": "*"}, Action.ASK),  # recursive over a deny
        ("write_file", {"path": "new.txt", "content": "x"}, Action.ALLOW),
        ("write_file", {"path": "~/.bashrc", "content": "x"}, Action.ASK),
        ("frobnicate", {"x": "~/.aws/credentials"}, Action.DENY),
        ("frobnicate", {"x": "file://host/etc/passwd"}, Action.ASK),
    ],
)
def test_call_decisions_check_path_arguments(
    world: tuple[Policy, Path], tool: str, arguments: dict[str, Any], expected: Action
) -> None:
    home = str(world[1].parent)
    arguments = {k: v.replace("{home}", home.lstrip("/")) for k, v in arguments.items()}
    assert action(world, "fs", tool, arguments) is expected


def test_commands_go_through_the_bash_analysis(world: tuple[Policy, Path]) -> None:
    assert action(world, "sh", "run_command", {"command": "ls -la"}) is Action.ALLOW
    assert action(world, "sh", "run_command", {"command": "ls; rm -rf ~"}) is Action.DENY
    assert action(world, "sh", "run_command", {"command": "cat ~/.aws/credentials"}) is (
        Action.DENY
    )


def test_urls_are_web_fetch_checks_and_malformed_ones_ask(world: tuple[Policy, Path]) -> None:
    assert action(world, "web", "fetch", {"url": "https://example.org/a"}) is Action.ALLOW
    assert action(world, "web", "fetch", {"url": "https://exa mple.org/"}) is Action.ASK
    assert action(world, "web", "fetch", {"url": "https://user@host/"}) is Action.ASK
    assert action(world, "web", "fetch", {"url": "gopher://host/"}) is Action.ASK
    assert action(world, "web", "fetch", {"url": "http://[::1/"}) is Action.ASK


def test_a_denied_name_needs_no_argument_lookups(world: tuple[Policy, Path]) -> None:
    assert action(world, "other", "anything", {"path": "ok.txt"}) is Action.ASK  # default


# --- argument conditions ---------------------------------------------------------------

CONDITIONS = """
default = "ask"
[mcp]
"slack:post_message" = "allow"
"slack:post_message(channel=*)" = { action = "ask", match = ["slack:post_message(channel=#x)"] }
"slack:post_message(channel=#bots)" = "allow"
"github:*" = "allow"
"github:*(repo=acme/secret-*)" = { action = "deny", reason = "the secret repos" }
"""


@pytest.mark.parametrize(
    ("server", "tool", "arguments", "expected"),
    [
        ("slack", "post_message", {"channel": "#bots", "text": "hi"}, Action.ALLOW),
        ("slack", "post_message", {"channel": "#general", "text": "hi"}, Action.ASK),
        ("slack", "post_message", {"channel": "#bots\n", "text": "hi"}, Action.ASK),
        ("slack", "post_message", {"text": "no channel"}, Action.ALLOW),
        ("github", "create_issue", {"repo": "acme/web", "title": "x"}, Action.ALLOW),
        ("github", "create_issue", {"repo": "acme/secret-keys", "title": "x"}, Action.DENY),
        ("github", "create_issue", {"opts": [{"repo": "acme/secret-x"}]}, Action.ALLOW),
    ],
)
def test_argument_conditions_tighten_a_call(
    tmp_path: Path, server: str, tool: str, arguments: dict[str, Any], expected: Action
) -> None:
    policy_file = tmp_path / "p.toml"
    policy_file.write_text(CONDITIONS)
    env = {"HOME": str(tmp_path), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml")}
    policy = Policy.load(str(tmp_path), config_files=[str(policy_file)], env=env)
    assert not policy.errors
    decision = decide_call(policy, server, tool, arguments, cwd=str(tmp_path))
    assert decision.action is expected
    if expected is Action.DENY:
        assert "the secret repos" in decision.reason


def test_the_policy_examples_in_docs_mcp_load_cleanly(tmp_path: Path) -> None:
    import re

    text = (Path(__file__).parent.parent / "docs" / "mcp.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    env = {"HOME": str(tmp_path), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml")}
    for n, block in enumerate(blocks):
        policy_file = tmp_path / f"doc{n}.toml"
        policy_file.write_text(block)
        policy = Policy.load(str(tmp_path), config_files=[str(policy_file)], env=env)
        assert not policy.errors, (block, policy.errors)


def test_server_names_come_from_the_command() -> None:
    from askgate.mcp.cli import server_name

    assert server_name(["npx", "-y", "@modelcontextprotocol/server-filesystem", "/x"]) == (
        "filesystem"
    )
    assert server_name(["uvx", "mcp-server-git"]) == "git"
    assert server_name(["python3", "-m", "mcp_server_time"]) == "time"
    assert server_name(["docker", "run", "-i", "--rm", "mcp/github"]) == "github"
    assert server_name(["/opt/x/node_modules/.bin/mcp-server-everything"]) == "everything"


def test_the_gateway_never_imports_the_mcp_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys, askgate.mcp.cli, askgate.mcp.relay, askgate.mcp.listen, "
        "askgate.mcp.upstreams, askgate.mcp.gateway; "
        "sys.exit(1 if 'mcp' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
