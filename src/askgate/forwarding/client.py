"""Child side: a Prompter that forwards each ask to the parent session's files.

Writes `requests/<id>.json`, waits for `responses/<id>.json`, and gives up early when
a parent that publishes heartbeats stops serving ("nobody is serving session X") rather
than stalling for the full timeout. A parent that has never published a heartbeat (the
real pi extension writes none) cannot be checked: the child waits for it within the
prompt budget and logs that it cannot tell whether anybody is there. Whatever happens,
both files are removed and the empty directories cleaned up before `prompt` returns.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from askgate.forwarding.env import (
    default_forwarding_root,
    is_subagent,
    log_unresolved,
    resolve_forwarding,
    unresolved_message,
)
from askgate.forwarding.io import (
    ChangeWaiter,
    Mode,
    cleanup_empty,
    is_served,
    now_ms,
    opened_directory,
    read_in,
    remove_in,
    session_parts,
    write_in,
)
from askgate.forwarding.protocol import (
    DEFAULT_TIMEOUT,
    MAX_RESPONSE_BYTES,
    POLL_INTERVAL,
    SERVING_GRACE,
    ClientExchange,
    Finished,
    ForwardedRequest,
    InvalidSessionId,
    Layout,
    SessionApproval,
    encode,
    new_request_id,
    quote_session_id,
)
from askgate.prompt import PromptReply, PromptRequest, PromptState

logger = logging.getLogger("askgate.forwarding")


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ForwardingPrompter:
    """Prompter of a subagent with no UI: the parent session's human answers."""

    def __init__(
        self,
        target_session: str | None,
        *,
        requester_session: str | None = None,
        agent_name: str | None = None,
        root: str | Path | None = None,
        mode: Mode = "watch",
        poll_interval: float = POLL_INTERVAL,
        serving_grace: float = SERVING_GRACE,
        default_timeout: float = DEFAULT_TIMEOUT,
        require_heartbeat: bool = True,
        check_interval: float = 0.25,
        step_ms: int = 2,
        unresolved_detail: str | None = None,
    ) -> None:
        self.target_session = target_session
        self.requester_session = requester_session
        self.agent_name = agent_name
        self.layout = Layout(root if root is not None else default_forwarding_root())
        self.mode: Mode = mode
        self.poll_interval = poll_interval
        self.serving_grace = serving_grace
        self.default_timeout = default_timeout
        # pi parents before the heartbeat (gg 5.x) publish none: set False to serve them,
        # at the price of waiting the whole timeout when nobody is there.
        self.require_heartbeat = require_heartbeat
        self.check_interval = check_interval
        self.step_ms = step_ms
        self.unresolved_detail = unresolved_detail or "no parent session to forward to"

    @classmethod
    def from_env(
        cls,
        *,
        current_session_id: str | None,
        env: Mapping[str, str] | None = None,
        session_dir: str | os.PathLike[str] | None = None,
        root: str | Path | None = None,
        **options: Any,
    ) -> ForwardingPrompter:
        """A prompter for this process as a headless child: target from the
        environment (seed 001). When no parent resolves, every prompt is unavailable
        and one structured log entry names the variables checked."""
        child = is_subagent(env, session_dir)
        resolution = resolve_forwarding(
            has_ui=False, is_subagent=child, current_session_id=current_session_id, env=env
        )
        detail = None
        if resolution.target is None:
            if child:
                log_unresolved(resolution, current_session_id=current_session_id)
                detail = unresolved_message(resolution)
            else:
                detail = "not a subagent: no parent session to forward to"
        return cls(
            resolution.target,
            requester_session=current_session_id,
            root=root if root is not None else default_forwarding_root(env),
            unresolved_detail=detail,
            **options,  # the constructor's own keyword arguments
        )

    def available(self) -> bool:
        if self.target_session is None:
            return False
        try:
            quote_session_id(self.target_session)
        except InvalidSessionId:
            return False
        if not self.require_heartbeat:
            return True
        # A parent without heartbeat support may well be there: worth asking.
        return self._serving(self.target_session) is not False

    def _serving(self, target: str) -> bool | None:
        """True: a fresh heartbeat; False: a stale or stopped one; None: none was ever
        published for `target` (a parent without heartbeat support)."""
        if not os.path.lexists(self.layout.heartbeat_path(target)):
            return None
        return is_served(self.layout, target)

    def unavailable_detail(self) -> str:
        """Why `available()` is false, in words the user can act on."""
        target = self.target_session
        if target is None:
            return self.unresolved_detail
        try:
            quote_session_id(target)
        except InvalidSessionId as exc:
            return str(exc)
        return (
            f"nobody is serving session {target} (no fresh heartbeat under"
            f" {self.layout.root}/serving): run the parent with askgate, or"
            f" `askgate forward serve --session {target}` at a terminal"
        )

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        target = self.target_session
        if target is None:
            return PromptReply(state=PromptState.UNAVAILABLE, detail=self.unresolved_detail)
        try:
            session_dir = self.layout.session_dir(target)
        except InvalidSessionId as exc:
            return PromptReply(state=PromptState.UNAVAILABLE, detail=str(exc))
        started = now_ms()
        forwarded = ForwardedRequest(
            id=new_request_id(started, os.getpid()),
            created_at=started,
            requester_session_id=request.session or self.requester_session or "unknown",
            target_session_id=target,
            requester_agent_name=request.agent or self.agent_name or "unknown",
            message=request.message,
            surface=request.surface,
            value=request.value,
            session_approval=SessionApproval(
                surface=request.surface, patterns=(request.session_pattern,)
            )
            if request.session_pattern
            else None,
        )
        budget = self.default_timeout if timeout is None else max(0.0, timeout)
        # Deadlines run on the monotonic clock: a wall-clock jump back must not stretch
        # the wait (nor a jump forward end it early). The files keep wall-clock times.
        exchange = ClientExchange(
            forwarded,
            started_ms=_monotonic_ms(),
            timeout_ms=int(budget * 1000),
            grace_ms=int(self.serving_grace * 1000),
            require_heartbeat=self.require_heartbeat,
        )
        # Every file operation goes through directory descriptors (forwarding/io.py).
        root, name = self.layout.root, f"{forwarded.id}.json"
        requests, responses = session_parts(target, "requests"), session_parts(target, "responses")
        waiter: ChangeWaiter | None = None
        try:
            for parts in (requests, responses):
                with opened_directory(root, parts, create=True):
                    pass
            # Watch before writing, so the answer cannot slip in unseen.
            waiter = ChangeWaiter(
                session_dir, mode=self.mode, poll_interval=self.poll_interval, step_ms=self.step_ms
            )
            write_in(root, requests, name, encode(forwarded))
            logger.info(
                "forwarded request %s to session %s",
                forwarded.id,
                target,
                extra={"event": "forwarded_permission.request_created"},
            )
            finished = self._await(exchange, waiter, responses, name)
        except OSError as exc:
            logger.warning("permission forwarding to session %s failed: %s", target, exc)
            finished = Finished(
                PromptReply(state=PromptState.UNAVAILABLE, detail=f"forwarding failed: {exc}"),
                "io_error",
            )
        finally:
            if waiter is not None:
                waiter.close()
            remove_in(root, requests, name)
            remove_in(root, responses, name)
            cleanup_empty(self.layout, target)
        logger.info(
            "request %s: %s (%s)",
            forwarded.id,
            finished.reply.state.value,
            finished.reply.detail or finished.event,
            extra={"event": f"forwarded_permission.{finished.event}"},
        )
        return finished.reply

    def _await(
        self, exchange: ClientExchange, waiter: ChangeWaiter, responses: tuple[str, ...], name: str
    ) -> Finished:
        target = exchange.request.target_session_id
        warned = False
        while True:
            try:
                data: bytes | None = read_in(self.layout.root, responses, name, MAX_RESPONSE_BYTES)
            except FileNotFoundError:
                data = None
            except OSError as exc:
                # There but unreadable (a symlink, a FIFO …): an unusable answer.
                data = f"unreadable: {exc}".encode()
            serving = self._serving(target) if self.require_heartbeat else True
            step = exchange.step(_monotonic_ms(), response=data, serving=serving)
            if exchange.unchecked and not warned:
                warned = True
                logger.warning(
                    "session %s publishes no serving heartbeat (a pi parent?): it cannot be "
                    "checked, waiting for its answer within the prompt budget",
                    target,
                    extra={"event": "forwarded_permission.parent_unchecked"},
                )
            if isinstance(step, Finished):
                return step
            remaining = (step.until_ms - _monotonic_ms()) / 1000
            waiter.wait(max(0.001, min(remaining, self.check_interval)))
