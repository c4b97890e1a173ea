"""Gemini CLI BeforeTool command hook: `askgate hook gemini`.

Reads the hook's JSON from stdin and prints ``{"decision": …, "reason": …}``:

* policy allow -> ``"allow"`` (Gemini's own policy still stands: a hook cannot approve a call
  Gemini's policy would ask about)
* policy deny -> ``"deny"`` with the reason (Gemini returns "Tool execution blocked: reason"
  to the model)
* ask -> the approval server when one is configured (its answer becomes allow or deny),
  else ``"ask"``, which makes Gemini show its own confirmation whatever its policy says

MCP tools arrive as ``mcp_<server>_<tool>``, which cannot be split when a name holds ``_``;
the server and tool come from ``mcp_context`` instead.

Gemini fails open: a crash, a timeout, or empty output lets the call run. So every error
path here prints the deny JSON on stdout **and** exits 2 with the reason on stderr (Gemini
reads JSON on stdout whatever the exit code; plain text with exit 2 is also a deny). What
cannot be closed from here: Gemini's own timeout (it discards a slow hook's answer) and a
hook command that cannot start at all (the installed command guards that with ``|| exit 2``).
"""

from __future__ import annotations

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
)

NAME = "gemini"
BEFORE_TOOL = "BeforeTool"
MAX_REASON = 4_000
# The installed hook timeout is 600,000 ms; an approval-server ask ends (in deny) before it.
PROMPT_BUDGET_SECONDS = 540.0


class McpContext(msgspec.Struct, kw_only=True):
    server_name: str | None = None
    tool_name: str | None = None


class GeminiInput(msgspec.Struct, kw_only=True):
    hook_event_name: str
    tool_name: str
    tool_input: dict[str, Any]
    cwd: str
    session_id: str | None = None
    transcript_path: str | None = None
    timestamp: str | None = None
    mcp_context: McpContext | None = None
    original_request_name: str | None = None


class BeforeToolInput(msgspec.Struct):
    hookEventName: str  # Gemini's field names
    tool_input: dict[str, Any]


class GeminiOutput(msgspec.Struct, omit_defaults=True):
    decision: str
    reason: str
    systemMessage: str | None = None  # shown in Gemini's confirmation
    hookSpecificOutput: BeforeToolInput | None = None  # merged over the arguments


def parse_input(data: bytes) -> GeminiInput:
    hook = decode(data, GeminiInput, "Gemini BeforeTool")
    if hook.hook_event_name != BEFORE_TOOL:
        raise HookError(f"askgate hook gemini handles {BEFORE_TOOL}, got {hook.hook_event_name!r}")
    return hook


def tool_name(hook: GeminiInput) -> str:
    """The gate's name for the tool (MCP tools spelled ``mcp__server__tool``)."""
    from askgate.tools import mcp_tool_name

    mcp = hook.mcp_context
    if mcp is not None and mcp.server_name and mcp.tool_name:
        return mcp_tool_name(mcp.server_name, mcp.tool_name)
    return hook.tool_name


def output(decision: str, reason: str, tool_input: dict[str, Any] | None = None) -> bytes:
    reason = (reason.strip() or f"askgate: {decision}")[:MAX_REASON]
    body = GeminiOutput(
        decision,
        reason,
        systemMessage=reason if decision == "ask" else None,
        hookSpecificOutput=None
        if tool_input is None
        else BeforeToolInput(BEFORE_TOOL, dict(tool_input)),
    )
    return encode(body)


class Gemini:
    name = NAME
    client = NAME
    prompt_budget: float | None = PROMPT_BUDGET_SECONDS

    def parse(self, data: bytes, process_cwd: str | None) -> HookCall:
        import os

        from askgate.outcome import ToolRequest

        hook = parse_input(data)
        if not os.path.isabs(hook.cwd):
            hook.cwd = os.path.normpath(os.path.join(process_cwd or os.getcwd(), hook.cwd))
        request = ToolRequest(
            tool=tool_name(hook), input=hook.tool_input, cwd=hook.cwd, session=hook.session_id
        )
        return HookCall(
            event=BEFORE_TOOL,
            requests=[request],
            cwd=hook.cwd,
            tool_name=hook.tool_name,
            tool_input=hook.tool_input,
            session=hook.session_id,
        )

    def ask_route(self, call: HookCall, broken: bool) -> AskRoute:
        return "server"  # else "ask": Gemini shows its own confirmation

    def sandboxes(self, call: HookCall) -> bool:
        return True

    def render(self, call: HookCall, verdict: Verdict) -> Reply:
        return Reply(0, output(verdict.action, verdict.reason, verdict.updated_input))

    def failure(self, event: str | None, text: str) -> Reply:
        """Block in every way Gemini reads: deny JSON on stdout, the reason on stderr,
        exit 2 (Gemini fails open on a crash or empty output)."""
        line = one_line(text) or "askgate: blocked"
        return Reply(BLOCK, output("deny", line), line)


ADAPTER = Gemini()
