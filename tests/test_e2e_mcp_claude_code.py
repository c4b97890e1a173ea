"""End to end: the real Claude Code CLI uses one MCP server through `askgate mcp`.

`claude -p` runs through the shared driver (tests/agent_e2e.py) against the fake model API
(tests/fake_model_api.py); its scripted model calls the filesystem server's tools by their
Claude Code names (``mcp__fs__…``). The MCP config starts the reference filesystem server
(npm) behind the gateway, and Claude Code's own settings allow those tools, so whatever is
refused was refused by askgate. The model first reads the cloud credentials (denied by a
`read` rule: the secret must not reach the model), then writes a file in the project
(allowed: the file exists afterwards).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from agent_e2e import CLAUDE_CODE_OLD, run_agent
from fake_model_api import Script, ToolCall
from mcp_harness import FILESYSTEM, SECRET, npm_server

POLICY = """
default = "ask"
[mcp]
"fs:*" = "allow"
[read]
"~/.aws/**" = { action = "deny", reason = "cloud credentials" }
[write]
"~/proj/**" = "allow"
"""


def test_claude_code_through_the_gateway_cannot_read_credentials_but_writes(
    tmp_path: Path,
) -> None:
    fs_server = npm_server(FILESYSTEM)
    home = tmp_path / "home"
    project = home / "proj"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(SECRET + "\n")
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    written = project / "report.txt"
    script = Script(
        (
            ToolCall("mcp__fs__read_text_file", {"path": str(home / ".aws" / "credentials")}),
            ToolCall("mcp__fs__write_file", {"path": str(written), "content": "all good\n"}),
        )
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
    env = {
        # Claude Code connects --mcp-config servers in the background unless told to wait:
        # the first model request must already offer the gateway's tools.
        "MCP_CONNECTION_NONBLOCKING": "false",
        "MCP_TIMEOUT": "60000",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    run = run_agent(
        CLAUDE_CODE_OLD, script, None, tmp_path=tmp_path, project=project, env=env,
        settings=settings_file, cli_args=("--mcp-config", str(config_file), "--strict-mcp-config"),
    )  # fmt: skip
    results = run.transcript
    offered = [
        sorted(
            t.get("name", "") for t in (r.body or {}).get("tools", []) if "mcp" in t.get("name", "")
        )
        for r in run.model_requests
    ]
    assert len(results) == 2, (offered, run.stderr[-3000:])
    refused, wrote = (r.text for r in results)
    assert SECRET not in json.dumps([r.body for r in run.model_requests])  # never reached the model
    assert results[0].is_error is True and "credentials" in refused
    assert results[1].is_error is not True, wrote
    assert written.read_text() == "all good\n"
    assert run.changed == ["report.txt"]
    records = run.audit
    assert {r["client"] for r in records} == {"mcp:fs"}
    assert [r["resolution"] for r in records] == ["policy_deny", "policy_allow"]
