"""smolagents: every tool call of a `ToolCallingAgent` or a `CodeAgent` decided by askgate.

    from smolagents import ToolCallingAgent
    from askgate.frameworks.smolagents import protect

    agent = protect(ToolCallingAgent(tools=[...], model=model))

smolagents has no pre-tool hook, so `protect` wraps each tool's `forward` (what both agents
end up calling, a `CodeAgent`'s generated code included): allow → the tool runs; deny → it
does not, and a `PermissionError` carrying the reason becomes the tool's error, which
smolagents shows the model; ask → askgate's prompter chain (terminal, parent session,
approval server), nobody answering being a deny. `final_answer` is never gated.

Not covered: the Python a `CodeAgent` writes *between* tool calls runs in smolagents' own
executor (its import allow-list, or a remote sandbox); askgate sees only the tools it calls.

Needs `pip install askgate[smolagents]`.
"""

from __future__ import annotations

import functools
from typing import Any

from askgate.frameworks.core import Allow, Guard

CLIENT = "smolagents"
UNGATED = frozenset({"final_answer"})
_MARK = "__askgate_guarded__"


class AskgateDenied(PermissionError):
    """A tool call askgate refused; its text is what the model reads."""


def protect(agent: Any, guard: Guard | None = None) -> Any:
    """Wrap every tool of `agent` (managed agents' tools too); returns the agent."""
    guard = guard or Guard.for_project(client=CLIENT)
    for tool in list(getattr(agent, "tools", {}).values()):
        protect_tool(tool, guard)
    for managed in list(getattr(agent, "managed_agents", {}).values()):
        protect(managed, guard)
    return agent


def protect_tool(tool: Any, guard: Guard) -> None:
    if tool.name in UNGATED or getattr(tool.forward, _MARK, False):
        return
    forward = tool.forward
    names = list(getattr(tool, "inputs", {}) or {})

    @functools.wraps(forward)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        arguments = dict(zip(names, args, strict=False))
        arguments.update(kwargs)
        verdict = guard.check(tool.name, arguments)
        if not isinstance(verdict, Allow):
            raise AskgateDenied(f"askgate denied this call: {verdict.reason}")
        return forward(*args, **kwargs)

    setattr(guarded, _MARK, True)
    tool.forward = guarded
