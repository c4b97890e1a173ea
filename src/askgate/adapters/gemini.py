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

import os
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
    read_input,
    resolve_all,
    sandboxed,
)

if TYPE_CHECKING:
    from askgate.outcome import ToolRequest

CLIENT = "gemini"
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


def parse_input(data: bytes) -> GeminiInput:
    hook = decode(data, GeminiInput, "Gemini BeforeTool")
    if hook.hook_event_name != BEFORE_TOOL:
        raise HookError(f"askgate hook gemini handles {BEFORE_TOOL}, got {hook.hook_event_name!r}")
    hook.cwd = absolute_cwd(hook.cwd)
    return hook


def tool_name(hook: GeminiInput) -> str:
    """The gate's name for the tool (MCP tools spelled ``mcp__server__tool``)."""
    from askgate.tools import mcp_tool_name

    mcp = hook.mcp_context
    if mcp is not None and mcp.server_name and mcp.tool_name:
        return mcp_tool_name(mcp.server_name, mcp.tool_name)
    return hook.tool_name


def to_request(hook: GeminiInput) -> ToolRequest:
    from askgate.outcome import ToolRequest

    return ToolRequest(
        tool=tool_name(hook), input=hook.tool_input, cwd=hook.cwd, session=hook.session_id
    )


def output(decision: str, reason: str, tool_input: Mapping[str, Any] | None = None) -> bytes:
    reason = (reason.strip() or f"askgate: {decision}")[:MAX_REASON]
    body: dict[str, Any] = {"decision": decision, "reason": reason}
    if decision == "ask":
        body["systemMessage"] = reason  # shown in Gemini's confirmation
    if tool_input is not None:  # merged over the model's arguments by Gemini
        body["hookSpecificOutput"] = {"hookEventName": "BeforeTool", "tool_input": dict(tool_input)}
    return msgspec.json.encode(body) + b"\n"


def run(
    data: bytes,
    *,
    config_files: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> bytes:
    """Decide one BeforeTool call; returns stdout or raises HookError."""
    from askgate.gate import Pending

    env = os.environ if env is None else env
    hook = parse_input(data)
    prompter = approval_prompter(env, hook.session_id)
    gate = open_gate(
        hook.cwd,
        client=CLIENT,
        session=hook.session_id,
        config_files=config_files,
        env=env,
        prompter=prompter,
        prompt_timeout=PROMPT_BUDGET_SECONDS,
    )
    request = to_request(hook)
    result = gate.preflight(request)
    if isinstance(result, Pending):
        if prompter is None:
            delegate(gate, result, to="gemini")
            return output("ask", ask_reason(gate, result))
        result = resolve_all(gate, [result])
    else:
        gate.publish(result, request)
    if not result.allowed:
        return output("deny", result.reason)
    # With [sandbox] bash on, an allowed shell command runs in the kernel sandbox.
    rewrite = sandboxed(
        gate,
        hook.tool_name,
        hook.tool_input,
        cwd=hook.cwd,
        agent=None,
        config_files=config_files,
        env=env,
    )
    if rewrite is not None and rewrite.ask_reason is not None:
        return output("ask", f"askgate: {rewrite.ask_reason}")
    if rewrite is not None and rewrite.updated_input is not None:
        return output("allow", f"askgate: {result.reason}", rewrite.updated_input)
    return output("allow", f"askgate: {result.reason}")


def fail(reason: str) -> int:
    """Block the call in every way Gemini reads: deny JSON on stdout, reason on stderr, exit 2."""
    try:
        sys.stdout.buffer.write(output("deny", reason))
        sys.stdout.buffer.flush()
    finally:
        print(reason[:2000], file=sys.stderr)
    return 2


def main(argv: Sequence[str]) -> int:
    try:
        config_files = parse_config_args(argv, "askgate hook gemini")
        data = read_input(sys.stdin.buffer)
        answer = run(data, config_files=config_files)
    except (HookError, UsageError) as exc:
        return fail(f"askgate: blocked: {exc}")
    except BaseException as exc:
        return fail(f"askgate: blocked by an internal error: {exc!r}")
    try:
        sys.stdout.buffer.write(answer)
        sys.stdout.buffer.flush()
    except BaseException as exc:  # a half-written verdict is no verdict: exit 2 still denies
        print(f"askgate: blocked: cannot write the answer: {exc!r}"[:2000], file=sys.stderr)
        return 2
    return 0
