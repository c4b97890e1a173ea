"""OpenAI Agents SDK: every tool of an agent decided by askgate, the shell, apply-patch and
hosted-MCP tools included (the SDK's tool guardrails skip those).

    from agents import Agent
    from askgate.frameworks.openai_agents import protect

    agent = protect(Agent(name="dev", tools=[...]))

* function tools get a tool input guardrail: allow → `ToolGuardrailFunctionOutput.allow()`,
  deny → `.reject_content(reason)` (the tool does not run, the model reads the reason);
* `ShellTool`, `ApplyPatchTool`: `needs_approval=True` with an `on_approval` handler that
  askgate answers (approve, or reject with the reason); the shell's commands go through the
  bash analysis, a patch is one write per file it touches;
* `HostedMCPTool`: `on_approval_request` answered the same way, on the `mcp` surface.

An ask is put to askgate's prompter chain (terminal, parent session, approval server), bound
to the exact call, within the prompt budget; nobody answering is a reject. The SDK's own
pause (`RunState.approve`) is not used for asks: an app's blanket approve must never be able
to run a call askgate denied, and the approval server already gives a human a page or a
phone for as long as the budget allows.

Needs `pip install askgate[openai-agents]`.
"""

from __future__ import annotations

import json
from typing import Any

from agents import (
    ApplyPatchTool,
    FunctionTool,
    HostedMCPTool,
    ShellTool,
    ToolGuardrailFunctionOutput,
    tool_input_guardrail,
)

from askgate.frameworks.core import Allow, Deny, Guard

CLIENT = "openai-agents"


def protect(agent: Any, guard: Guard | None = None) -> Any:
    """Put every tool of `agent` (and of its handoff agents) behind `guard`; returns the
    agent. Tools added later are not covered: call it once the agent is built."""
    guard = guard or Guard.for_project(client=CLIENT)
    seen: set[int] = set()
    _protect(agent, guard, seen)
    return agent


def _protect(agent: Any, guard: Guard, seen: set[int]) -> None:
    if id(agent) in seen:
        return
    seen.add(id(agent))
    for tool in getattr(agent, "tools", []) or []:
        protect_tool(tool, guard)
    for handoff in getattr(agent, "handoffs", []) or []:
        target = getattr(handoff, "agent", handoff)
        if hasattr(target, "tools"):
            _protect(target, guard, seen)


def protect_tool(tool: Any, guard: Guard) -> None:
    if isinstance(tool, FunctionTool):
        guardrails = list(tool.tool_input_guardrails or [])
        guardrails.insert(0, input_guardrail(guard))
        tool.tool_input_guardrails = guardrails
    elif isinstance(tool, ShellTool):
        if tool.environment and tool.environment.get("type") != "local":
            return  # a hosted container: runs outside this machine, nothing to gate here
        tool.needs_approval = True
        tool.on_approval = _shell_on_approval(guard, tool.name)
    elif isinstance(tool, ApplyPatchTool):
        tool.needs_approval = True
        tool.on_approval = _patch_on_approval(guard, tool.name)
    elif isinstance(tool, HostedMCPTool):
        tool.on_approval_request = _mcp_on_approval(guard)


def input_guardrail(guard: Guard) -> Any:
    @tool_input_guardrail
    def askgate(data: Any) -> Any:
        context = data.context
        try:
            args = json.loads(context.tool_arguments or "{}")
        except ValueError:
            args = {"raw": context.tool_arguments}
        verdict = guard.check(context.tool_name, args, context.tool_call_id)
        if isinstance(verdict, Allow):
            return ToolGuardrailFunctionOutput.allow()
        return ToolGuardrailFunctionOutput.reject_content(
            f"askgate denied this call: {verdict.reason}"
        )

    return askgate


def _field(item: Any, *path: str) -> Any:
    for key in path:
        if item is None:
            return None
        item = item.get(key) if isinstance(item, dict) else getattr(item, key, None)
    return item


def _answer(verdict: Allow | Deny) -> dict[str, Any]:
    if isinstance(verdict, Allow):
        return {"approve": True}
    return {"approve": False, "reason": f"askgate denied this call: {verdict.reason}"}


def _shell_on_approval(guard: Guard, name: str) -> Any:
    def on_approval(_context: Any, item: Any) -> dict[str, Any]:
        raw = getattr(item, "raw_item", item)
        commands = _field(raw, "action", "commands")
        call_id = _field(raw, "call_id")
        if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
            return _answer(Deny("askgate: a shell call without a readable command list"))
        # Each command runs in the same shell, one after another: decide them as one script.
        return _answer(guard.check(name, {"command": "\n".join(commands)}, call_id))

    return on_approval


def _patch_on_approval(guard: Guard, name: str) -> Any:
    def on_approval(_context: Any, item: Any) -> dict[str, Any]:
        raw = getattr(item, "raw_item", item)
        operation = _field(raw, "operation")
        path = _field(operation, "path")
        call_id = _field(raw, "call_id")
        if not isinstance(path, str):
            return _answer(Deny("askgate: a patch without a path"))
        return _answer(guard.check("write_file", {"path": path}, call_id))

    return on_approval


def _mcp_on_approval(guard: Guard) -> Any:
    def on_approval(request: Any) -> dict[str, Any]:
        data = request.data
        server = _field(data, "server_label") or "mcp"
        tool = _field(data, "name") or ""
        try:
            args = json.loads(_field(data, "arguments") or "{}")
        except ValueError:
            args = {"raw": _field(data, "arguments")}
        verdict = guard.decide_call(tool, args, _field(data, "id"), mcp_server=server)
        if not isinstance(verdict, Allow | Deny):
            verdict = guard.resolve(verdict)
        return _answer(verdict)

    return on_approval
