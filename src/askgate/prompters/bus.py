"""An in-process child's prompter: asks the parent's gate over `permissions:rpc:prompt`.

For subagents that run inside the parent's process (the tintinweb case) and so share
its event bus: no files, no environment variables. Every failure (no parent listening,
no reply in time, an error reply, a malformed reply) resolves as unavailable or timed
out — never as an approval, never as a user's denial.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from askgate.events import (
    CHANNEL_RPC_PING,
    CHANNEL_RPC_PROMPT,
    ERROR_TIMED_OUT,
    ERROR_TIMEOUT,
    EventBus,
    PermissionsPromptReplyData,
    PermissionsPromptRequest,
    request_sync,
)
from askgate.prompt import PromptReply, PromptRequest, PromptState

logger = logging.getLogger("askgate.prompters.bus")

DEFAULT_PROMPT_TIMEOUT = 600.0  # seconds; pi's forwarding timeout


def reply_from_envelope(envelope: dict[str, Any]) -> PromptReply:
    """Interpret an `rpc:prompt` reply envelope, failing closed on anything odd."""
    if envelope.get("success") is not True:
        error = str(envelope.get("error", "unknown error"))
        code = error.split(":", 1)[0]
        if code in (ERROR_TIMED_OUT, ERROR_TIMEOUT):
            return PromptReply(state=PromptState.TIMED_OUT, detail=f"parent session: {error}")
        return PromptReply(state=PromptState.UNAVAILABLE, detail=f"parent session: {error}")
    try:
        data = msgspec.convert(envelope.get("data"), PermissionsPromptReplyData)
    except msgspec.ValidationError as exc:
        return PromptReply(state=PromptState.UNAVAILABLE, detail=f"malformed prompt reply: {exc}")
    state = PromptState(data.state)
    reply = PromptReply(state=state, denial_reason=data.denial_reason)
    if reply.approved != data.approved:
        # `approved` disagrees with `state`: trust neither.
        return PromptReply(
            state=PromptState.UNAVAILABLE,
            detail=f"inconsistent prompt reply (approved={data.approved}, state={data.state})",
        )
    return reply


class BusPrompter:
    """Prompter for an in-process child whose parent gate serves the shared bus."""

    def __init__(
        self,
        bus: EventBus,
        *,
        default_timeout: float = DEFAULT_PROMPT_TIMEOUT,
        ping_timeout: float = 0.5,
    ) -> None:
        self._bus = bus
        self._default_timeout = default_timeout
        self._ping_timeout = ping_timeout

    @property
    def forwards_to_bus(self) -> EventBus:
        """The bus this prompter asks on; a gate using it must not serve that bus."""
        return self._bus

    def available(self) -> bool:
        if not self._bus.has_listeners(CHANNEL_RPC_PROMPT):
            return False
        reply = request_sync(self._bus, CHANNEL_RPC_PING, {}, timeout=self._ping_timeout)
        return reply.get("success") is True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        payload = PermissionsPromptRequest(
            request_id=request.request_id,
            surface=request.surface,
            value=request.value,
            message=request.message,
            agent_name=request.agent,
            session_label=request.session_label,
            session_pattern=request.session_pattern,
        )
        budget = self._default_timeout if timeout is None else timeout
        envelope = request_sync(self._bus, CHANNEL_RPC_PROMPT, payload, timeout=budget)
        reply = reply_from_envelope(envelope)
        if not reply.approved and reply.detail:
            logger.info("rpc prompt %s not answered: %s", request.request_id, reply.detail)
        return reply
