"""What askgate does with a worker's `extension_ui_request` frames (seed 004's two gates).

1. Fire-and-forget methods (`notify`, `setStatus`, `setWidget`, `setTitle`,
   `set_editor_text`) expect no answer: they are counted per method and dropped.
2. Dialogs (`select`, `confirm`, `input`, `editor`) park a promise in the worker that
   never resolves unless answered. The policy answers them:

   * ``cancel`` (default): ``{"cancelled": true}`` — pi reads it as "no" (confirm →
     false, select/input → undefined), so a permission dialog denies.
   * ``block``: leave it unanswered (for debugging; a dialog without a timeout hangs).
   * ``ask``: show it to a human through a `Prompter` (terminal, forwarding parent,
     approval server) and answer with what the human chose; a timeout, an unavailable
     human or a dialog no human choice can express is answered ``cancelled``.

   There is no auto-confirm policy, on purpose: an unattended transport never says
   "yes" for the user. An unknown policy name falls back to ``cancel``.

The pi permission extension's select ("Yes" / "Yes, for this session" (or a label naming
the pattern) / "No" / "No, provide reason") is answered with one of the offered strings;
after "No, provide reason" the extension opens an `input` dialog for the reason, which
is answered with the human's reason without asking again. A forwarded ask's follow-up
"Apply this session grant to:" select is answered with its first, narrowest option.

`UiRequestPolicy` is the sans-IO core: a request in, a `Drain` / `Answer` / `Block` /
`Ask` out; `answer_for_reply` turns the human's reply into the response frame.
"""

from __future__ import annotations

import collections
import logging
import re
from collections.abc import Callable
from enum import StrEnum

import msgspec

from askgate.adapters.pi_rpc.frames import ExtensionUIRequest, ExtensionUIResponse
from askgate.prompters.base import PromptReply, PromptRequest, PromptState

logger = logging.getLogger("askgate.pi_rpc")

FIRE_AND_FORGET = frozenset({"notify", "setStatus", "setWidget", "setTitle", "set_editor_text"})
DIALOGS = frozenset({"select", "confirm", "input", "editor"})

# The pi permission extension's options (@gotgenes/pi-permission-system, permission-dialog.ts).
APPROVE = "Yes"
DENY = "No"
DENY_WITH_REASON = "No, provide reason"
REASON_TITLE_SUFFIX = "\nShare why this request was denied (optional)."
SCOPE_TITLE_SUFFIX = "\nApply this session grant to:"
# The session option names its pattern when the extension has one to suggest
# ('Yes, allow bash "git *" for this session').
_SESSION_LABEL = re.compile(r'Yes, allow (?:[\w ]+?) "(?P<pattern>.*)" for this session')


class DialogPolicy(StrEnum):
    CANCEL = "cancel"
    BLOCK = "block"
    ASK = "ask"


def known_policy(value: str | None) -> DialogPolicy | None:
    """The policy `value` names (any case, surrounding blanks ignored), None if none."""
    if value is None:
        return None
    try:
        return DialogPolicy(value.strip().lower())
    except ValueError:
        return None


def parse_policy(value: str | None) -> DialogPolicy:
    """The policy named by `value`; anything unknown is `cancel` (fail safe). Says
    nothing: the caller that read the value reports a bad one, once."""
    return known_policy(value) or DialogPolicy.CANCEL


class UiCounters(msgspec.Struct, kw_only=True, rename="camel"):
    ui_requests_drained: int = 0
    drained_by_method: dict[str, int] = msgspec.field(default_factory=dict)
    dialogs_cancelled: int = 0
    dialogs_blocked: int = 0
    dialogs_asked: int = 0
    # Dialogs answered with a human's choice (a subset of the asked ones).
    dialogs_answered: int = 0
    # Requests of a method this policy does not know: ignored (nothing to answer).
    ui_requests_unknown: int = 0


class Drain(msgspec.Struct, frozen=True):
    """Nothing to send."""


class Answer(msgspec.Struct, frozen=True):
    response: ExtensionUIResponse


class Block(msgspec.Struct, frozen=True):
    """Leave the dialog pending."""


class Ask(msgspec.Struct, frozen=True):
    """Show `prompt` to a human, then call `UiRequestPolicy.answer_for_reply`."""

    request: ExtensionUIRequest
    prompt: PromptRequest


UiAction = Drain | Answer | Block | Ask


def cancelled(request_id: str) -> ExtensionUIResponse:
    return ExtensionUIResponse(id=request_id, cancelled=True)


def is_permission_select(request: ExtensionUIRequest) -> bool:
    """The extension's four-option decision select."""
    options = request.options or []
    return (
        len(options) == 4
        and options[0] == APPROVE
        and options[2] == DENY
        and options[3] == DENY_WITH_REASON
    )


def _yes_no_options(options: list[str]) -> tuple[str, str] | None:
    """A plain two-way select such as ["Yes", "No"] or ["Allow", "Deny"]."""
    yes = [o for o in options if o.strip().lower() in {"yes", "allow", "approve"}]
    no = [o for o in options if o.strip().lower() in {"no", "deny", "reject"}]
    if len(yes) == 1 and len(no) == 1:
        return yes[0], no[0]
    return None


class UiRequestPolicy:
    """Decides each UI request; keeps the counters."""

    def __init__(
        self,
        policy: DialogPolicy | str = DialogPolicy.CANCEL,
        *,
        reachable: Callable[[], bool] | None = None,
    ) -> None:
        self.policy = policy if isinstance(policy, DialogPolicy) else parse_policy(policy)
        self.counters = UiCounters()
        # Whether a human can be asked at all (the prompter's `available`): a dialog that
        # nobody can be shown is cancelled at once and not counted as asked.
        self.reachable = reachable or (lambda: True)
        # Reasons the human gave for "No, provide reason", waiting for the extension's
        # follow-up input dialog (pi preflights tool calls one at a time: FIFO is exact).
        self._reasons: collections.deque[str | None] = collections.deque()
        self._scopes_due = 0

    def handle(self, request: ExtensionUIRequest) -> UiAction:
        method = request.method
        if method in FIRE_AND_FORGET:
            self.counters.ui_requests_drained += 1
            by_method = self.counters.drained_by_method
            by_method[method] = by_method.get(method, 0) + 1
            return Drain()
        if method not in DIALOGS:
            self.counters.ui_requests_unknown += 1
            return Drain()
        follow_up = self._follow_up(request)
        if follow_up is not None:
            return follow_up
        if self.policy is DialogPolicy.BLOCK:
            self.counters.dialogs_blocked += 1
            return Block()
        if self.policy is DialogPolicy.ASK:
            prompt = self._prompt_for(request)
            if prompt is not None and self._reachable():
                self.counters.dialogs_asked += 1
                return Ask(request, prompt)
            logger.info("dialog %s (%s) cannot be put to a human: cancelled", request.id, method)
        self.counters.dialogs_cancelled += 1
        return Answer(cancelled(request.id))

    def handle_unparsed(self, fields: dict[str, object]) -> UiAction:
        """A UI request whose fields do not have the documented types (it arrived as an
        unknown frame). A dialog among them is still waited on: cancel it."""
        method, request_id = fields.get("method"), fields.get("id")
        if method in DIALOGS and isinstance(request_id, str):
            logger.warning("malformed %s dialog %s: cancelled", method, request_id)
            self.counters.dialogs_cancelled += 1
            return Answer(cancelled(request_id))
        self.counters.ui_requests_unknown += 1
        return Drain()

    def answer_for_reply(self, request: ExtensionUIRequest, reply: PromptReply) -> Answer:
        """The response to an `Ask`ed dialog, given the human's reply (or a timeout)."""
        response = self._response_for(request, reply)
        if reply.state is PromptState.UNAVAILABLE and self.counters.dialogs_asked:
            self.counters.dialogs_asked -= 1  # nobody could be shown it after all
        if response.cancelled:
            self.counters.dialogs_cancelled += 1
        else:
            self.counters.dialogs_answered += 1
        return Answer(response)

    def abandon(self, request: ExtensionUIRequest, why: str) -> Answer:
        """The prompter failed: answer cancelled."""
        logger.warning("dialog %s: prompter failed (%s): cancelled", request.id, why)
        self.counters.dialogs_cancelled += 1
        return Answer(cancelled(request.id))

    # -- internals

    def _reachable(self) -> bool:
        try:
            return bool(self.reachable())
        except Exception:  # a failing check reaches nobody: cancel (fail closed)
            return False

    def _follow_up(self, request: ExtensionUIRequest) -> Answer | None:
        """The second dialog of an answer the human already gave."""
        title = request.title or ""
        if request.method == "input" and title.endswith(REASON_TITLE_SUFFIX) and self._reasons:
            reason = self._reasons.popleft()
            if not reason:
                self.counters.dialogs_cancelled += 1
                return Answer(cancelled(request.id))  # the extension: denied, no reason
            self.counters.dialogs_answered += 1
            return Answer(ExtensionUIResponse(id=request.id, value=reason))
        if request.method == "select" and title.endswith(SCOPE_TITLE_SUFFIX) and self._scopes_due:
            self._scopes_due -= 1
            options = request.options or []
            if not options:
                self.counters.dialogs_cancelled += 1
                return Answer(cancelled(request.id))
            # The first option is "This subagent only": the narrowest grant.
            self.counters.dialogs_answered += 1
            return Answer(ExtensionUIResponse(id=request.id, value=options[0]))
        return None

    def _prompt_for(self, request: ExtensionUIRequest) -> PromptRequest | None:
        title = request.title or ""
        method = request.method
        if method == "confirm":
            text = f"{title}\n{request.message}" if request.message else title
            return PromptRequest(
                request_id=request.id, surface="pi_dialog", value=title, message=text
            )
        if method == "select" and is_permission_select(request):
            session_option = (request.options or [])[1]
            named = _SESSION_LABEL.fullmatch(session_option)
            return PromptRequest(
                request_id=request.id,
                surface="pi_dialog",
                value=title,
                message=title,
                session_pattern=named["pattern"] if named else session_option,
                session_label=session_option,
            )
        if method == "select" and _yes_no_options(request.options or []) is not None:
            return PromptRequest(
                request_id=request.id, surface="pi_dialog", value=title, message=title
            )
        # A free choice or free text: a yes/no prompter cannot express the answer.
        return None

    def _response_for(self, request: ExtensionUIRequest, reply: PromptReply) -> ExtensionUIResponse:
        state = reply.state
        if state in (PromptState.TIMED_OUT, PromptState.UNAVAILABLE):
            logger.info("dialog %s: %s (%s): cancelled", request.id, state.value, reply.detail)
            return cancelled(request.id)
        if request.method == "confirm":
            return ExtensionUIResponse(id=request.id, confirmed=reply.approved)
        options = request.options or []
        if is_permission_select(request):
            if state is PromptState.APPROVED:
                return ExtensionUIResponse(id=request.id, value=APPROVE)
            if state is PromptState.APPROVED_FOR_SESSION:
                self._scopes_due += 1
                return ExtensionUIResponse(id=request.id, value=options[1])
            if state is PromptState.DENIED_WITH_REASON:
                self._reasons.append(reply.denial_reason)
                return ExtensionUIResponse(id=request.id, value=DENY_WITH_REASON)
            return ExtensionUIResponse(id=request.id, value=DENY)
        pair = _yes_no_options(options)
        if pair is None:
            return cancelled(request.id)
        return ExtensionUIResponse(id=request.id, value=pair[0] if reply.approved else pair[1])
