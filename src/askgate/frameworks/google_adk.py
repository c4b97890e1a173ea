"""Google ADK: a plugin whose `before_tool_callback` decides every tool call of every agent
the runner drives.

    from google.adk.runners import InMemoryRunner
    from askgate.frameworks.google_adk import AskgatePlugin

    runner = InMemoryRunner(agent=agent, plugins=[AskgatePlugin()])

* allow → the tool runs (the callback returns None);
* deny → the callback returns `{"error": "askgate denied this call: <reason>"}`: the tool
  does not run and that dict is its result, which the model reads;
* ask → ADK's own pause: `tool_context.request_confirmation(hint=<question>,
  payload={"askgate_token": <token>})` and the call stops; the app answers ADK's
  `adk_request_confirmation` with `ToolConfirmation(confirmed=True, payload=<that payload>)`
  and ADK runs the call again, which then proceeds only if the token is this exact call's.
  With `ask="prompter"` the ask goes to askgate's prompter chain instead.

Needs `pip install askgate[google-adk]`.
"""

from __future__ import annotations

from typing import Any, Literal

from google.adk.plugins.base_plugin import BasePlugin

from askgate.frameworks.core import Allow, Ask, Deny, Guard

CLIENT = "google-adk"
TOKEN_KEY = "askgate_token"


class AskgatePlugin(BasePlugin):
    def __init__(
        self,
        guard: Guard | None = None,
        *,
        ask: Literal["confirm", "prompter"] = "confirm",
        name: str = "askgate",
    ) -> None:
        super().__init__(name=name)
        self.guard = guard or Guard.for_project(client=CLIENT)
        self.ask = ask

    async def before_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any
    ) -> dict[str, Any] | None:
        call_id = getattr(tool_context, "function_call_id", None)
        verdict = self.guard.decide_call(tool.name, dict(tool_args), call_id)
        if isinstance(verdict, Ask):
            settled = self._settle(verdict, tool_context)
            if settled is None:
                return {"error": "askgate: waiting for a human to confirm this call"}
            verdict = settled
        if isinstance(verdict, Deny):
            return {"error": f"askgate denied this call: {verdict.reason}"}
        return None

    def _settle(self, ask: Ask, tool_context: Any) -> Allow | Deny | None:
        if self.ask == "prompter":
            return self.guard.resolve(ask)
        confirmation = getattr(tool_context, "tool_confirmation", None)
        if confirmation is not None:
            payload = confirmation.payload if isinstance(confirmation.payload, dict) else {}
            return self.guard.answer(
                ask, approved=bool(confirmation.confirmed), token=payload.get(TOKEN_KEY)
            )
        tool_context.request_confirmation(hint=ask.question, payload={TOKEN_KEY: ask.token})
        return None
