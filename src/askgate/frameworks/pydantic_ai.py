"""pydantic-ai: a capability whose `before_tool_execute` hook decides every tool call.

    from pydantic_ai import Agent, DeferredToolRequests
    from askgate.frameworks.pydantic_ai import AskgateCapability

    agent = Agent(model, tools=[...], capabilities=[AskgateCapability()],
                  output_type=[str, DeferredToolRequests])

* allow → the tool runs;
* deny → `SkipToolExecution`: the tool does not run, the model gets the reason as its result;
* ask → pydantic-ai's own pause: `ApprovalRequired` with metadata `{"askgate_token",
  "askgate_question"}`; the run ends with `DeferredToolRequests` (which can be stored and
  resumed after a restart). Resume with `DeferredToolResults(approvals={call_id: True},
  metadata={call_id: {"askgate_token": <that token>}})`: the approval counts only with the
  token of this exact call (changed arguments, `override_args` included, are a deny).
  With `ask="prompter"` the ask goes to askgate's prompter chain instead.

Needs `pip install askgate[pydantic-ai]`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, SkipToolExecution

from askgate.frameworks.core import Ask, Deny, Guard

CLIENT = "pydantic-ai"
TOKEN_KEY = "askgate_token"


class AskgateCapability(AbstractCapability[Any]):
    def __init__(
        self,
        guard: Guard | None = None,
        *,
        ask: Literal["defer", "prompter"] = "defer",
    ) -> None:
        self.guard = guard or Guard.for_project(client=CLIENT)
        self.ask = ask

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built in code, with a Guard: not from a spec file

    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        arguments = args if isinstance(args, dict) else call.args_as_dict()
        verdict = self.guard.decide_call(call.tool_name, arguments, call.tool_call_id)
        if isinstance(verdict, Ask):
            verdict = self._settle_ask(ctx, verdict)
        if isinstance(verdict, Deny):
            raise SkipToolExecution(f"askgate denied this call: {verdict.reason}")
        return args

    def _settle_ask(self, ctx: Any, ask: Ask) -> Any:
        if self.ask == "prompter":
            return self.guard.resolve(ask)
        if getattr(ctx, "tool_call_approved", False):
            metadata = getattr(ctx, "tool_call_metadata", None) or {}
            token = metadata.get(TOKEN_KEY) if isinstance(metadata, dict) else None
            return self.guard.answer(ask, approved=True, token=token)
        raise ApprovalRequired(metadata={TOKEN_KEY: ask.token, "askgate_question": ask.question})
