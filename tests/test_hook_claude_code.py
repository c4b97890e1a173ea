"""`askgate hook claude-code` as a real subprocess, the way Claude Code runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from waits import SAFETY_TIMEOUT

POLICY = """
default = "ask"
[bash]
"git status *" = "allow"
"rm -rf /*" = { action = "deny", reason = "never" }
[read]
"**" = "allow"
"""


def run_hook(payload: bytes | dict, tmp_path, *args: str) -> subprocess.CompletedProcess:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed.toml"),
        "ASKGATE_AUDIT_LOG": str(tmp_path / "review.jsonl"),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "askgate.cli",
            "hook",
            "claude-code",
            "--config",
            str(policy),
            *args,
        ],
        input=data,
        capture_output=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
    )


def hook_payload(tmp_path, tool="Bash", **tool_input) -> dict:
    return {
        "session_id": "f6b377db",
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_1",
        "permission_mode": "default",
    }


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        ("git status", "allow"),
        ("git status && rm -rf /", "deny"),
        ("make deploy", "ask"),
    ],
)
def test_bash_decisions(tmp_path, command: str, decision: str) -> None:
    proc = run_hook(hook_payload(tmp_path, command=command), tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["permissionDecision"] == decision
    log = [json.loads(x) for x in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert log[-1]["event"] == ("ask_delegated" if decision == "ask" else "decision")


def test_deny_reason_reaches_the_model(tmp_path) -> None:
    proc = run_hook(hook_payload(tmp_path, command="rm -rf /"), tmp_path)
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "never" in out["permissionDecisionReason"]


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"not json",
        b"\xff\xfe\x00garbage",
        b'{"hook_event_name": "PreToolUse"}',
        b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {}, "cwd": "/"}',
        b"[1, 2, 3]",
    ],
)
def test_bad_input_blocks_the_call(tmp_path, payload: bytes) -> None:
    proc = run_hook(payload, tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"askgate: blocked" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_bad_policy_file_never_allows(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[bash]\n"git status *" = "alow"\n')
    proc = run_hook(hook_payload(tmp_path, command="git status"), tmp_path, "--config", str(bad))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask"
    assert "failed to load" in out["permissionDecisionReason"]


def test_malformed_tool_input_is_denied(tmp_path) -> None:
    proc = run_hook(hook_payload(tmp_path, tool="Read", file_path=42), tmp_path)
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"


def test_console_entry_runs_the_hook_without_the_full_cli(tmp_path) -> None:
    """`python -m askgate hook claude-code` decides, and never loads argparse or rich:
    the hook runs once per tool call, so its import path stays lean."""
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    script = (
        "import io, json, sys\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))\n"
        "from askgate.entry import main\n"
        "code = main(['hook', 'claude-code', '--config', sys.argv[2]])\n"
        "names = ('argparse', 'rich', 'asyncio', 'watchfiles')\n"
        "heavy = sorted(m for m in names if m in sys.modules)\n"
        "print(json.dumps({'code': code, 'heavy': heavy}), file=sys.stderr)\n"
    )
    payload = json.dumps(hook_payload(tmp_path, command="git status"))
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "ASKGATE_AUDIT_LOG": "off",
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", script, payload, str(policy)],
        capture_output=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
    )
    report = json.loads(proc.stderr.decode().strip().splitlines()[-1])
    assert report == {"code": 0, "heavy": []}
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_missing_policy_file_is_named_in_the_ask(tmp_path) -> None:
    missing = tmp_path / "nope.toml"
    proc = run_hook(hook_payload(tmp_path, command="make"), tmp_path, "--config", str(missing))
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask"
    assert "failed to load" in out["permissionDecisionReason"]
    assert "nope.toml" in out["permissionDecisionReason"]


# --- PermissionRequest (agent-hooks.md §1.4) ------------------------------------------------


def permission_payload(tmp_path, tool="Bash", **tool_input) -> dict:
    payload = hook_payload(tmp_path, tool, **tool_input)
    payload["hook_event_name"] = "PermissionRequest"
    del payload["tool_use_id"]  # PermissionRequest input has none
    payload["permission_suggestions"] = [
        {"type": "addRules", "rules": [{"toolName": tool}], "behavior": "allow"}
    ]
    return payload


def test_permission_request_allow(tmp_path) -> None:
    proc = run_hook(permission_payload(tmp_path, command="git status"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    [record] = [json.loads(x) for x in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert record["event"] == "decision" and record["resolution"] == "policy_allow"


def test_permission_request_deny_carries_the_reason(tmp_path) -> None:
    proc = run_hook(permission_payload(tmp_path, command="rm -rf /"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PermissionRequest"
    assert out["decision"]["behavior"] == "deny"
    assert "never" in out["decision"]["message"]
    assert set(out["decision"]) == {"behavior", "message"}


def test_permission_request_ask_leaves_the_prompt_to_claude(tmp_path) -> None:
    """An ask answers nothing (exit 0, empty stdout): Claude Code shows its own prompt."""
    proc = run_hook(permission_payload(tmp_path, command="make deploy"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    [record] = [json.loads(x) for x in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert record["event"] == "ask_delegated"


@pytest.mark.parametrize(
    ("mutate", "args"),
    [
        pytest.param(lambda p: p.pop("tool_name"), (), id="missing-tool-name"),
        pytest.param(lambda p: p.update(tool_input="rm -rf /"), (), id="tool-input-not-object"),
        pytest.param(lambda p: p.update(cwd=42), (), id="cwd-not-string"),
        pytest.param(lambda p: None, ("--confg", "x.toml"), id="unknown-argument"),
        pytest.param(lambda p: p["tool_input"].update(file_path=42), (), id="bad-file-path"),
    ],
)
def test_permission_request_errors_print_a_deny(tmp_path, mutate, args) -> None:
    """Claude Code ignores exit 2 for PermissionRequest: every failure is a deny decision."""
    payload = permission_payload(tmp_path, tool="Read", file_path="/etc/hostname")
    mutate(payload)
    proc = run_hook(payload, tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PermissionRequest"
    assert out["decision"]["behavior"] == "deny"
    assert out["decision"]["message"].startswith(("askgate", "malformed tool input"))


def test_permission_request_internal_error_is_a_deny(tmp_path) -> None:
    from askgate.adapters.claude_code import respond

    def exploding_loader(*_args):
        raise RuntimeError("policy store exploded")

    payload = json.dumps(permission_payload(tmp_path, command="git status")).encode()
    reply = respond(
        payload,
        env={"HOME": str(tmp_path), "ASKGATE_AUDIT_LOG": "off"},
        policy_loader=exploding_loader,
    )
    assert reply.code == 0
    out = json.loads(reply.stdout)["hookSpecificOutput"]
    assert out["decision"]["behavior"] == "deny"
    assert "policy store exploded" in out["decision"]["message"]


def test_pre_tool_use_internal_error_blocks(tmp_path) -> None:
    from askgate.adapters.claude_code import respond

    def exploding_loader(*_args):
        raise RuntimeError("policy store exploded")

    payload = json.dumps(hook_payload(tmp_path, command="git status")).encode()
    reply = respond(
        payload,
        env={"HOME": str(tmp_path), "ASKGATE_AUDIT_LOG": "off"},
        policy_loader=exploding_loader,
    )
    assert (reply.code, reply.stdout) == (2, b"")
    assert "policy store exploded" in reply.stderr and "\n" not in reply.stderr


def test_broken_msgspec_still_answers_a_permission_request_with_deny(tmp_path) -> None:
    """A half-upgraded install (msgspec fails to import) during a PermissionRequest: the
    answer is a deny decision, since Claude Code ignores exit 2 for this event."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "msgspec.py").write_text("raise ImportError('half-upgraded msgspec')\n")
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(shadow), src]),
        "HOME": str(tmp_path),
        "ASKGATE_DAEMON": "off",
        "ASKGATE_AUDIT_LOG": "off",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "askgate", "hook", "claude-code"],
        input=json.dumps(permission_payload(tmp_path, command="git status")).encode(),
        capture_output=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["decision"]["behavior"] == "deny"
    assert "half-upgraded msgspec" in out["decision"]["message"]


def test_hook_json_is_the_bytes_json_dumps_would_write() -> None:
    """The runtime's `encode` writes with msgspec: for every code
    point, in keys and values, the same bytes as compact `json.dumps(ensure_ascii=False)`;
    a lone surrogate takes the json path, which writes it as an escape."""
    from askgate.hookrt.contract import encode as _dumps

    def reference(body: dict) -> bytes:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", "backslashreplace") + b"\n"

    chunk = 4096
    for start in range(0, 0x110000, chunk):
        text = "".join(chr(c) for c in range(start, start + chunk) if not 0xD800 <= c <= 0xDFFF)
        body = {"hookSpecificOutput": {"k" + text[:64]: text, "n": None, "b": True, "i": 7}}
        assert _dumps(body) == reference(body), hex(start)
    lone = {"reason": "x\udc80y"}
    assert _dumps(lone) == reference(lone) == b'{"reason":"x\\udc80y"}\n'
