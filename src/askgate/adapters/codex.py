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
``*** Move to:`` path of the patch is a ``Write`` request, and the strictest answer wins
(askgate.policy.patch_headers, which the shell analysis of ``apply_patch`` shares).

Every failure (unreadable input, unknown event, internal error) exits 2 with the reason on
stderr, which Codex counts as a block for PreToolUse and a deny for PermissionRequest; Codex
ignores exit 2 with an empty stderr, so the reason is never empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from askgate.hookrt.contract import (
    BLOCK,
    AskRoute,
    HookCall,
    HookError,
    Reply,
    Verdict,
    decode,
    encode,
    one_line,
)
from askgate.policy.patch_headers import header_paths

if TYPE_CHECKING:
    from askgate.outcome import ToolRequest

NAME = "codex"
PRE_TOOL_USE = "PreToolUse"
PERMISSION_REQUEST = "PermissionRequest"
MAX_REASON = 4_000
# Installed hook timeout is 600 s; an approval-server ask must end (in deny) before it.
PROMPT_BUDGET_SECONDS = 540.0


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


class PreToolUseDecision(msgspec.Struct, omit_defaults=True):
    hookEventName: str  # Codex's field names
    permissionDecision: str
    permissionDecisionReason: str
    updatedInput: dict[str, Any] | None = None


class PreToolUseOutput(msgspec.Struct):
    hookSpecificOutput: PreToolUseDecision


class PermissionBehavior(msgspec.Struct, omit_defaults=True):
    behavior: str
    message: str | None = None


class PermissionRequestDecision(msgspec.Struct):
    hookEventName: str
    decision: PermissionBehavior


class PermissionRequestOutput(msgspec.Struct):
    hookSpecificOutput: PermissionRequestDecision


def parse_input(data: bytes) -> CodexInput:
    hook = decode(data, CodexInput, "Codex hook")
    if hook.hook_event_name not in (PRE_TOOL_USE, PERMISSION_REQUEST):
        raise HookError(
            f"askgate hook codex handles {PRE_TOOL_USE} and {PERMISSION_REQUEST}, "
            f"got {hook.hook_event_name!r}"
        )
    if isinstance(hook.tool_input, str):  # a freeform tool (apply_patch) sends its text
        hook.tool_input = {"input": hook.tool_input}
    return hook


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
        text = _string_field(hook.tool_input, "input", "patch", "command") or ""
        paths = header_paths(text)
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


def _string_field(tool_input: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
    return None


def _part_id(tool_use_id: str | None, index: int, count: int) -> str | None:
    if tool_use_id is None or count == 1:
        return tool_use_id
    return f"{tool_use_id}#{index + 1}"


def _non_empty(reason: str) -> str:
    return (reason.strip() or "denied by askgate policy")[:MAX_REASON]


def pre_tool_use_deny(reason: str) -> bytes:
    return encode(PreToolUseOutput(PreToolUseDecision(PRE_TOOL_USE, "deny", _non_empty(reason))))


def pre_tool_use_allow(updated_input: dict[str, Any], reason: str) -> bytes:
    """The one "allow" Codex accepts from PreToolUse: one that rewrites the input."""
    specific = PreToolUseDecision(PRE_TOOL_USE, "allow", _non_empty(reason), dict(updated_input))
    return encode(PreToolUseOutput(specific))


def permission_decision(allowed: bool, reason: str) -> bytes:
    behavior = (
        PermissionBehavior("allow") if allowed else PermissionBehavior("deny", _non_empty(reason))
    )
    return encode(PermissionRequestOutput(PermissionRequestDecision(PERMISSION_REQUEST, behavior)))


class Codex:
    name = NAME
    client = NAME
    prompt_budget: float | None = PROMPT_BUDGET_SECONDS

    def parse(self, data: bytes, process_cwd: str | None) -> HookCall:
        import os

        hook = parse_input(data)
        if not os.path.isabs(hook.cwd):
            hook.cwd = os.path.normpath(os.path.join(process_cwd or os.getcwd(), hook.cwd))
        assert isinstance(hook.tool_input, dict)
        return HookCall(
            event=hook.hook_event_name,
            requests=requests_for(hook),
            cwd=hook.cwd,
            tool_name=hook.tool_name,
            tool_input=hook.tool_input,
            agent=hook.agent_type,
            session=hook.session_id,
        )

    def ask_route(self, call: HookCall, broken: bool) -> AskRoute:
        if call.event == PERMISSION_REQUEST:
            return "server"  # else Codex's own approval prompt
        # PreToolUse cannot ask: silence hands the call to Codex's approval flow, which is
        # right for an ask, but with a policy that failed to load Codex's own rules might
        # run it unasked (a fail-open), so that ask is refused.
        return "refuse" if broken else "delegate"

    def sandboxes(self, call: HookCall) -> bool:
        return call.event == PRE_TOOL_USE

    def render(self, call: HookCall, verdict: Verdict) -> Reply:
        if call.event == PERMISSION_REQUEST:
            if verdict.action == "ask":
                return Reply(0)  # Codex shows its own approval prompt
            return Reply(0, permission_decision(verdict.action == "allow", verdict.reason))
        if verdict.action == "deny":
            return Reply(0, pre_tool_use_deny(verdict.reason))
        if verdict.origin == "sandbox":
            if verdict.action == "ask" or verdict.updated_input is None:
                # PreToolUse cannot ask: a sandbox that would refuse to start is a deny.
                return Reply(0, pre_tool_use_deny(verdict.reason))
            reply = pre_tool_use_allow(verdict.updated_input, "askgate: runs in the kernel sandbox")
            return Reply(0, reply)
        # Allow and ask: no output at all (askgate never answers a bare "allow", which
        # Codex refuses, nor "ask", which it does not support: both would fail open).
        return Reply(0)

    def failure(self, event: str | None, text: str) -> Reply:
        """Exit 2 with the reason on stderr: Codex's block for PreToolUse and deny for
        PermissionRequest (it ignores exit 2 with an empty stderr)."""
        return Reply(BLOCK, b"", one_line(text) or "askgate: blocked")


ADAPTER = Codex()
