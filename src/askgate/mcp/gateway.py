"""The gateway's decider: a `Decide` from the core -> the gate -> allowed or not, and why.

One gate for the connection (its session approvals last as long as the connection). An
ask reaches a human through MCP elicitation when the client declared that capability
(`ElicitationPrompter`: the question goes to the client, which shows it to its user), else
through askgate's prompter chain (terminal, parent session, approval server). Either way
the answer is bound to the exact call: the frame forwarded after an approval is the frame
that was decided, and the approval server hashes the same arguments.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from askgate.gate import Gate
from askgate.mcp.arguments import ToolShape
from askgate.mcp.core import APPROVE
from askgate.mcp.decide import call_value, decide_call, name_decision
from askgate.outcome import Outcome, Pending, ToolRequest
from askgate.policy.model import Action, Decision, Surface
from askgate.prompt import Prompter, PromptReply, PromptRequest, PromptState
from askgate.tools import mcp_tool_name

if TYPE_CHECKING:
    from askgate.events import EventBus

PROMPT_BUDGET_SECONDS = 540.0
ELICITED_BY = "the MCP client's user"

# Sends an elicitation (message) and returns a future of the client's result (None: it
# answered with an error or went away).
SendAsk = Callable[[str], "concurrent.futures.Future[dict[str, Any] | None]"]


def arguments_digest(arguments: Any) -> str:
    """SHA-256 of the arguments' canonical JSON (RFC 8785), as the approval server binds."""
    import rfc8785

    try:
        return hashlib.sha256(rfc8785.dumps(arguments)).hexdigest()
    except Exception:  # not canonicalisable (a float NaN …): the plain encoding
        return hashlib.sha256(msgspec.json.encode(arguments)).hexdigest()


class ElicitationPrompter:
    """Asks the MCP client's user with ``elicitation/create``. Only ``accept`` with the
    approve choice is a yes; decline, cancel, an error or no answer in time is a no."""

    def __init__(self, send: SendAsk) -> None:
        self.send = send

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        future = self.send(ask_message(request))
        try:
            result = future.result(timeout)
        except concurrent.futures.TimeoutError:
            return PromptReply(state=PromptState.TIMED_OUT, detail="no answer to the elicitation")
        except Exception as exc:
            return PromptReply(state=PromptState.UNAVAILABLE, detail=f"elicitation failed: {exc}")
        return elicitation_reply(result)


def elicitation_reply(result: Mapping[str, Any] | None) -> PromptReply:
    if result is None:
        return PromptReply(state=PromptState.UNAVAILABLE, detail="the client refused to ask")
    action = result.get("action")
    content = result.get("content")
    choice = content.get("decision") if isinstance(content, Mapping) else None
    if action == "accept" and choice == APPROVE:
        return PromptReply(state=PromptState.APPROVED, answered_by=ELICITED_BY)
    if action == "accept" or action == "decline":
        return PromptReply(state=PromptState.DENIED, detail=f"elicitation {action}")
    if action == "cancel":
        return PromptReply(
            state=PromptState.DENIED_WITH_REASON,
            denial_reason="the question was dismissed",
            detail="elicitation cancel",
        )
    return PromptReply(state=PromptState.UNAVAILABLE, detail=f"elicitation answer {action!r}")


class ChoosingPrompter:
    """Elicitation while the client can show it, else the prompter chain."""

    def __init__(self, elicit: Prompter, chain: Prompter, use_elicit: Callable[[], bool]) -> None:
        self.elicit, self.chain, self.use_elicit = elicit, chain, use_elicit

    def _current(self) -> Prompter:
        return self.elicit if self.use_elicit() else self.chain

    def available(self) -> bool:
        return self._current().available()

    def unavailable_detail(self) -> str | None:
        from askgate.prompt import unavailable_reason

        return unavailable_reason(self._current())

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        return self._current().prompt(request, timeout)


class CallDecider:
    """Decides the calls of one connection to one server."""

    def __init__(
        self,
        server: str,
        gate: Gate,
        *,
        cwd: str,
        agent: str | None = None,
        session: str | None = None,
    ) -> None:
        self.server = server
        self.gate = gate
        self.cwd = cwd
        self.agent = agent
        self.session = session

    def visible(self, tool: str) -> bool:
        """`tools/list` offers a tool unless its own rule denies it (an ask is offered:
        the call itself asks)."""
        try:
            decision = name_decision(self.gate.policy, self.server, tool, cwd=self.cwd,
                                     agent=self.agent)  # fmt: skip
        except Exception:
            return False
        return decision.action is not Action.DENY

    def request(self, tool: str, arguments: Any) -> ToolRequest:
        tool_input = arguments if isinstance(arguments, dict) else {"arguments": arguments}
        return ToolRequest(
            tool=mcp_tool_name(self.server, tool),
            input=tool_input,
            cwd=self.cwd,
            agent=self.agent,
            session=self.session,
        )

    def preflight(
        self, tool: str, arguments: Any, shape: ToolShape
    ) -> tuple[ToolRequest, Outcome | Pending]:
        request = self.request(tool, arguments)
        try:
            decision = decide_call(
                self.gate.policy, self.server, tool, arguments, shape=shape, cwd=self.cwd,
                agent=self.agent,
            )  # fmt: skip
        except Exception as exc:  # fail closed: settled as a deny, audited as any other
            why = f"askgate internal error: {exc!r}"[:500]
            decision = Decision(
                action=Action.DENY, reason=why, surface=Surface.MCP,
                value=call_value(self.server, tool), rule=None,
            )  # fmt: skip
        return request, self.gate.preflight(request, decision=decision)

    def resolve(self, pending: Pending) -> Outcome:
        return self.gate.resolve(pending)

    def publish(self, outcome: Outcome, request: ToolRequest) -> None:
        self.gate.publish(outcome, request)


def ask_message(request: PromptRequest) -> str:
    """The elicitation's text: what the policy says, the exact call and its digest."""
    arguments = request.tool_input or {}
    shown = msgspec.json.encode(arguments).decode("utf-8", "replace")
    if len(shown) > 1500:
        shown = shown[:1500] + "…"
    digest = arguments_digest(arguments)[:16]
    return (
        f"askgate: {request.message}\n\ncall: {request.tool}\narguments: {shown}\n"
        f"(call digest {digest}; an approval allows this exact call once)"
    )


def chain_prompter(env: Mapping[str, str], *, terminal: bool) -> Prompter:
    """askgate's prompter chain for a gateway: parent session (a subagent's), then the
    approval server. The terminal only when asked for (`--ask-terminal`): an agent that
    starts the gateway usually owns the terminal, and keys meant for it must not answer."""
    from askgate.prompters.choose import default_prompter

    tty = "/dev/tty" if terminal else "/nonexistent/askgate-no-terminal"
    return default_prompter(session=None, env=env, tty_path=tty, interactive=terminal)


def open_decider(
    server: str,
    *,
    cwd: str,
    config_files: Sequence[str] = (),
    agent: str | None = None,
    env: Mapping[str, str] | None = None,
    send_ask: SendAsk | None = None,
    use_elicit: Callable[[], bool] = lambda: False,
    chain: Prompter | None = None,
    prompt_timeout: float = PROMPT_BUDGET_SECONDS,
    bus: EventBus | None = None,
    terminal: bool = False,
) -> CallDecider:
    """The decider for one connection: the policy for `cwd`, the review log (client
    ``mcp:<server>``), and the prompters."""
    from askgate.hookrt.decide import audit_log
    from askgate.policy.engine import Policy

    env = dict(os.environ if env is None else env)
    if chain is None:
        chain = chain_prompter(env, terminal=terminal)
    prompter: Prompter = chain
    if send_ask is not None:
        prompter = ChoosingPrompter(ElicitationPrompter(send_ask), chain, use_elicit)
    policy = Policy.load(cwd, config_files=config_files, agent=agent, env=env)
    gate = Gate(
        policy,
        prompter=prompter,
        audit=audit_log(env, f"mcp:{server}"),
        prompt_timeout=prompt_timeout,
        bus=bus,
    )
    return CallDecider(server, gate, cwd=cwd, agent=agent)
