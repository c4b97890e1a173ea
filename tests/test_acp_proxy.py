"""`askgate acp -- AGENT…` end to end: a small ACP client (tests/acp_harness.py) drives the
real proxy process, which runs a small ACP agent (tests/acp_test_agent.py) that executes a
tool call only when an allow option is selected. "Ran" is a marker file in the session's
working directory, never what the agent reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_harness import AcpClient, proxy_argv, proxy_env, wait_for

POLICY = """
default = "ask"
[bash]
"echo *" = "allow"
"touch *" = "allow"
"rm *" = { action = "deny", reason = "no deleting here" }
[write]
"**/marker*" = "allow"
"**/secret*" = { action = "deny", reason = "secrets are off limits" }
"""
MARKER = "marker.txt"


def start(
    tmp_path: Path,
    *,
    server: str | None = None,
    on_permission: Any = None,
) -> tuple[AcpClient, Path, str]:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    (project / ".git").mkdir(exist_ok=True)
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    client = AcpClient(
        proxy_argv(policy),
        env=proxy_env(tmp_path, server=server),
        cwd=tmp_path,
        on_permission=on_permission,
    )
    init = client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert init["protocolVersion"] == 1
    session = client.call("session/new", {"cwd": str(project), "mcpServers": []})["sessionId"]
    return client, project, session


def prompt(client: AcpClient, session: str, call: dict[str, Any]) -> int:
    text = json.dumps(call)
    return client.start(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    )


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "review.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def agent_sent(tmp_path: Path) -> list[bytes]:
    return (tmp_path / "agent-sent.jsonl").read_bytes().splitlines(keepends=True)


def test_allowed_command_runs_without_asking_the_client(tmp_path: Path) -> None:
    client, project, session = start(tmp_path)
    try:
        done = client.wait(
            prompt(client, session, {"kind": "execute", "command": f"touch {MARKER}"})
        )
        assert done["result"]["stopReason"] == "end_turn"
        assert (project / MARKER).exists()
        assert client.permission_requests == []
        # every other line reached the client exactly as the agent wrote it
        sent = [x for x in agent_sent(tmp_path) if b"session/request_permission" not in x]
        assert [x for x in client.received if x in sent] == sent
        records = audit(tmp_path)
        seen = [r for r in records if r["event"] == "tool_call_seen"]
        decided = [r for r in records if r["event"] == "decision"]
        assert len(seen) == 1 and seen[0]["input"] == {"command": f"touch {MARKER}"}
        assert decided[0]["action"] == "allow"
        assert {r["client"] for r in records} == {"acp:acp_test_agent"}
    finally:
        assert client.close() == 0


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        ({"kind": "execute", "command": f"rm -f x; touch {MARKER}"}, "no deleting here"),
        ({"kind": "execute", "command": f"touch {MARKER} && rm -rf /"}, "no deleting here"),
        ({"kind": "edit", "path": "secret.env", "content": "x"}, "secrets are off limits"),
    ],
)
def test_denied_call_does_not_run_and_the_client_is_told(
    tmp_path: Path, call: dict[str, Any], reason: str
) -> None:
    client, project, session = start(tmp_path)
    try:
        done = client.wait(prompt(client, session, call))
        assert done["result"]["stopReason"] == "end_turn"
        assert not (project / MARKER).exists() and not (project / "secret.env").exists()
        assert client.permission_requests == []
        texts = [
            u["update"]["content"]["text"]
            for u in client.updates()
            if u["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert any(reason in t for t in texts), texts
        statuses = [
            u["update"]["status"]
            for u in client.updates()
            if u["update"]["sessionUpdate"] == "tool_call_update"
        ]
        assert statuses == ["failed"]
    finally:
        client.close()


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
def test_ask_is_forwarded_unchanged_and_the_clients_answer_counts(
    tmp_path: Path, answer: str
) -> None:
    def choose(message: dict[str, Any]) -> dict[str, Any]:
        [option] = [o for o in message["params"]["options"] if o["kind"] == answer]
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    client, project, session = start(tmp_path, on_permission=choose)
    try:
        call = {"kind": "execute", "command": f"echo hi > {MARKER} && make -v > /dev/null || true"}
        client.wait(prompt(client, session, call))
        [forwarded] = client.permission_requests
        [original] = [x for x in agent_sent(tmp_path) if b"session/request_permission" in x]
        assert json.dumps(forwarded).encode() == json.dumps(json.loads(original)).encode()
        assert original in client.received  # byte for byte
        assert (project / MARKER).exists() is (answer == "allow_once")
        [delegated] = [r for r in audit(tmp_path) if r["event"] == "ask_delegated"]
        assert delegated["delegated_to"] == "acp-client"
    finally:
        client.close()


@pytest.mark.parametrize(("mode", "runs"), [("approve", True), ("deny", False)])
def test_ask_goes_to_the_approval_server_when_configured(
    tmp_path: Path, mode: str, runs: bool
) -> None:
    client, project, session = start(tmp_path, server=mode)
    try:
        client.wait(
            prompt(client, session, {"kind": "execute", "command": f"echo > {MARKER}; make"})
        )
        assert client.permission_requests == []  # the phone answered, not the editor
        assert (project / MARKER).exists() is runs
        assert "make" in (tmp_path / "server-asked.log").read_text()
    finally:
        client.close()


def test_cancelled_turn_answers_cancelled_while_the_server_waits(tmp_path: Path) -> None:
    client, project, session = start(tmp_path, server="hang")
    try:
        turn = prompt(client, session, {"kind": "execute", "command": f"echo > {MARKER}; make"})
        asked = tmp_path / "server-asked.log"
        wait_for(asked.exists, "the approval server to be asked")
        client.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
        )
        assert client.wait(turn)["result"]["stopReason"] == "cancelled"
        assert not (project / MARKER).exists()
    finally:
        client.close()


def test_agent_that_cannot_start_is_a_one_line_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "askgate", "acp", "--", str(tmp_path / "no-such-agent")],
        capture_output=True,
        text=True,
        timeout=60,
        env=proxy_env(tmp_path),
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("askgate acp: error: cannot start the agent")
    assert proc.stderr.count("\n") == 1


def test_broken_approval_server_setup_is_a_one_line_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    stub = tmp_path / "broken-stub"
    stub.mkdir()
    (stub / "sitecustomize.py").write_text(
        "import sys, types\n"
        "m = types.ModuleType('askgate.prompters.server')\n"
        "def from_env(env):\n"
        "    raise RuntimeError('server misconfigured')\n"
        "m.from_env = from_env\n"
        "m.configured_prompter = from_env\n"
        "sys.modules['askgate.prompters.server'] = m\n"
    )
    env = proxy_env(tmp_path) | {"PYTHONPATH": str(stub)}
    proc = subprocess.run(
        [sys.executable, "-m", "askgate", "acp", "--", sys.executable, "-c", "pass"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("askgate acp: error:") and "server misconfigured" in proc.stderr
    assert proc.stderr.count("\n") == 1
