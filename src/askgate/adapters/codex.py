"""Codex CLI command hooks: `askgate hook codex` (PreToolUse and PermissionRequest).

Codex accepts less from a hook than Claude Code does, and treats anything it does not
accept as a failed hook, which lets the call run. So:

* **PreToolUse** can only block. Policy deny -> ``permissionDecision: "deny"`` with a
  non-empty reason; allow and ask -> no output at all (Codex's own approval flow goes on),
  except an ask made because a policy file failed to load, which is a deny here (Codex's
  own rules might otherwise run the call unasked).
  askgate never answers ``"allow"`` (Codex accepts it only with ``updatedInput``) nor
  ``"ask"`` (unsupported): both would be hook failures, and the call would run.
* **PermissionRequest** fires where Codex would show its approval prompt. Policy allow ->
  ``decision.behavior: "allow"``; deny -> ``"deny"`` with a ``message``; ask -> the approval
  server when one is configured (its answer becomes allow or deny), else no output, so
  Codex shows its own prompt and the human at the terminal decides.

``apply_patch`` is decided per file: every ``*** Add/Update/Delete File:`` and
``*** Move to:`` path of the patch is a ``Write`` request, and the strictest answer wins.

Every failure (unreadable input, unknown event, internal error) exits 2 with the reason on
stderr, which Codex counts as a block for PreToolUse and a deny for PermissionRequest; Codex
ignores exit 2 with an empty stderr, so the reason is never empty.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from askgate.adapters.common import (
    HookError,
    UsageError,
    absolute_cwd,
    approval_prompter,
    ask_reason,
    decode,
    delegate,
    open_gate,
    parse_config_args,
    preflight_all,
    read_input,
    resolve_all,
    sandboxed,
    string_field,
)

if TYPE_CHECKING:
    from askgate.gate import Gate
    from askgate.outcome import Outcome, ToolRequest

CLIENT = "codex"
PRE_TOOL_USE = "PreToolUse"
PERMISSION_REQUEST = "PermissionRequest"
MAX_REASON = 4_000
# Installed hook timeout is 600 s; an approval-server ask must end (in deny) before it.
PROMPT_BUDGET_SECONDS = 540.0
_PATCH_PATH = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


class CodexInput(msgspec.Struct, kw_only=True):
    hook_event_name: str
    tool_name: str
    tool_input: dict[str, Any] | str
    cwd: str
    session_id: str | None = None
    turn_id: str | None = None
    tool_use_id: str | None = None
    agent_id: str | None = None
    agent_type: str | None = None
    permission_mode: str | None = None
    model: str | None = None
    transcript_path: str | None = None


def parse_input(data: bytes) -> CodexInput:
    hook = decode(data, CodexInput, "Codex hook")
    if hook.hook_event_name not in (PRE_TOOL_USE, PERMISSION_REQUEST):
        raise HookError(
            f"askgate hook codex handles {PRE_TOOL_USE} and {PERMISSION_REQUEST}, "
            f"got {hook.hook_event_name!r}"
        )
    if isinstance(hook.tool_input, str):  # a freeform tool (apply_patch) sends its text
        hook.tool_input = {"input": hook.tool_input}
    hook.cwd = absolute_cwd(hook.cwd)
    return hook


def patch_paths(patch: str) -> list[str]:
    paths: list[str] = []
    for path in _PATCH_PATH.findall(patch):
        if path not in paths:
            paths.append(path)
    return paths


def requests_for(hook: CodexInput) -> list[ToolRequest]:
    """The gate requests one Codex tool call stands for."""
    from askgate.outcome import ToolRequest

    assert isinstance(hook.tool_input, dict)
    common: dict[str, Any] = {
        "cwd": hook.cwd,
        "agent": hook.agent_type,
        "session": hook.session_id,
    }
    if hook.tool_name == "apply_patch":
        text = string_field(hook.tool_input, "input", "patch", "command") or ""
        paths = patch_paths(text)
        if paths:
            return [
                ToolRequest(
                    tool="Write",
                    input={"file_path": path},
                    request_id=_part_id(hook.tool_use_id, index, len(paths)),
                    **common,
                )
                for index, path in enumerate(paths)
            ]
    return [
        ToolRequest(
            tool=hook.tool_name, input=hook.tool_input, request_id=hook.tool_use_id, **common
        )
    ]


def _part_id(tool_use_id: str | None, index: int, count: int) -> str | None:
    if tool_use_id is None or count == 1:
        return tool_use_id
    return f"{tool_use_id}#{index + 1}"


def pre_tool_use_deny(reason: str) -> bytes:
    body = {
        "hookSpecificOutput": {
            "hookEventName": PRE_TOOL_USE,
            "permissionDecision": "deny",
            "permissionDecisionReason": _non_empty(reason),
        }
    }
    return msgspec.json.encode(body) + b"\n"


def pre_tool_use_allow(updated_input: Mapping[str, Any], reason: str) -> bytes:
    """The one "allow" Codex accepts from PreToolUse: one that rewrites the input."""
    body = {
        "hookSpecificOutput": {
            "hookEventName": PRE_TOOL_USE,
            "permissionDecision": "allow",
            "permissionDecisionReason": _non_empty(reason),
            "updatedInput": dict(updated_input),
        }
    }
    return msgspec.json.encode(body) + b"\n"


def _sandboxed_or_silent(
    gate: Gate, hook: CodexInput, config_files: Sequence[str], env: Mapping[str, str]
) -> bytes:
    """An allowed call: silence (Codex's own flow goes on), or, with [sandbox] bash on, the
    shell command rewritten to run in the kernel sandbox (docs/sandbox.md). PreToolUse
    cannot ask, so a sandbox that would refuse to start is a deny with its reason."""
    if not isinstance(hook.tool_input, dict):  # a freeform tool (apply_patch): no shell
        return b""
    rewrite = sandboxed(
        gate,
        hook.tool_name,
        hook.tool_input,
        cwd=hook.cwd,
        agent=hook.agent_type,
        config_files=config_files,
        env=env,
    )
    if rewrite is None:
        return b""
    if rewrite.ask_reason is not None or rewrite.updated_input is None:
        return pre_tool_use_deny(f"askgate: {rewrite.ask_reason or 'the sandbox cannot run it'}")
    return pre_tool_use_allow(rewrite.updated_input, "askgate: runs in the kernel sandbox")


def permission_decision(outcome: Outcome) -> bytes:
    decision: dict[str, str] = {"behavior": "allow" if outcome.allowed else "deny"}
    if not outcome.allowed:
        decision["message"] = _non_empty(outcome.reason)
    body = {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": decision}}
    return msgspec.json.encode(body) + b"\n"


def _non_empty(reason: str) -> str:
    return (reason.strip() or "denied by askgate policy")[:MAX_REASON]


def run(
    data: bytes,
    *,
    config_files: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> bytes:
    """Decide one hook call; returns stdout (empty: no opinion) or raises HookError."""
    env = os.environ if env is None else env
    hook = parse_input(data)
    asking = hook.hook_event_name == PERMISSION_REQUEST
    prompter = approval_prompter(env, hook.session_id) if asking else None
    gate = open_gate(
        hook.cwd,
        client=CLIENT,
        config_files=config_files,
        agent=hook.agent_type,
        session=hook.session_id,
        env=env,
        prompter=prompter,
        prompt_timeout=PROMPT_BUDGET_SECONDS,
    )
    result = preflight_all(gate, requests_for(hook))
    if not asking:
        if isinstance(result, list):
            broken = [p for p in result if p.decision.clamped or gate.policy.errors]
            if broken:
                # Silence would hand the call to Codex's rules, which may run it unasked:
                # with a policy that failed to load, that is a fail-open. No human can be
                # asked from PreToolUse (the gate's prompter here is NoPrompter), so the
                # gate resolves the ask as confirmation_unavailable: a deny.
                outcome = resolve_all(gate, broken)
                return pre_tool_use_deny(f"{outcome.reason} ({ask_reason(gate, broken[0])})")
            # Codex's approval flow goes on; PermissionRequest answers if it would prompt.
            for pending in result:
                delegate(gate, pending, to="codex")
            return b""
        if not result.allowed:
            return pre_tool_use_deny(result.reason)
        return _sandboxed_or_silent(gate, hook, config_files, env)
    if isinstance(result, list):
        if prompter is None:
            for pending in result:
                delegate(gate, pending, to="codex")
            return b""  # Codex shows its own approval prompt
        result = resolve_all(gate, result)
    return permission_decision(result)


def main(argv: Sequence[str]) -> int:
    try:
        config_files = parse_config_args(argv, "askgate hook codex")
        data = read_input(sys.stdin.buffer)
        sys.stdout.buffer.write(run(data, config_files=config_files))
        sys.stdout.buffer.flush()
        return 0
    except (HookError, UsageError) as exc:
        print(f"askgate: blocked: {exc}", file=sys.stderr)
        return 2
    except BaseException as exc:  # exit 2 with a reason is Codex's only fail-closed answer
        print(f"askgate: blocked by an internal error: {exc!r}"[:2000], file=sys.stderr)
        return 2
