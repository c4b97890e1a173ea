"""End to end: the real Claude Code CLI uses one MCP server through `askgate mcp`.

`claude -p` talks to the fake Anthropic API on 127.0.0.1 (tests/fake_anthropic.py: the real
service is unreachable here); its scripted model calls the filesystem server's tools by their
Claude Code names (``mcp__fs__…``). The MCP config starts the reference filesystem server
(npm) behind the gateway, and Claude Code's own settings allow those tools, so whatever is
refused was refused by askgate. The model first reads the cloud credentials (denied by a
`read` rule: the secret must not reach the model), then writes a file in the project
(allowed: the file exists afterwards).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from clients import require_client
from fake_anthropic import (
    FakeAnthropic,
    _Handler,
    _offers_tool,
    _tool_results_so_far,
    tool_result_text,
)
from mcp_harness import FILESYSTEM, SECRET, npm_server

CLAUDE_CODE_VERSION = "2.1.197"
RUN_TIMEOUT = 120.0
POLICY = """
default = "ask"
[mcp]
"fs:*" = "allow"
[read]
"~/.aws/**" = { action = "deny", reason = "cloud credentials" }
[write]
"~/proj/**" = "allow"
"""


class _McpToolHandler(_Handler):
    """The fake model's turns are MCP tool calls: (tool name, input) in order."""

    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()

    def _messages(self, body: Mapping[str, Any]) -> None:
        turn = _tool_results_so_far(body.get("messages"))
        with self.server.state.lock:
            serial = next(self.server.state.ids)
        model = str(body.get("model") or "claude-fake")
        if turn < len(self.calls) and _offers_tool(body, self.calls[turn][0]):
            name, tool_input = self.calls[turn]
            block: dict[str, Any] = {
                "type": "tool_use", "id": f"toolu_mcp{serial:06d}", "name": name,
                "input": dict(tool_input),
            }  # fmt: skip
            stop = "tool_use"
        else:
            block, stop = {"type": "text", "text": "Finished."}, "end_turn"
        self._stream(f"msg_mcp{serial:06d}", model, block, stop)


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic()
    server._server.RequestHandlerClass = _McpToolHandler
    server.start()
    try:
        yield server
    finally:
        server.close()


def test_claude_code_through_the_gateway_cannot_read_credentials_but_writes(
    fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    claude = require_client("claude-code", CLAUDE_CODE_VERSION, "claude")
    fs_server = npm_server(FILESYSTEM)
    home = tmp_path / "home"
    project = home / "proj"
    (project / ".git").mkdir(parents=True)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(SECRET + "\n")
    (home / ".claude").mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    written = project / "report.txt"
    _McpToolHandler.calls = (
        ("mcp__fs__read_text_file", {"path": str(home / ".aws" / "credentials")}),
        ("mcp__fs__write_file", {"path": str(written), "content": "all good\n"}),
    )
    gateway = [sys.executable, "-m", "askgate", "mcp", "--config", str(policy), "--name", "fs"]
    mcp_config = {"mcpServers": {"fs": {
        "type": "stdio", "command": gateway[0],
        "args": [*gateway[1:], "--", str(fs_server), str(home)],
    }}}  # fmt: skip
    config_file = tmp_path / "mcp.json"
    config_file.write_text(json.dumps(mcp_config))
    settings = {"permissions": {"allow": ["mcp__fs__read_text_file", "mcp__fs__write_file"]}}
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps(settings))
    review = tmp_path / "review.jsonl"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "SHELL": shutil.which("bash") or "/bin/bash",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "ANTHROPIC_BASE_URL": fake_api.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "ASKGATE_AUDIT_LOG": str(review),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed-policy.toml"),
        "ASKGATE_DAEMON": "off",
        # Claude Code connects --mcp-config servers in the background unless told to wait:
        # the first model request must already offer the gateway's tools.
        "MCP_CONNECTION_NONBLOCKING": "false",
        "MCP_TIMEOUT": "60000",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    argv = [str(claude), "-p", "do it", "--output-format", "stream-json", "--verbose",
            "--settings", str(settings_file), "--mcp-config", str(config_file),
            "--strict-mcp-config"]  # fmt: skip
    proc = subprocess.Popen(
        argv, cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        _, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, stderr = proc.communicate()
        pytest.fail(f"claude did not finish in {RUN_TIMEOUT} s; stderr: {stderr[-2000:]}")
    assert proc.returncode == 0, f"claude exited {proc.returncode}: {stderr[-2000:]}"
    results = fake_api.tool_results()
    offered = [
        sorted(
            t.get("name", "") for t in (r.body or {}).get("tools", []) if "mcp" in t.get("name", "")
        )
        for r in fake_api.message_requests()
    ]
    assert len(results) == 2, (offered, stderr[-3000:])
    refused, wrote = (tool_result_text(r) for r in results)
    assert SECRET not in json.dumps(fake_api.requests[-1].body)  # never reached the model
    assert results[0].get("is_error") is True and "credentials" in refused
    assert results[1].get("is_error") is not True, wrote
    assert written.read_text() == "all good\n"
    records = [json.loads(line) for line in review.read_text().splitlines()]
    assert {r["client"] for r in records} == {"mcp:fs"}
    assert [r["resolution"] for r in records] == ["policy_deny", "policy_allow"]
