"""`askgate hook gemini`: the Gemini CLI BeforeTool contract (reference/agent-hooks.md §3),
from its payloads.

Gemini fails open on a crash or an empty answer, so every failure must print the deny JSON
on stdout (Gemini reads it whatever the exit code) and exit 2 with the reason on stderr.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_hooks import POLICY, hook_env, install_approval_server, read_audit, run_hook
from askgate.hookrt import decide as hookrt_decide
from askgate.prompters.base import PromptState
from conftest import ScriptedPrompter


def payload(tmp_path: Path, tool: str = "run_shell_command", **tool_input: Any) -> dict[str, Any]:
    # The project beside HOME (tmp_path/home), not above it: a search of a directory that
    # holds HOME reaches the built-in secrets (~/.ssh …) and asks.
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return {
        "session_id": "gemini-session-1",
        "transcript_path": str(tmp_path / "t.json"),
        "cwd": str(project),
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-12-01T00:00:00.000Z",
        "tool_name": tool,
        "tool_input": tool_input,
    }


def mcp_payload(tmp_path: Path, server: str, tool: str) -> dict[str, Any]:
    body = payload(tmp_path, tool=f"mcp_{server}_{tool}", id=1)
    body["mcp_context"] = {"server_name": server, "tool_name": tool, "command": "srv", "args": []}
    return body


def assert_denied_on_every_channel(run, text: str) -> None:
    assert run.returncode == 2
    assert run.json["decision"] == "deny"
    assert text in run.json["reason"]
    assert run.stderr.strip()


@pytest.mark.parametrize(
    ("tool", "tool_input", "decision", "surface"),
    [
        ("run_shell_command", {"command": "git status"}, "allow", "bash"),
        ("run_shell_command", {"command": "rm -rf build"}, "deny", "bash"),
        ("run_shell_command", {"command": "echo hi && rm -rf /"}, "deny", "bash"),
        ("run_shell_command", {"command": "make deploy"}, "ask", "bash"),
        ("write_file", {"file_path": "ok.txt", "content": "x"}, "allow", "write"),
        ("write_file", {"file_path": "secret.env", "content": "x"}, "deny", "write"),
        (
            "replace",
            {"file_path": "secret.env", "old_string": "a", "new_string": "b"},
            "deny",
            "write",
        ),
        (
            "replace",
            {"file_path": "src/main.py", "old_string": "a", "new_string": "b"},
            "ask",
            "write",
        ),
        ("read_file", {"file_path": "README.md"}, "allow", "read"),
        ("list_directory", {"dir_path": "."}, "allow", "read"),
        ("glob", {"pattern": "*.py"}, "allow", "read"),
        ("grep_search", {"pattern": "x"}, "allow", "read"),
        ("web_fetch", {"prompt": "https://example.com"}, "deny", "net"),  # its URL, tool deny holds
        ("google_web_search", {"query": "x"}, "ask", "tool"),
    ],
)
def test_decisions(
    tmp_path: Path, tool: str, tool_input: dict, decision: str, surface: str
) -> None:
    run = run_hook("gemini", payload(tmp_path, tool, **tool_input), tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.json["decision"] == decision
    assert run.json["reason"].strip()
    if decision == "ask":
        assert run.json["systemMessage"] == run.json["reason"]
    [record] = run.audit
    assert record["client"] == "gemini"
    assert record["surface"] == surface
    assert record["event"] == ("ask_delegated" if decision == "ask" else "decision")


@pytest.mark.parametrize(
    ("server", "tool", "decision"),
    [("github", "get_issue", "allow"), ("my_server", "delete_all", "deny")],
)
def test_mcp_tools_are_named_from_mcp_context(
    tmp_path: Path, server: str, tool: str, decision: str
) -> None:
    """`mcp_my_server_delete_all` cannot be split by its underscores; mcp_context names both."""
    run = run_hook("gemini", mcp_payload(tmp_path, server, tool), tmp_path)
    assert run.json["decision"] == decision
    assert run.audit[-1]["value"] == f"{server}:{tool}"


def test_mcp_name_without_context_is_a_plain_tool(tmp_path: Path) -> None:
    body = payload(tmp_path, tool="mcp_my_server_delete_all", id=1)
    run = run_hook("gemini", body, tmp_path, policy='default = "ask"\n')
    assert run.json["decision"] == "ask"
    assert run.audit[-1]["surface"] == "tool"


def _in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, body: bytes | dict[str, Any]):
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    for key, value in hook_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    stdout = io.TextIOWrapper(io.BytesIO())
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    from askgate.hooks.runner import main as hook_main

    code = hook_main("gemini", ["--config", str(policy)])
    stdout.flush()
    return code, stdout.buffer.getvalue(), stderr.getvalue()


@pytest.mark.parametrize(
    ("state", "decision"),
    [
        (PromptState.APPROVED, "allow"),
        (PromptState.DENIED, "deny"),
        (PromptState.TIMED_OUT, "deny"),
        (PromptState.UNAVAILABLE, "deny"),
    ],
)
def test_ask_goes_to_the_approval_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, state, decision
) -> None:
    prompter = ScriptedPrompter([state])
    install_approval_server(monkeypatch, prompter)
    code, out, err = _in_process(monkeypatch, tmp_path, payload(tmp_path, command="make deploy"))
    assert code == 0, err
    assert json.loads(out)["decision"] == decision
    assert len(prompter.seen) == 1
    [record] = read_audit(tmp_path)
    assert (record["action"], record["client"]) == (decision, "gemini")


def test_unavailable_server_falls_back_to_geminis_prompt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    install_approval_server(monkeypatch, ScriptedPrompter([], available=False))
    code, out, _ = _in_process(monkeypatch, tmp_path, payload(tmp_path, command="make"))
    assert (code, json.loads(out)["decision"]) == (0, "ask")


# --- failures: deny JSON on stdout and exit 2 ------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b"{not json", b"", b"null", b'{"hook_event_name": "BeforeTool"}', b"[" * 100_000],
)
def test_malformed_input_is_denied(tmp_path: Path, data: bytes) -> None:
    assert_denied_on_every_channel(run_hook("gemini", data, tmp_path), "not a Gemini BeforeTool")


def test_other_event_is_denied(tmp_path: Path) -> None:
    body = payload(tmp_path, command="ls")
    body["hook_event_name"] = "AfterTool"
    assert_denied_on_every_channel(run_hook("gemini", body, tmp_path), "got 'AfterTool'")


def test_unknown_tool_follows_the_default(tmp_path: Path) -> None:
    run = run_hook("gemini", payload(tmp_path, "frobnicate"), tmp_path, policy='default="deny"\n')
    assert run.json["decision"] == "deny"


def test_shell_call_without_a_command_is_denied(tmp_path: Path) -> None:
    run = run_hook("gemini", payload(tmp_path, description="x"), tmp_path)
    assert run.json["decision"] == "deny"
    assert "malformed tool input" in run.json["reason"]


def test_broken_policy_never_allows(tmp_path: Path) -> None:
    run = run_hook(
        "gemini", payload(tmp_path, command="git status"), tmp_path, policy=POLICY + "x = = =\n"
    )
    assert run.json["decision"] == "ask"
    assert "failed to load" in run.json["reason"]
    managed = tmp_path / "managed.toml"
    managed.write_text("x = = =")
    env = hook_env(tmp_path, ASKGATE_MANAGED_POLICY=str(managed))
    run = run_hook("gemini", payload(tmp_path, command="git status"), tmp_path, env=env)
    assert run.json["decision"] == "deny", "a broken managed file denies everything"


def test_internal_error_is_denied(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(hookrt_decide, "load_policy", explode)
    code, out, err = _in_process(monkeypatch, tmp_path, payload(tmp_path, command="ls"))
    assert code == 2
    assert json.loads(out)["decision"] == "deny"
    assert "boom" in json.loads(out)["reason"] and "boom" in err


def test_import_error_is_denied(tmp_path: Path) -> None:
    run = run_hook(
        "gemini",
        payload(tmp_path, command="ls"),
        tmp_path,
        python_prelude="import sys; sys.modules['askgate.adapters.gemini'] = None",
    )
    assert_denied_on_every_channel(run, "could not load")
    assert "hook gemini is unavailable" in run.stderr


def test_unknown_argument_is_denied(tmp_path: Path) -> None:
    run = run_hook("gemini", payload(tmp_path, command="ls"), tmp_path, "--frob")
    assert_denied_on_every_channel(run, "unknown argument")


def test_broken_approval_server_configuration_denies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A server prompter that exists but cannot be built fails closed (it does not silently
    fall back to Gemini's prompt)."""

    class Broken:
        def available(self) -> bool:
            raise RuntimeError("server misconfigured")

    install_approval_server(monkeypatch, Broken())
    code, out, err = _in_process(monkeypatch, tmp_path, payload(tmp_path, command="ls"))
    assert code == 2
    assert json.loads(out)["decision"] == "deny"
    assert "server misconfigured" in err
