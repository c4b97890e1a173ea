"""The gate: ToolRequest -> policy -> (a human, when the policy asks) -> Outcome.

Every path ends in an Outcome that is broadcast on the event bus (when one is
attached) and written to the review log (when one is configured). Any internal
failure ends in deny, loudly; an ask that cannot reach a human ends in deny with
resolution `confirmation_unavailable`, and one nobody answered in time in
`timed_out` — neither is ever reported as a user's denial.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from askgate.lazylog import LazyLogger
from askgate.outcome import (
    INTERNAL_ERROR,
    MALFORMED_INPUT,
    PROMPTER_ERROR,
    Outcome,
    Pending,
    Resolution,
    ToolRequest,
)
from askgate.policy import paths
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Basis, Check, Decision, Surface
from askgate.prompt import (
    NoPrompter,
    Prompter,
    PromptReply,
    PromptRequest,
    PromptState,
    unavailable_reason,
)
from askgate.session import MAX_SESSION_PATTERNS, SessionApprovals, suggest_pattern
from askgate.tools import ToolInputError, ToolTarget, target_for

if TYPE_CHECKING:
    from askgate.audit import AuditLog
    from askgate.events import EventBus

# Imports logging only when it logs (askgate.lazylog): not on every tool call.
log = LazyLogger("askgate.gate")

__all__ = ["Gate", "Outcome", "Pending", "Resolution", "ToolRequest"]


def new_request_id() -> str:
    return f"{time.time_ns():x}-{os.urandom(4).hex()}"


class Gate:
    """Decides tool calls for one agent session."""

    def __init__(
        self,
        policy: Policy,
        *,
        prompter: Prompter | None = None,
        bus: EventBus | None = None,
        audit: AuditLog | None = None,
        session: str | None = None,
        prompt_timeout: float | None = None,
    ) -> None:
        self.policy = policy
        self._prompter: Prompter = prompter or NoPrompter()
        self.bus = bus
        self.audit = audit
        self.session = session
        self.prompt_timeout = prompt_timeout
        self.approvals = SessionApprovals()
        self._detach: Callable[[], None] | None = None
        if bus is not None:
            from askgate.events_rpc import attach_gate

            self._detach = attach_gate(bus, self)

    @property
    def prompter(self) -> Prompter:
        return self._prompter

    def close(self) -> None:
        if self._detach is not None:
            detach, self._detach = self._detach, None
            detach()
        self.approvals.clear()

    def __enter__(self) -> Gate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- deciding ------------------------------------------------------------------------

    def decide(self, request: ToolRequest, *, decision: Decision | None = None) -> Outcome:
        """Resolve a request, asking the prompter when the policy says ask. `decision`:
        see `preflight`."""
        result = self.preflight(request, decision=decision)
        outcome = self.resolve(result) if isinstance(result, Pending) else result
        self._publish(outcome, request)
        return outcome

    def resolve(self, pending: Pending) -> Outcome:
        """Ask this gate's prompter about a Pending from `preflight`; nothing is published."""
        try:
            return self._ask_human(pending)
        except Exception as exc:  # fail closed, loudly
            log.exception("askgate: internal error while asking about %s", pending.request.tool)
            why = f"askgate internal error: {exc!r}"
            return _failed(pending.request_id, pending.request, why, INTERNAL_ERROR)

    def preflight(
        self, request: ToolRequest, *, decision: Decision | None = None
    ) -> Outcome | Pending:
        """Everything short of asking a human: an Outcome when the policy, a session
        approval, an infrastructure read or yolo settles it, else a Pending ask.
        Nothing is published (an adapter that hands the ask to its agent's own UI
        publishes nothing, or calls `publish`). `decision`: the policy's answer when the
        caller combined several lookups itself (the MCP gateway decides a call's name
        and its arguments together); it is settled like one the gate computed."""
        request_id = request.request_id or new_request_id()
        try:
            if decision is not None:
                target = ToolTarget(decision.surface, decision.value)
                return self._settle(request_id, request, target, decision)
            target = target_for(request.tool, request.input, request.cwd)
            decision = self.policy.decide(
                target.surface,
                target.value,
                cwd=request.cwd,
                agent=request.agent,
                tool=request.tool,
            )
            return self._settle(request_id, request, target, decision)
        except ToolInputError as exc:
            return _failed(request_id, request, f"malformed tool input: {exc}", MALFORMED_INPUT)
        except Exception as exc:  # fail closed, loudly
            log.exception("askgate: internal error while deciding %s", request.tool)
            return _failed(request_id, request, f"askgate internal error: {exc!r}", INTERNAL_ERROR)

    def publish(self, outcome: Outcome, request: ToolRequest) -> None:
        """Broadcast and audit an outcome (decide() does this itself)."""
        self._publish(outcome, request)

    def check(
        self,
        surface: str,
        value: str | None,
        *,
        agent: str | None = None,
        cwd: str | None = None,
    ) -> Decision:
        """What the policy (with this session's approvals) says, without asking anyone."""
        return self.check_session(surface, value, agent=agent, cwd=cwd)[0]

    def check_session(
        self,
        surface: str,
        value: str | None,
        *,
        agent: str | None = None,
        cwd: str | None = None,
    ) -> tuple[Decision, str | None]:
        """`check`, plus the session-approved pattern(s) that turned its ask into allow
        (None when no session approval decided)."""
        surface_ = Surface(surface)  # ValueError for an unknown surface
        decision = self.policy.decide(
            surface_, "*" if value is None else value, cwd=cwd, agent=agent
        )
        covering = self._session_cover(decision)
        if covering is None:
            return decision, None
        allowed = msgspec.structs.replace(
            decision, action=Action.ALLOW, reason=f"approved for this session ({covering})"
        )
        return allowed, covering

    # --- internals -----------------------------------------------------------------------

    def _settle(
        self, request_id: str, request: ToolRequest, target: ToolTarget, decision: Decision
    ) -> Outcome | Pending:
        def outcome(action: Action, resolution: Resolution, reason: str) -> Outcome:
            return Outcome(
                request_id=request_id,
                action=action,
                resolution=resolution,
                decision=decision,
                reason=reason,
            )

        if decision.action is Action.ALLOW:
            return outcome(Action.ALLOW, Resolution.POLICY_ALLOW, decision.reason)
        if decision.action is Action.DENY:
            return outcome(Action.DENY, Resolution.POLICY_DENY, _deny_text(request, decision))
        if target.read_only and self._infrastructure_read(target, request.cwd, decision):
            return outcome(
                Action.ALLOW,
                Resolution.INFRASTRUCTURE_AUTO_ALLOWED,
                "read of an agent infrastructure path",
            )
        covering = self._session_cover(decision)
        if covering is not None:
            return Outcome(
                request_id=request_id,
                action=Action.ALLOW,
                resolution=Resolution.SESSION_APPROVED,
                decision=decision,
                reason=f"approved for this session ({covering})",
                session_pattern=covering,
            )
        if self.policy.yolo and not decision.clamped:
            return outcome(Action.ALLOW, Resolution.AUTO_APPROVED, "yolo mode approves asks")
        return Pending(request_id=request_id, request=request, decision=decision)

    def _ask_human(self, pending: Pending) -> Outcome:
        request, decision = pending.request, pending.decision

        def outcome(action: Action, resolution: Resolution, reason: str, **kw: Any) -> Outcome:
            return Outcome(
                request_id=pending.request_id,
                action=action,
                resolution=resolution,
                decision=decision,
                reason=reason,
                **kw,
            )

        what = _describe(request, decision)
        try:
            if not self._prompter.available():
                why = unavailable_reason(self._prompter)
                return outcome(
                    Action.DENY,
                    Resolution.CONFIRMATION_UNAVAILABLE,
                    f"{what} requires approval, but no human can be asked here"
                    + (f": {why}" if why else ""),
                )
            patterns = self._session_patterns(decision)
            prompt = PromptRequest(
                request_id=pending.request_id,
                surface=str(decision.surface),
                value=decision.value,
                message=_prompt_message(request, decision),
                agent=request.agent,
                session=request.session or self.session,
                session_pattern="; ".join(p for _, p in patterns) if patterns else None,
                session_label=_session_label(patterns),
                tool=request.tool,
                tool_input=request.input,
                cwd=request.cwd,
                rule=_rule_text(decision),
            )
            reply = self._prompter.prompt(prompt, self.prompt_timeout)
            if not isinstance(reply, PromptReply):
                raise TypeError(f"prompter returned {type(reply).__name__}, not PromptReply")
        except Exception as exc:
            log.exception("askgate: prompter failed")
            return outcome(
                Action.DENY,
                Resolution.CONFIRMATION_UNAVAILABLE,
                f"{what} requires approval, but asking failed: {exc!r}"[:500],
                error=PROMPTER_ERROR,
            )

        if reply.state is PromptState.APPROVED_FOR_SESSION and patterns:
            for surface, pattern in patterns:
                self.approvals.approve(surface, pattern)
            return outcome(
                Action.ALLOW,
                Resolution.USER_APPROVED_FOR_SESSION,
                f"approved for this session by {reply.answered_by or 'the user'}",
                session_pattern="; ".join(p for _, p in patterns),
            )
        if reply.approved:
            by = reply.answered_by or "the user"
            return outcome(Action.ALLOW, Resolution.USER_APPROVED, f"approved by {by}")
        if reply.state in (PromptState.DENIED, PromptState.DENIED_WITH_REASON):
            text = f"User denied {what}."
            if reply.denial_reason:
                text += f" Reason: {reply.denial_reason}"
            return outcome(
                Action.DENY, Resolution.USER_DENIED, text, denial_reason=reply.denial_reason
            )
        if reply.state is PromptState.TIMED_OUT:
            return outcome(
                Action.DENY,
                Resolution.TIMED_OUT,
                f"{what} requires approval; nobody answered in time",
            )
        detail = f" ({reply.detail})" if reply.detail else ""
        return outcome(
            Action.DENY,
            Resolution.CONFIRMATION_UNAVAILABLE,
            f"{what} requires approval, but no human could be reached{detail}",
        )

    def _ask_items(self, decision: Decision) -> list[tuple[Surface, str]] | None:
        """The (surface, value) lookups that made the decision an ask, or None when an
        ask came from something a session approval must not cover (a floor, a
        clamped policy)."""
        if decision.clamped:
            return None
        checks: list[Check] = list(decision.checks)
        for unit in decision.units:
            if unit.action is Action.ASK:
                checks.extend(unit.checks)
        items: list[tuple[Surface, str]] = []
        for check in checks:
            if check.basis == Basis.IGNORED or check.action is not Action.ASK:
                continue
            if check.basis == Basis.FLOOR:
                return None
            item = (check.surface, check.value)
            if item not in items:
                items.append(item)
        return items or None

    def _session_cover(self, decision: Decision) -> str | None:
        if decision.action is not Action.ASK:
            return None
        items = self._ask_items(decision)
        if not items:
            return None
        covering: list[str] = []
        for surface, value in items:
            pattern = self.approvals.covering(surface, value)
            if pattern is None:
                return None
            if pattern not in covering:
                covering.append(pattern)
        return "; ".join(covering)

    def session_offer(
        self, surface: Surface, value: str, *, agent: str | None = None
    ) -> tuple[str, str] | None:
        """(pattern, label) of the "Yes, for this session" option for an ask about
        `value` that another component raises (`rpc:prompt`), derived as for this gate's
        own asks; None when no safe pattern exists. Display only: recording the
        approval is the asking side's job."""
        try:
            decision = self.policy.decide(surface, value, agent=agent)
        except Exception:
            return None
        if decision.action is not Action.ASK:
            # This policy would not ask; the pattern still follows the value's shape.
            decision = _as_ask(decision)
        patterns = self._session_patterns(decision)
        label = _session_label(patterns)
        if not patterns or label is None:
            return None
        return "; ".join(p for _, p in patterns), label

    def _session_patterns(self, decision: Decision) -> list[tuple[Surface, str]]:
        items = self._ask_items(decision)
        if not items or len(items) > MAX_SESSION_PATTERNS:
            return []
        patterns: list[tuple[Surface, str]] = []
        for surface, value in items:
            pattern = suggest_pattern(surface, value)
            if pattern is None:
                return []
            if (surface, pattern) not in patterns:
                patterns.append((surface, pattern))
        return patterns

    def _infrastructure_read(self, target: ToolTarget, cwd: str, decision: Decision) -> bool:
        # A root of `/`, the home directory or above would let every read skip the human
        # (the loader refuses them; a Policy built in code is held to the same line).
        home = self.policy.home
        roots = [
            r
            for r in self.policy.infrastructure_read_paths
            if r != "/" and not paths.is_inside(home, r)
        ]
        if not roots or decision.clamped:
            return False
        if any(c.basis == Basis.FLOOR for c in decision.checks):
            return False
        try:
            forms = paths.resolve(target.value, cwd, self.policy.env)
        except (ValueError, OSError):
            return False
        return all(any(paths.is_inside(f, r) for r in roots) for f in forms.forms)

    def _publish(self, outcome: Outcome, request: ToolRequest) -> None:
        if self.bus is not None:
            try:
                from askgate.events import emit_decision

                emit_decision(self.bus, outcome, agent=request.agent)
            except Exception:
                log.exception("askgate: cannot emit the decision event")
        if self.audit is not None:
            try:
                self.audit.outcome(
                    outcome,
                    tool=request.tool,
                    tool_input=request.input,
                    agent=request.agent,
                    session=request.session or self.session,
                )
            except Exception:
                log.exception("askgate: cannot write the review log")


# --- texts -------------------------------------------------------------------------------


def _describe(request: ToolRequest, decision: Decision) -> str:
    value = decision.value if len(decision.value) <= 300 else decision.value[:300] + "…"
    if decision.surface is Surface.BASH:
        return f"bash command {value!r}"
    if decision.surface is Surface.TOOL:
        return f"tool {value!r}"
    return f"{request.tool} on {decision.surface} {value!r}"


def _deny_text(request: ToolRequest, decision: Decision) -> str:
    who = f"Agent {request.agent!r}" if request.agent else "This agent"
    text = f"{who} is not permitted to run {_describe(request, decision)}: {decision.reason}."
    return text + " This denial is enforced by policy; do not retry or look for a way around it."


def _prompt_message(request: ToolRequest, decision: Decision) -> str:
    who = f"Agent {request.agent!r}" if request.agent else "The agent"
    lines = [f"{who} wants to use {request.tool}: {_describe(request, decision)}"]
    for unit in decision.units:
        if unit.action is not Action.ALLOW:
            lines.append(f"  - {unit.command[:300]}  [{unit.action}: {unit.reason[:300]}]")
    if not decision.units:
        lines.append(f"  why: {decision.reason[:500]}")
    return "\n".join(lines)


def _rule_text(decision: Decision) -> str:
    rule = decision.rule
    if rule is None:
        return f"default is {decision.action}"
    return f'{rule.surface} "{rule.pattern}" = {rule.action} ({rule.origin})'


def _session_label(patterns: list[tuple[Surface, str]]) -> str | None:
    if not patterns:
        return None
    shown = ", ".join(f'{s} "{p}"' for s, p in patterns)
    return f"Yes, allow {shown} for this session"


def _as_ask(decision: Decision) -> Decision:
    """`decision` with every non-ignored check and unit read as ask, so the session
    pattern of its value can be derived. A deny stays a deny (nothing to offer)."""
    if decision.action is Action.DENY:
        return decision

    def asked(checks: tuple[Check, ...]) -> tuple[Check, ...]:
        return tuple(
            c if c.basis == Basis.IGNORED else msgspec.structs.replace(c, action=Action.ASK)
            for c in checks
        )

    units = tuple(
        msgspec.structs.replace(u, action=Action.ASK, checks=asked(u.checks))
        for u in decision.units
    )
    return msgspec.structs.replace(
        decision, action=Action.ASK, checks=asked(decision.checks), units=units
    )


def _failed(request_id: str, request: ToolRequest, why: str, error: str) -> Outcome:
    why = why[:500]
    surface = Surface.BASH if request.tool in ("Bash", "bash") else Surface.TOOL
    raw = request.input if isinstance(request.input, dict) else {}
    value = raw.get("command") if surface is Surface.BASH else request.tool
    decision = Decision(
        action=Action.DENY,
        reason=why,
        surface=surface,
        value=str(value)[:1000] if value is not None else "",
        rule=None,
    )
    return Outcome(
        request_id=request_id,
        action=Action.DENY,
        resolution=Resolution.POLICY_DENY,
        decision=decision,
        reason=why,
        error=error,
    )
