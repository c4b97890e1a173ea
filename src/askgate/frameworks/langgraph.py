"""LangChain v1 / LangGraph: an `AgentMiddleware` that decides every tool call.

    from langchain.agents import create_agent
    from askgate.frameworks.langgraph import AskgateMiddleware

    agent = create_agent(model, tools, middleware=[AskgateMiddleware()],
                         checkpointer=InMemorySaver())

* allow → the tool runs (`handler(request)`);
* deny → the tool does not run; the model gets a `ToolMessage` with status `error` and the
  reason;
* ask → LangGraph's own pause: `interrupt({...})` with the question and a `token` bound to
  this exact call; the graph stops, its checkpoint survives a restart, and it resumes with
  `Command(resume={"approved": True, "token": <token>})` (or `"approved": False, "reason"`).
  A resume whose token does not match the call (its input changed) is a deny. With
  `ask="prompter"`, the ask goes to askgate's prompter chain instead (terminal, parent
  session, approval server) and the graph does not pause.

Needs `pip install askgate[langgraph]`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from askgate.frameworks.core import Allow, Ask, Deny, Guard

CLIENT = "langgraph"


class AskgateMiddleware(AgentMiddleware):
    def __init__(
        self,
        guard: Guard | None = None,
        *,
        ask: Literal["interrupt", "prompter"] = "interrupt",
    ) -> None:
        super().__init__()
        self.guard = guard or Guard.for_project(client=CLIENT)
        self.ask = ask

    def _verdict(self, request: Any) -> Allow | Deny:
        call = request.tool_call
        verdict = self.guard.decide_call(call["name"], call.get("args") or {}, call.get("id"))
        if not isinstance(verdict, Ask):
            return verdict
        if self.ask == "prompter":
            return self.guard.resolve(verdict)
        from langgraph.types import interrupt

        answer = interrupt(
            {
                "askgate": "approval",
                "question": verdict.question,
                "tool": call["name"],
                "args": call.get("args") or {},
                "token": verdict.token,
            }
        )
        if not isinstance(answer, dict):
            return Deny("askgate: the resume value is not an approval")
        return self.guard.answer(
            verdict,
            approved=answer.get("approved") is True,
            token=answer.get("token"),
            reason=answer.get("reason") if isinstance(answer.get("reason"), str) else None,
        )

    @staticmethod
    def _refusal(request: Any, deny: Deny) -> ToolMessage:
        call = request.tool_call
        return ToolMessage(
            content=deny.reason,
            tool_call_id=call.get("id") or "",
            name=call["name"],
            status="error",
        )

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        verdict = self._verdict(request)
        if isinstance(verdict, Deny):
            return self._refusal(request, verdict)
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        verdict = self._verdict(request)
        if isinstance(verdict, Deny):
            return self._refusal(request, verdict)
        return await handler(request)
