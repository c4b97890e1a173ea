"""The contract between the gate and whatever reaches a human: what an ask shows, how
it ended, and the `Prompter` protocol. A leaf: msgspec and the standard library only."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

import msgspec


class PromptState(StrEnum):
    """How an ask ended. The first four are a human's answers (pi's dialog states)."""

    APPROVED = "approved"
    APPROVED_FOR_SESSION = "approved_for_session"
    DENIED = "denied"
    DENIED_WITH_REASON = "denied_with_reason"
    # Nobody could be reached (no UI, no parent serving, transport failure).
    UNAVAILABLE = "unavailable"
    # Somebody could have answered but did not within the budget.
    TIMED_OUT = "timed_out"


class PromptRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What is shown to the human."""

    request_id: str
    surface: str
    value: str
    message: str
    agent: str | None = None
    session: str | None = None
    # Pattern that "Yes, for this session" would approve, and its label; None when
    # no safe session pattern exists (then the option is not offered).
    session_pattern: str | None = None
    session_label: str | None = None
    # The call itself, for prompters that bind an answer to the exact input (the approval
    # server hashes `tool_input`); None when the ask did not come from a tool call.
    tool: str | None = None
    tool_input: dict[str, Any] | None = None
    cwd: str | None = None
    rule: str | None = None  # the rule that asked, as shown to the human


class PromptReply(msgspec.Struct, frozen=True, kw_only=True):
    state: PromptState
    denial_reason: str | None = None
    # Free-form detail for logs ("nobody is serving session X", "no_ui" …).
    detail: str | None = None
    # Who gave the answer when it may not have been a human at this prompter: a
    # forwarding parent answers from its human or from its own policy and does not say
    # which ("parent session X"). None: the prompter's human.
    answered_by: str | None = None

    @property
    def approved(self) -> bool:
        return self.state in (PromptState.APPROVED, PromptState.APPROVED_FOR_SESSION)


@runtime_checkable
class Prompter(Protocol):
    """Reaches a human. Implementations must never raise for a normal failure:
    they return UNAVAILABLE or TIMED_OUT instead (the gate still guards with
    try/except and fails closed)."""

    def available(self) -> bool:
        """True when a prompt could reach somebody right now."""
        ...

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        """Block until the human answers or `timeout` seconds pass."""
        ...


def unavailable_reason(prompter: object) -> str | None:
    """Why `prompter` cannot reach a human, when it can say (an optional method
    `unavailable_detail() -> str | None`, outside the Protocol so that every existing
    prompter stays one). Never raises: the reason is for the user, not a decision."""
    detail = getattr(prompter, "unavailable_detail", None)
    if not callable(detail):
        return None
    try:
        text = detail()
    except Exception:
        return None
    return text if isinstance(text, str) and text else None


class NoPrompter:
    """Used when nothing can reach a human: every ask resolves as unavailable."""

    def available(self) -> bool:
        return False

    def unavailable_detail(self) -> str:
        return "no terminal, parent session or approval server to ask"

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        return PromptReply(state=PromptState.UNAVAILABLE, detail="no prompter configured")
