"""Claude Code hooks: `askgate hook claude-code` for PreToolUse and PermissionRequest.

A thin adapter on the hook runtime (askgate.hookrt.contract): the hook's JSON in, its JSON out.

PreToolUse (every tool call):

* policy allow (or a yolo / infrastructure-read allow) -> ``permissionDecision: "allow"``
  (with ``updatedInput`` when the command runs in the kernel sandbox)
* policy deny -> ``"deny"`` with the reason (Claude shows it to the model)
* ask -> the approval server when one is configured, else ``"ask"``: Claude Code shows its
  own permission prompt (in ``-p`` mode, where no prompt exists, Claude Code denies the call)
* any failure -> exit 2 with one line on stderr, nothing on stdout (exit 2 blocks the call;
  before 2.1.214 exit 2 with unparseable JSON on stdout did not)

PermissionRequest (only when Claude Code would show its own prompt):

* allow -> ``{"decision": {"behavior": "allow"}}``
* deny -> ``{"decision": {"behavior": "deny", "message": reason}}``
* ask -> no output, exit 0: Claude Code's own prompt shows
* any failure, once the input is known to be a PermissionRequest -> a deny decision on
  stdout and exit 0, because Claude Code does not honour exit 2 for this event

Over the daemon's http hook (`http_body`), a blocking reply becomes the event's deny
decision: an http hook cannot block by exit code.
"""

from __future__ import annotations

import os
from typing import Any

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
    sniff_event,
)

NAME = "claude-code"
MAX_REASON = 9_000  # Claude Code caps hook output strings at 10,000 characters
PRE_TOOL_USE = "PreToolUse"
PERMISSION_REQUEST = "PermissionRequest"
EVENTS = (PRE_TOOL_USE, PERMISSION_REQUEST)

__all__ = ["ADAPTER", "BLOCK", "HookError", "Reply", "parse_input", "respond"]


# --- the hook's documented input and output ------------------------------------------------


class ClaudeCodeInput(msgspec.Struct, kw_only=True):
    """The fields of Claude Code's hook input that askgate reads (others are ignored)."""

    hook_event_name: str
    tool_name: str
    tool_input: dict[str, Any]
    cwd: str
    session_id: str | None = None
    tool_use_id: str | None = None
    agent_type: str | None = None
    agent_id: str | None = None
    permission_mode: str | None = None


class PreToolUseDecision(msgspec.Struct, omit_defaults=True):
    hookEventName: str  # Claude Code's field names
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


def pre_tool_use_output(
    decision: str, reason: str, updated_input: dict[str, Any] | None = None
) -> bytes:
    specific = PreToolUseDecision(PRE_TOOL_USE, decision, reason[:MAX_REASON], updated_input)
    return encode(PreToolUseOutput(specific))


def permission_request_output(behavior: str, message: str | None = None) -> bytes:
    decision = PermissionBehavior(behavior, None if message is None else message[:MAX_REASON])
    return encode(PermissionRequestOutput(PermissionRequestDecision(PERMISSION_REQUEST, decision)))


# --- the adapter ------------------------------------------------------------------------------


def parse_input(data: bytes, process_cwd: str | None = None) -> ClaudeCodeInput:
    """The validated hook input; HookError (naming the event when known) otherwise."""
    hook = decode(data, ClaudeCodeInput, "Claude Code hook")
    if hook.hook_event_name not in EVENTS:
        raise HookError(
            f"askgate hook claude-code handles {PRE_TOOL_USE} and {PERMISSION_REQUEST},"
            f" got {hook.hook_event_name!r}"
        )
    if not os.path.isabs(hook.cwd):
        # Relative to the hook process (what Claude Code would mean), never the daemon's.
        hook.cwd = os.path.normpath(os.path.join(process_cwd or os.getcwd(), hook.cwd))
    return hook


class ClaudeCode:
    name = NAME
    client = NAME
    prompt_budget: float | None = None  # the approval server's own budget

    def parse(self, data: bytes, process_cwd: str | None) -> HookCall:
        from askgate.outcome import ToolRequest

        hook = parse_input(data, process_cwd)
        request = ToolRequest(
            tool=hook.tool_name,
            input=hook.tool_input,
            cwd=hook.cwd,
            agent=hook.agent_type,
            session=hook.session_id,
            request_id=hook.tool_use_id,
        )
        return HookCall(
            event=hook.hook_event_name,
            requests=[request],
            cwd=hook.cwd,
            tool_name=hook.tool_name,
            tool_input=hook.tool_input,
            agent=hook.agent_type,
            session=hook.session_id,
        )

    def ask_route(self, call: HookCall, broken: bool) -> AskRoute:
        return "server"  # else Claude Code's own prompt

    def sandboxes(self, call: HookCall) -> bool:
        return call.event == PRE_TOOL_USE

    def render(self, call: HookCall, verdict: Verdict) -> Reply:
        if call.event == PERMISSION_REQUEST:
            if verdict.action == "ask":
                return Reply(0)  # no decision: Claude Code shows its own prompt
            if verdict.action == "allow":
                return Reply(0, permission_request_output("allow"))
            return Reply(0, permission_request_output("deny", verdict.reason))
        return Reply(0, pre_tool_use_output(verdict.action, verdict.reason, verdict.updated_input))

    def failure(self, event: str | None, text: str) -> Reply:
        """Block: exit 2 for PreToolUse; a deny decision for PermissionRequest."""
        line = one_line(text)
        if event == PERMISSION_REQUEST:
            return Reply(0, permission_request_output("deny", line))
        return Reply(BLOCK, b"", line)


ADAPTER = ClaudeCode()


def http_body(reply: Reply, data: bytes) -> bytes:
    """An http hook cannot block by exit code: a blocking reply becomes the event's deny
    decision; "no decision" (a PermissionRequest ask) becomes an empty JSON object."""
    if reply.code == BLOCK:
        if sniff_event(data) == PERMISSION_REQUEST:
            return permission_request_output("deny", reply.stderr)
        return pre_tool_use_output("deny", reply.stderr)
    return reply.stdout or b"{}\n"


def respond(data: bytes, **kwargs: Any) -> Reply:
    """`askgate.hookrt.decide.respond` for this adapter (the in-process answer)."""
    from askgate.hookrt.decide import respond as decide

    return decide(ADAPTER, data, **kwargs)
