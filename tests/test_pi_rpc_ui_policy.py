"""The dialog policy's sans-IO core: a UI request in, an action out, counters kept."""

from __future__ import annotations

import pytest

from askgate.adapters.pi_rpc.frames import ExtensionUIRequest, ExtensionUIResponse
from askgate.adapters.pi_rpc.ui_policy import (
    REASON_TITLE_SUFFIX,
    SCOPE_TITLE_SUFFIX,
    Answer,
    Ask,
    Block,
    DialogPolicy,
    Drain,
    UiRequestPolicy,
    parse_policy,
)
from askgate.prompters.base import PromptReply, PromptState

PERMISSION_OPTIONS = ["Yes", 'Yes, allow bash "git *" for this session', "No", "No, provide reason"]


def select(options: list[str], title: str = "Permission Required\nbash 'git push'", id="s1"):
    return ExtensionUIRequest(id=id, method="select", title=title, options=options)


@pytest.mark.parametrize(
    ("value", "policy"),
    [
        ("cancel", DialogPolicy.CANCEL),
        ("BLOCK", DialogPolicy.BLOCK),
        (" ask ", DialogPolicy.ASK),
        ("confirm", DialogPolicy.CANCEL),
        ("yes", DialogPolicy.CANCEL),
        ("", DialogPolicy.CANCEL),
        (None, DialogPolicy.CANCEL),
    ],
)
def test_unknown_policies_fall_back_to_cancel(value, policy):
    assert parse_policy(value) is policy


def test_there_is_no_auto_confirm_policy():
    assert {p.value for p in DialogPolicy} == {"cancel", "block", "ask"}


@pytest.mark.parametrize(
    "method", ["notify", "setStatus", "setWidget", "setTitle", "set_editor_text"]
)
def test_fire_and_forget_requests_are_counted_and_drained_under_every_policy(method):
    for policy in DialogPolicy:
        core = UiRequestPolicy(policy)
        assert core.handle(ExtensionUIRequest(id="n", method=method)) == Drain()
        assert core.handle(ExtensionUIRequest(id="m", method=method)) == Drain()
        assert core.counters.ui_requests_drained == 2
        assert core.counters.drained_by_method == {method: 2}
        assert core.counters.dialogs_cancelled == 0


def test_an_unknown_method_is_counted_and_ignored():
    core = UiRequestPolicy(DialogPolicy.ASK)
    assert core.handle(ExtensionUIRequest(id="x", method="custom")) == Drain()
    assert core.counters.ui_requests_unknown == 1


@pytest.mark.parametrize("method", ["select", "confirm", "input", "editor"])
def test_cancel_and_block(method):
    request = ExtensionUIRequest(id="d", method=method, title="t", options=["a"])
    cancel = UiRequestPolicy()
    assert cancel.handle(request) == Answer(ExtensionUIResponse(id="d", cancelled=True))
    assert cancel.counters.dialogs_cancelled == 1
    block = UiRequestPolicy("block")
    assert block.handle(request) == Block()
    assert block.counters.dialogs_blocked == 1


@pytest.mark.parametrize(
    "request_",
    [
        ExtensionUIRequest(id="i", method="input", title="Your name?"),
        ExtensionUIRequest(id="e", method="editor", title="Edit", prefill="x"),
        select(["red", "green", "blue"]),
        select(["Yes", "Yes", "No"]),
        select([]),
    ],
)
def test_ask_cancels_what_a_yes_no_human_cannot_answer(request_):
    core = UiRequestPolicy(DialogPolicy.ASK)
    action = core.handle(request_)
    assert action == Answer(ExtensionUIResponse(id=request_.id, cancelled=True))
    assert core.counters.dialogs_asked == 0


def test_ask_permission_select_shows_the_title_and_session_pattern():
    core = UiRequestPolicy(DialogPolicy.ASK)
    action = core.handle(select(PERMISSION_OPTIONS))
    assert isinstance(action, Ask)
    assert action.prompt.message == "Permission Required\nbash 'git push'"
    assert action.prompt.session_pattern == "git *"
    assert action.prompt.session_label == PERMISSION_OPTIONS[1]


@pytest.mark.parametrize(
    ("state", "value"),
    [
        (PromptState.APPROVED, "Yes"),
        (PromptState.APPROVED_FOR_SESSION, PERMISSION_OPTIONS[1]),
        (PromptState.DENIED, "No"),
        (PromptState.DENIED_WITH_REASON, "No, provide reason"),
    ],
)
def test_permission_select_answers_are_offered_strings(state, value):
    core = UiRequestPolicy(DialogPolicy.ASK)
    request = select(PERMISSION_OPTIONS)
    core.handle(request)
    answer = core.answer_for_reply(request, PromptReply(state=state, denial_reason="why"))
    assert answer.response == ExtensionUIResponse(id="s1", value=value)
    assert answer.response.value in PERMISSION_OPTIONS


@pytest.mark.parametrize("state", [PromptState.TIMED_OUT, PromptState.UNAVAILABLE])
def test_no_human_answer_is_cancelled(state):
    core = UiRequestPolicy(DialogPolicy.ASK)
    for request in (select(PERMISSION_OPTIONS), ExtensionUIRequest(id="c", method="confirm")):
        answer = core.answer_for_reply(request, PromptReply(state=state))
        assert answer.response.cancelled is True
        assert answer.response.value is None and answer.response.confirmed is None


def test_the_reason_dialog_is_answered_with_the_humans_reason_once():
    core = UiRequestPolicy(DialogPolicy.ASK)
    request = select(PERMISSION_OPTIONS)
    core.handle(request)
    core.answer_for_reply(
        request, PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="use make")
    )
    reason = ExtensionUIRequest(
        id="r", method="input", title="Permission Required" + REASON_TITLE_SUFFIX
    )
    assert core.handle(reason) == Answer(ExtensionUIResponse(id="r", value="use make"))
    # A second one is not a follow-up any more: a free-text input nobody can answer.
    assert core.handle(reason) == Answer(ExtensionUIResponse(id="r", cancelled=True))


def test_an_empty_reason_cancels_the_reason_dialog():
    core = UiRequestPolicy(DialogPolicy.ASK)
    request = select(PERMISSION_OPTIONS)
    core.answer_for_reply(request, PromptReply(state=PromptState.DENIED_WITH_REASON))
    reason = ExtensionUIRequest(id="r", method="input", title="x" + REASON_TITLE_SUFFIX)
    assert core.handle(reason) == Answer(ExtensionUIResponse(id="r", cancelled=True))


def test_a_session_grant_scope_is_answered_with_the_narrowest_option():
    core = UiRequestPolicy(DialogPolicy.ASK)
    request = select(["Yes", "Yes, for this session", "No", "No, provide reason"])
    core.answer_for_reply(request, PromptReply(state=PromptState.APPROVED_FOR_SESSION))
    scope = select(
        ["This subagent ('x') only", 'The whole session — allow bash "git *" for …'],
        title="Permission Required (Subagent)" + SCOPE_TITLE_SUFFIX,
        id="scope",
    )
    assert core.handle(scope) == Answer(
        ExtensionUIResponse(id="scope", value="This subagent ('x') only")
    )
    # Without a pending grant, the same select is not answered for anybody.
    assert core.handle(scope) == Answer(ExtensionUIResponse(id="scope", cancelled=True))


def test_plain_yes_no_selects_and_confirms():
    core = UiRequestPolicy(DialogPolicy.ASK)
    yes_no = select(["Allow", "Deny"], title="Dangerous command: rm -rf x")
    assert isinstance(core.handle(yes_no), Ask)
    approved = PromptReply(state=PromptState.APPROVED)
    denied = PromptReply(state=PromptState.DENIED)
    assert core.answer_for_reply(yes_no, approved).response.value == "Allow"
    assert core.answer_for_reply(yes_no, denied).response.value == "Deny"
    confirm = ExtensionUIRequest(id="c", method="confirm", title="t", message="m")
    action = core.handle(confirm)
    assert isinstance(action, Ask) and action.prompt.message == "t\nm"
    assert core.answer_for_reply(confirm, approved).response.confirmed is True
    assert core.answer_for_reply(confirm, denied).response.confirmed is False
    assert core.counters.dialogs_asked == 2  # two dialogs put to a human
    assert core.counters.dialogs_answered == 4
