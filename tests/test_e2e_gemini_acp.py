"""End to end: the real Gemini CLI 0.61.0 in ACP mode (`gemini --acp`) behind
`askgate acp`, driven by the small ACP test client (tests/acp_harness.py), offline against the
fake model API's Gemini shape (tests/fake_model_api.py, via ``GOOGLE_GEMINI_BASE_URL``).

Gemini runs in its default approval mode, so every shell call reaches
``session/request_permission``: askgate answers it (allow -> ``proceed_once``, deny ->
``cancel``, chosen by kind) or forwards it to the client. "Ran" is a marker file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_harness import AcpClient, proxy_argv, proxy_env
from agent_e2e import GEMINI, git_project
from clients import client_bin, require_client
from fake_model_api import FakeModelAPI

GEMINI_VERSION = GEMINI.version
MARKER = "marker.txt"
POLICY = """
default = "ask"
[bash]
"touch *" = "allow"
"mkdir *" = { action = "deny", reason = "no new directories here" }
[write]
"**/marker*" = "allow"
"""


@pytest.fixture
def model() -> Iterator[FakeModelAPI]:
    with FakeModelAPI() as server:
        yield server


def run_turn(
    model: FakeModelAPI, tmp_path: Path, command: str, answer: str = "reject_once"
) -> tuple[AcpClient, Path, dict[str, Any]]:
    gemini = require_client("gemini", GEMINI_VERSION, "gemini")
    assert gemini == client_bin("gemini", GEMINI_VERSION, "gemini")
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    project = git_project(tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    model.script(GEMINI.shell(command))
    env = proxy_env(tmp_path) | {
        "HOME": str(home),
        "GEMINI_API_KEY": "dummy",
        "GOOGLE_GEMINI_BASE_URL": model.origin,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "NO_BROWSER": "1",
    }

    def choose(message: dict[str, Any]) -> dict[str, Any]:
        [option] = [o for o in message["params"]["options"] if o["kind"] == answer]
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    argv = proxy_argv(policy, [str(gemini), "--acp", "-m", "gemini-2.5-flash"])
    client = AcpClient(argv, env=env, cwd=project, on_permission=choose)
    try:
        init = client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["agentInfo"]["version"] == GEMINI_VERSION
        session = client.call("session/new", {"cwd": str(project), "mcpServers": []})
        prompt = [{"type": "text", "text": "run it"}]
        turn = client.start("session/prompt", {"sessionId": session["sessionId"], "prompt": prompt})
        result = client.wait(turn)
    finally:
        client.close()
    return client, project, result


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (tmp_path / "review.jsonl").read_text().splitlines()]


def test_allowed_command_runs_without_asking_the_editor(model, tmp_path: Path) -> None:
    client, project, result = run_turn(model, tmp_path, f"touch {MARKER}")
    assert result["result"]["stopReason"] == "end_turn"
    assert (project / MARKER).exists()
    assert client.permission_requests == []
    decisions = [r for r in audit(tmp_path) if r["event"] == "decision"]
    assert [(r["action"], r["client"]) for r in decisions] == [("allow", "acp:gemini")]


@pytest.mark.parametrize("command", ["mkdir build", f"touch {MARKER} && mkdir build"])
def test_denied_command_does_not_run(model, tmp_path: Path, command: str) -> None:
    client, project, _ = run_turn(model, tmp_path, command, answer="allow_once")
    assert not (project / MARKER).exists() and not (project / "build").exists()
    assert client.permission_requests == []
    texts = [
        u["update"]["content"].get("text", "")
        for u in client.updates()
        if u["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert any("no new directories here" in t for t in texts), texts


@pytest.mark.parametrize(("answer", "runs"), [("allow_once", True), ("reject_once", False)])
def test_ask_goes_to_the_editor(model, tmp_path: Path, answer: str, runs: bool) -> None:
    client, project, _ = run_turn(model, tmp_path, "touch other.txt", answer=answer)
    [request] = client.permission_requests
    assert request["params"]["toolCall"]["title"] == "touch other.txt"
    assert (project / "other.txt").exists() is runs
