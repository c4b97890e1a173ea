"""`askgate hook codex`: the Codex hook contract (reference/agent-hooks.md §2), from its payloads.

PreToolUse may only block (deny with a non-empty reason) or say nothing; PermissionRequest
answers `decision.behavior`, or says nothing so Codex shows its own prompt. Every failure is
exit 2 with a non-empty stderr, which Codex counts as a block.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_hooks import install_approval_server, read_audit, run_hook
from askgate.hookrt import decide as hookrt_decide
from askgate.prompters.base import PromptState
from conftest import ScriptedPrompter


def payload(tmp_path: Path, event: str = "PreToolUse", tool: str = "Bash", **tool_input: Any):
    body: dict[str, Any] = {
        "session_id": "019a-session",
        "turn_id": "turn-1",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(tmp_path),
        "hook_event_name": event,
        "model": "gpt-5",
        "permission_mode": "default",
        "tool_name": tool,
        "tool_input": tool_input,
    }
    if event == "PreToolUse":
        body["tool_use_id"] = "call_1"
    return body


def assert_blocked(run, text: str) -> None:
    """Codex blocks on exit 2 only when stderr is non-empty."""
    assert run.returncode == 2
    assert run.stderr.strip(), "exit 2 with an empty stderr does not block in Codex"
    assert text in run.stderr
    assert run.stdout == b""


# --- PreToolUse ---------------------------------------------------------------------------


def test_pre_tool_use_deny_has_a_non_empty_reason(tmp_path: Path) -> None:
    run = run_hook("codex", payload(tmp_path, command="rm -rf build"), tmp_path)
    assert run.returncode == 0, run.stderr
    out = run.json["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["permissionDecision"] == "deny"
    assert "no deleting here" in out["permissionDecisionReason"]
    [record] = run.audit
    assert (record["event"], record["action"], record["client"]) == ("decision", "deny", "codex")
    assert record["request_id"] == "call_1"


def test_pre_tool_use_compound_with_a_denied_part_is_denied(tmp_path: Path) -> None:
    run = run_hook("codex", payload(tmp_path, command="git status && rm -rf /"), tmp_path)
    assert run.json["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize("command", ["git status", "make deploy"])
def test_pre_tool_use_allow_and_ask_say_nothing(tmp_path: Path, command: str) -> None:
    """Never "allow" without updatedInput, never "ask": Codex treats both as a failed hook
    and runs the call. Silence lets Codex's approval flow (and PermissionRequest) go on."""
    run = run_hook("codex", payload(tmp_path, command=command), tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == b""
    [record] = run.audit
    assert record["client"] == "codex"
    if command == "make deploy":
        assert (record["event"], record["delegated_to"]) == ("ask_delegated", "codex")
    else:
        assert (record["event"], record["action"]) == ("decision", "allow")


def test_pre_tool_use_mcp_tool(tmp_path: Path) -> None:
    denied = run_hook("codex", payload(tmp_path, tool="mcp__my_server__delete_all"), tmp_path)
    assert denied.json["hookSpecificOutput"]["permissionDecision"] == "deny"
    allowed = run_hook("codex", payload(tmp_path, tool="mcp__github__get_issue", n=1), tmp_path)
    assert allowed.stdout == b""


def test_apply_patch_is_decided_per_file(tmp_path: Path) -> None:
    patch = (
        "*** Begin Patch\n*** Add File: ok.txt\n+hi\n"
        "*** Update File: src/secret.env\n@@\n-a\n+b\n*** End Patch\n"
    )
    run = run_hook("codex", payload(tmp_path, tool="apply_patch", input=patch), tmp_path)
    out = run.json["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "secrets are off limits" in out["permissionDecisionReason"]
    values = [r["value"] for r in run.audit]
    assert any(v.endswith("secret.env") for v in values)

    ok_only = "*** Begin Patch\n*** Add File: ok.txt\n+hi\n*** End Patch\n"
    fine = run_hook("codex", payload(tmp_path, tool="apply_patch", input=ok_only), tmp_path)
    assert fine.stdout == b""


def test_apply_patch_as_freeform_text(tmp_path: Path) -> None:
    body = payload(tmp_path, tool="apply_patch")
    body["tool_input"] = "*** Begin Patch\n*** Delete File: secret.key\n*** End Patch\n"
    run = run_hook("codex", body, tmp_path)
    assert run.json["hookSpecificOutput"]["permissionDecision"] == "deny"


# --- PermissionRequest --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "behavior"), [("git status", "allow"), ("rm -f build/example", "deny")]
)
def test_permission_request_answers_by_policy(tmp_path: Path, command: str, behavior: str) -> None:
    run = run_hook("codex", payload(tmp_path, "PermissionRequest", command=command), tmp_path)
    assert run.returncode == 0, run.stderr
    out = run.json["hookSpecificOutput"]
    assert out["hookEventName"] == "PermissionRequest"
    assert out["decision"]["behavior"] == behavior
    if behavior == "deny":
        assert "no deleting here" in out["decision"]["message"]
    else:
        assert "message" not in out["decision"]
    assert run.audit[-1]["client"] == "codex"


def test_permission_request_ask_without_a_server_leaves_codex_prompting(tmp_path: Path) -> None:
    run = run_hook("codex", payload(tmp_path, "PermissionRequest", command="make"), tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == b""
    assert run.audit[-1]["event"] == "ask_delegated"


def _in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, body: dict[str, Any]):
    policy = tmp_path / "policy.toml"
    from agent_hooks import POLICY

    policy.write_text(POLICY)
    for key, value in {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml"),
        "ASKGATE_AUDIT_LOG": str(tmp_path / "review.jsonl"),
        "ASKGATE_DAEMON": "off",
    }.items():
        monkeypatch.setenv(key, value)
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(body).encode()))
    stdout = io.TextIOWrapper(io.BytesIO())
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    from askgate.hooks.runner import main as hook_main

    code = hook_main("codex", ["--config", str(policy)])
    stdout.flush()
    return code, stdout.buffer.getvalue(), stderr.getvalue()


@pytest.mark.parametrize(
    ("state", "behavior"),
    [
        (PromptState.APPROVED, "allow"),
        (PromptState.DENIED, "deny"),
        (PromptState.TIMED_OUT, "deny"),
    ],
)
def test_permission_request_ask_goes_to_the_approval_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, state, behavior
) -> None:
    prompter = ScriptedPrompter([state])
    install_approval_server(monkeypatch, prompter)
    body = payload(tmp_path, "PermissionRequest", command="make deploy")
    code, out, err = _in_process(monkeypatch, tmp_path, body)
    assert code == 0, err
    assert json.loads(out)["hookSpecificOutput"]["decision"]["behavior"] == behavior
    assert len(prompter.seen) == 1 and "make deploy" in prompter.seen[0].message
    [record] = read_audit(tmp_path)
    assert record["action"] == behavior and record["client"] == "codex"


def test_pre_tool_use_never_asks_the_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    prompter = ScriptedPrompter([])  # any prompt fails the test
    install_approval_server(monkeypatch, prompter)
    code, out, _ = _in_process(monkeypatch, tmp_path, payload(tmp_path, command="make"))
    assert (code, out) == (0, b"")


def test_an_unavailable_server_leaves_codex_prompting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    install_approval_server(monkeypatch, ScriptedPrompter([], available=False))
    body = payload(tmp_path, "PermissionRequest", command="make")
    assert _in_process(monkeypatch, tmp_path, body)[:2] == (0, b"")


# --- failures: exit 2 with a reason on stderr ---------------------------------------------


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"{not json", "not a Codex hook JSON object"),
        (b"", "not a Codex hook JSON object"),
        (b"[]", "not a Codex hook JSON object"),
        (b'{"hook_event_name": "PreToolUse"}', "not a Codex hook JSON object"),
        (b"[" * 100_000, "not a Codex hook JSON object"),
    ],
)
def test_malformed_input_blocks(tmp_path: Path, data: bytes, text: str) -> None:
    assert_blocked(run_hook("codex", data, tmp_path), text)


def test_unknown_event_blocks(tmp_path: Path) -> None:
    run = run_hook("codex", payload(tmp_path, "PostToolUse", command="ls"), tmp_path)
    assert_blocked(run, "got 'PostToolUse'")


def test_unknown_tool_follows_the_default(tmp_path: Path) -> None:
    strict = 'default = "deny"\n'
    run = run_hook("codex", payload(tmp_path, tool="frobnicate", x=1), tmp_path, policy=strict)
    assert run.json["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_tool_input_without_its_field_is_denied(tmp_path: Path) -> None:
    run = run_hook("codex", payload(tmp_path, description="no command"), tmp_path)
    out = run.json["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "malformed tool input" in out["permissionDecisionReason"]


@pytest.mark.parametrize("which", ["managed", "user"])
def test_broken_policy_blocks_pre_tool_use(tmp_path: Path, which: str) -> None:
    """A policy that failed to load turns allows into asks; in PreToolUse an ask would be
    silence, and Codex's own rules could then run the call, so it is a deny there."""
    from agent_hooks import POLICY, hook_env

    broken = tmp_path / "broken.toml"
    broken.write_text("this is = = not toml")
    env = hook_env(tmp_path, ASKGATE_MANAGED_POLICY=str(broken)) if which == "managed" else None
    policy = POLICY if which == "managed" else POLICY + "\nbroken = = =\n"
    run = run_hook(
        "codex", payload(tmp_path, command="git status"), tmp_path, policy=policy, env=env
    )
    out = run.json["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "failed to load" in out["permissionDecisionReason"]
    assert run.audit[-1]["action"] == "deny"
    if which == "user":  # the clamped ask, resolved by the gate: nobody can be asked here
        assert run.audit[-1]["resolution"] == "confirmation_unavailable"
    # PermissionRequest: never allow. A broken user file clamps to ask (the human at Codex's
    # prompt decides); a broken managed file may deny everything (the admin's floor is
    # unknown), depending on the engine's rule for managed files.
    body = payload(tmp_path, "PermissionRequest", command="git status")
    asked = run_hook("codex", body, tmp_path, policy=policy, env=env)
    assert asked.returncode == 0
    if which == "user" or not asked.stdout:
        assert asked.stdout == b""
    else:
        assert asked.json["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_internal_error_blocks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(hookrt_decide, "load_policy", explode)
    code, out, err = _in_process(monkeypatch, tmp_path, payload(tmp_path, command="ls"))
    assert (code, out) == (2, b"")
    assert "internal error" in err and "boom" in err


def test_import_error_blocks(tmp_path: Path) -> None:
    run = run_hook(
        "codex",
        payload(tmp_path, command="ls"),
        tmp_path,
        python_prelude="import sys; sys.modules['askgate.adapters.codex'] = None",
    )
    assert_blocked(run, "hook codex is unavailable")


def test_unknown_argument_blocks(tmp_path: Path) -> None:
    run = run_hook("codex", payload(tmp_path, command="ls"), tmp_path, "--frob")
    assert_blocked(run, "unknown argument")


def test_broken_approval_server_configuration_denies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class Broken:
        def available(self) -> bool:
            raise RuntimeError("server misconfigured")

    install_approval_server(monkeypatch, Broken())
    body = payload(tmp_path, "PermissionRequest", command="make")
    code, out, err = _in_process(monkeypatch, tmp_path, body)
    assert (code, out) == (2, b"")
    assert "server misconfigured" in err
