"""The RPC client, the dialog policy and the runner against a worker script that speaks
pi's documented protocol (tests/pi_rpc_worker.py)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

import pytest

from askgate.adapters.pi_rpc.client import PiRpcClient, WorkerError, scrubbed_env
from askgate.adapters.pi_rpc.frames import (
    AgentEnd,
    AgentSettled,
    Frame,
    Prompt,
    UnknownFrame,
)
from askgate.adapters.pi_rpc.runner import WorkerRun
from askgate.adapters.pi_rpc.ui_policy import DialogPolicy
from askgate.prompters.base import NoPrompter, PromptReply, PromptRequest, PromptState
from conftest import ScriptedPrompter

WORKER = Path(__file__).with_name("pi_rpc_worker.py")


def worker(*args: str) -> list[str]:
    return [sys.executable, str(WORKER), *args, "--mode", "rpc"]


class SilentPrompter:
    """A real prompter whose human never answers: it waits out the timeout."""

    def __init__(self) -> None:
        self.seen: list[PromptRequest] = []
        self._never = threading.Event()

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        self.seen.append(request)
        self._never.wait(timeout)
        return PromptReply(state=PromptState.TIMED_OUT, detail="nobody answered")


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def _run_worker(tmp_path: Path, *args: str, dialogs=DialogPolicy.CANCEL, prompter=None, **kw):
    side = tmp_path / "side-effect.txt"
    log = tmp_path / "in.jsonl"
    argv = worker(*args, "--side-effect", str(side), "--log", str(log))
    seen: list[Frame] = []
    runner = WorkerRun(
        argv, dialogs=dialogs, prompter=prompter or NoPrompter(), on_frame=seen.append, **kw
    )
    summary = run(runner.run("please run the tool"))
    sent = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return summary, side, sent, seen


# ---------------------------------------------------------------- client


def test_settles_on_agent_end_for_the_old_line_and_counts_everything(tmp_path):
    summary, side, sent, seen = _run_worker(tmp_path, "--garbage", "--crlf")
    assert summary.ok, summary.error
    assert summary.final_text == "All done\u2028with a line separator"
    assert side.read_text() == "ran\n"  # no dialog: the tool ran
    counters = summary.counters
    assert counters["uiRequestsDrained"] == 3
    assert counters["drainedByMethod"] == {"setStatus": 2, "notify": 1}
    assert counters["malformedFrames"] == 4
    assert counters["responsesMatched"] == 2  # prompt + get_last_assistant_text
    assert counters["responsesUnmatched"] == 1
    # The unknown frame type reached subscribers.
    assert any(isinstance(f, UnknownFrame) and f.type == "brand_new_event" for f in seen)
    # The stop began by ending the worker's stdin (seed 004: stdin end, wait, SIGKILL).
    assert [f["type"] for f in sent] == ["prompt", "get_last_assistant_text", "stdin-eof"]


def test_settles_on_agent_settled_for_the_new_line(tmp_path):
    seen: list[Frame] = []

    async def go() -> Frame:
        async with PiRpcClient(worker("--line", "1.6")) as client:
            client.subscribe(seen.append)
            response = await client.request(Prompt(message="hi"))
            assert response.data == {"disposition": "started"}
            return await client.wait_settled(30)

    settled = run(go())
    assert isinstance(settled, AgentSettled)
    # agent_end came first but did not settle the run.
    kinds = [type(f) for f in seen]
    assert kinds.index(AgentEnd) < kinds.index(AgentSettled)


def test_command_timeout_raises_and_the_worker_is_stopped(tmp_path):
    async def go() -> int | None:
        client = PiRpcClient(worker("--no-response"), command_timeout=0.5)
        await client.start()
        with pytest.raises(WorkerError, match="no response"):
            await client.request(Prompt(message="hi"))
        return await client.stop()

    assert run(go()) == 0  # stdin closed -> the worker exits on its own


def test_worker_dying_fails_pending_commands_and_settle(tmp_path):
    async def go() -> tuple[str, str]:
        client = PiRpcClient(worker("--crash"))
        await client.start()
        with pytest.raises(WorkerError, match="exited with status 3") as first:
            await client.request(Prompt(message="hi"))
        with pytest.raises(WorkerError) as second:
            await client.wait_settled(5)
        await client.stop()
        assert "worker crashed" in client.stderr.text()
        return str(first.value), str(second.value)

    run(go())


def test_stop_escalates_to_kill_once_for_a_stubborn_worker():
    async def go() -> tuple[int | None, bool]:
        client = PiRpcClient(worker("--ignore-eof", "--ignore-term"))
        await client.start()
        status = await client.stop(grace=0.5)
        killed_once = client._killed
        client._kill()  # the guard: a second kill is a no-op
        return status, killed_once

    status, killed = run(go())
    assert status == -9
    assert killed


def test_stop_kills_a_worker_that_ignores_the_end_of_its_stdin():
    """Seed 004's orderly stop: stdin end, wait, then SIGKILL (no SIGTERM in between)."""

    async def go() -> int | None:
        client = PiRpcClient(worker("--ignore-eof", "--ignore-term"))
        await client.start()
        return await client.stop(grace=0.5)

    assert run(go()) == -9


def test_stderr_is_bounded_and_keeps_the_end():
    async def go() -> str:
        client = PiRpcClient(worker("--stderr-bytes", "200000"), stderr_limit=1000)
        await client.start()
        await client.stop()
        return client.stderr.text()

    text = run(go())
    assert text.endswith("last words\n")
    assert "bytes dropped" in text
    assert len(text) < 1100


def test_env_is_scrubbed_of_askgate_secrets(tmp_path, monkeypatch):
    dump = tmp_path / "env.json"
    monkeypatch.setenv("ASKGATE_TOKEN", "s3cret")
    monkeypatch.setenv("ASKGATE_SERVER_TOKEN", "s3cret")
    monkeypatch.setenv("ASKGATE_DATABASE_URL", "postgresql://u:p@h/db")
    monkeypatch.setenv("ASKGATE_NOTIFY_SECRET", "x")
    monkeypatch.setenv("ASKGATE_PROMPT_TIMEOUT", "5")

    async def go() -> None:
        client = PiRpcClient(worker("--env-dump", str(dump)))
        await client.start()
        await client.stop()

    run(go())
    env = json.loads(dump.read_text())
    assert not {"ASKGATE_TOKEN", "ASKGATE_SERVER_TOKEN", "ASKGATE_DATABASE_URL"} & set(env)
    assert "ASKGATE_NOTIFY_SECRET" not in env
    assert env["ASKGATE_PROMPT_TIMEOUT"] == "5"
    assert "PATH" in env
    assert "ASKGATE_TOKEN" not in scrubbed_env({"ASKGATE_TOKEN": "x"})


def test_missing_worker_binary_is_a_worker_error(tmp_path):
    summary = run(
        WorkerRun(
            [str(tmp_path / "no-such-pi"), "--mode", "rpc"],
            dialogs=DialogPolicy.CANCEL,
            prompter=NoPrompter(),
        ).run("hi")
    )
    assert not summary.ok
    assert "cannot start" in (summary.error or "")


def test_a_failing_subscriber_does_not_stop_the_reader():
    def broken(frame: Frame) -> None:
        raise RuntimeError("boom")

    async def go() -> Frame:
        async with PiRpcClient(worker()) as client:
            client.subscribe(broken)
            await client.request(Prompt(message="hi"))
            return await client.wait_settled(30)

    assert isinstance(run(go()), AgentEnd)


# ---------------------------------------------------------------- dialogs


@pytest.mark.parametrize("dialog", ["confirm", "permission", "input"])
def test_cancel_policy_cancels_every_dialog_and_the_tool_does_not_run(tmp_path, dialog):
    summary, side, sent, _ = _run_worker(tmp_path, "--dialog", dialog)
    assert summary.ok
    assert not side.exists() or dialog == "input"  # input does not gate the tool
    answers = [f for f in sent if f["type"] == "extension_ui_response"]
    assert answers == [{"type": "extension_ui_response", "id": "dlg-1", "cancelled": True}]
    assert summary.counters["dialogsCancelled"] == 1
    assert summary.counters["dialogsAsked"] == 0


def test_an_unknown_policy_value_cancels(tmp_path):
    summary, side, _sent, _ = _run_worker(tmp_path, "--dialog", "confirm", dialogs="yes-please")
    assert not side.exists()
    assert summary.dialogs == "cancel"
    assert summary.counters["dialogsCancelled"] == 1


def test_block_policy_leaves_the_dialog_pending(tmp_path):
    # The worker waits for the answer; the run ends when the settle budget runs out.
    summary, side, sent, _ = _run_worker(
        tmp_path, "--dialog", "confirm", dialogs=DialogPolicy.BLOCK, settle_timeout=1.0
    )
    assert not summary.ok
    assert "did not settle" in (summary.error or "")
    assert not side.exists()
    assert [f for f in sent if f["type"] == "extension_ui_response"] == []
    assert summary.counters["dialogsBlocked"] == 1


@pytest.mark.parametrize(
    ("state", "expected", "ran"),
    [
        (PromptState.APPROVED, {"confirmed": True}, True),
        (PromptState.APPROVED_FOR_SESSION, {"confirmed": True}, True),
        (PromptState.DENIED, {"confirmed": False}, False),
        (PromptState.TIMED_OUT, {"cancelled": True}, False),
        (PromptState.UNAVAILABLE, {"cancelled": True}, False),
    ],
)
def test_ask_policy_confirm_answers_what_the_human_chose(tmp_path, state, expected, ran):
    asked = 0 if state is PromptState.UNAVAILABLE else 1  # nobody reached: not asked
    prompter = ScriptedPrompter([state])
    summary, side, sent, _ = _run_worker(
        tmp_path, "--dialog", "confirm", dialogs=DialogPolicy.ASK, prompter=prompter
    )
    answers = [f for f in sent if f["type"] == "extension_ui_response"]
    assert answers == [{"type": "extension_ui_response", "id": "dlg-1", **expected}]
    assert side.exists() is ran
    assert summary.counters["dialogsAsked"] == asked
    assert prompter.seen[0].message == 'Allow tool call?\nbash {"command":"x"}'


@pytest.mark.parametrize(
    ("reply", "values", "ran"),
    [
        (PromptReply(state=PromptState.APPROVED), ["Yes"], True),
        (PromptReply(state=PromptState.APPROVED_FOR_SESSION), ["Yes, for this session"], True),
        (PromptReply(state=PromptState.DENIED), ["No"], False),
        (
            PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="use make"),
            ["No, provide reason", "use make"],
            False,
        ),
        (PromptReply(state=PromptState.TIMED_OUT), [None], False),
    ],
)
def test_ask_policy_answers_the_permission_select_with_an_offered_option(
    tmp_path, reply, values, ran
):
    prompter = ScriptedPrompter([reply])
    _summary, side, sent, _ = _run_worker(
        tmp_path, "--dialog", "permission", dialogs=DialogPolicy.ASK, prompter=prompter
    )
    answers = [f for f in sent if f["type"] == "extension_ui_response"]
    assert [a.get("value") for a in answers] == values
    assert side.exists() is ran
    assert len(prompter.seen) == 1  # the reason's input dialog is not asked again
    assert prompter.seen[0].session_label == "Yes, for this session"


def test_ask_policy_cancels_free_text_dialogs(tmp_path):
    prompter = ScriptedPrompter([])  # would raise if asked
    summary, _, sent, _ = _run_worker(
        tmp_path, "--dialog", "input", dialogs=DialogPolicy.ASK, prompter=prompter
    )
    assert [f.get("cancelled") for f in sent if f["type"] == "extension_ui_response"] == [True]
    assert summary.counters["dialogsCancelled"] == 1


def test_ask_policy_no_answer_within_the_budget_cancels_without_deadlock(tmp_path):
    prompter = SilentPrompter()
    summary, side, sent, _ = _run_worker(
        tmp_path,
        "--dialog",
        "confirm",
        dialogs=DialogPolicy.ASK,
        prompter=prompter,
        prompt_timeout=0.5,
    )
    assert summary.ok
    assert not side.exists()
    assert [f.get("cancelled") for f in sent if f["type"] == "extension_ui_response"] == [True]
    assert summary.counters["dialogsCancelled"] == 1


def test_ask_policy_prompter_failure_cancels(tmp_path):
    class Broken:
        def available(self) -> bool:
            return True

        def prompt(self, request, timeout=None):
            raise OSError("tty gone")

    _summary, side, sent, _ = _run_worker(
        tmp_path, "--dialog", "permission", dialogs=DialogPolicy.ASK, prompter=Broken()
    )
    assert not side.exists()
    assert [f.get("cancelled") for f in sent if f["type"] == "extension_ui_response"] == [True]


def test_dialog_timeout_caps_the_human_budget(tmp_path):
    prompter = SilentPrompter()
    summary, side, _, _ = _run_worker(
        tmp_path,
        "--dialog",
        "confirm",
        "--dialog-timeout",
        "300",
        dialogs=DialogPolicy.ASK,
        prompter=prompter,
        prompt_timeout=600,
    )
    assert summary.ok
    assert not side.exists()


@pytest.mark.parametrize("policy", [DialogPolicy.CANCEL, DialogPolicy.ASK])
def test_a_malformed_dialog_is_cancelled_not_left_hanging(tmp_path, policy):
    prompter = ScriptedPrompter([])  # must not be asked
    summary, side, sent, _ = _run_worker(
        tmp_path, "--dialog", "malformed", dialogs=policy, prompter=prompter, settle_timeout=20
    )
    assert summary.ok, summary.error
    assert [f.get("cancelled") for f in sent if f["type"] == "extension_ui_response"] == [True]
    assert summary.counters["dialogsCancelled"] == 1
    assert not side.exists()
