"""Run one prompt on a pi `--mode rpc` worker: start it, answer its UI requests by
policy, report progress, wait for the agent to settle, and summarise.

The worker's command line is the user's (`pi` by default, split like a shell would);
askgate appends ``--mode rpc --no-session`` and ``--model M`` when given.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from askgate.adapters.pi_rpc.client import DEFAULT_STOP_GRACE, PiRpcClient, WorkerError
from askgate.adapters.pi_rpc.frames import (
    AgentSettled,
    ExtensionUIRequest,
    Frame,
    GetLastAssistantText,
    MessageEnd,
    Prompt,
    Steer,
    ToolExecutionStart,
    UnknownFrame,
)
from askgate.adapters.pi_rpc.ui_policy import (
    Answer,
    Ask,
    DialogPolicy,
    UiAction,
    UiRequestPolicy,
)
from askgate.prompters.base import Prompter, PromptReply, PromptRequest, PromptState

DEFAULT_PROMPT_TIMEOUT = 600.0  # seconds a human has for one dialog (pi's forwarding budget)
DEFAULT_SETTLE_TIMEOUT = 3600.0
# A prompter that overruns its own timeout by this much is abandoned (answer: cancelled).
PROMPTER_GRACE = 5.0


class RunSummary(msgspec.Struct, kw_only=True, rename="camel"):
    """What `askgate pi run --json` prints."""

    ok: bool
    final_text: str
    error: str | None = None
    exit_status: int | None = None
    dialogs: str = "cancel"
    counters: dict[str, Any] = msgspec.field(default_factory=dict)
    stderr_tail: str = ""
    # `rpc` or `stdio`: the transport that produced this result.
    transport: str = "rpc"
    # The run was stopped from outside (a signal, the parent's death, a caller's stop).
    aborted: bool = False
    # Tool executions the worker started (a retry after one could run a tool twice).
    tools_started: int = 0
    # Set when this result comes from the stdio retry after an early rpc failure.
    fallback_from: str | None = None
    fallback_reason: str | None = None


class SteerResult(msgspec.Struct, kw_only=True, rename="camel"):
    """pi's answer to a `Steer`: `queued` (pi queued it) or `handled` (an input handler
    consumed it); `ok` false with `error` when the worker refused it."""

    ok: bool
    disposition: str | None = None
    error: str | None = None


class StopRequest:
    """A request to stop a run from outside (a signal handler, a parent's death, a caller):
    `request(reason)` is safe to call any number of times; the first reason is kept."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.reason: str | None = None

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.event.set()

    @property
    def requested(self) -> bool:
        return self.event.is_set()


def run_error(
    error: str | None,
    *,
    stopped: bool,
    stop: StopRequest | None,
    model_error: str | None,
    status: int | None,
) -> str | None:
    """Why a run failed, in order of precedence: stopped from outside, the worker's own
    error, the model call's, a non-zero exit (None: it did not fail). One rule for both
    transports."""
    if stopped:
        return f"stopped: {stop.reason if stop is not None else 'requested'}"
    if error is None and model_error is not None:
        return f"the model call failed: {model_error}"
    if error is None and status not in (0, None):
        return f"worker exited with status {status}"
    return error


async def until_stopped(work: Any, stop: StopRequest | None) -> bool:
    """Await `work` (a coroutine) unless `stop` is requested first: then cancel it.
    True when it was stopped."""
    task = asyncio.ensure_future(work)
    if stop is None:
        await task
        return False
    if stop.requested:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return True
    waiter = asyncio.ensure_future(stop.event.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task in done:
        task.result()  # its error, if any
        return False
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, WorkerError):
        await task
    return True


def worker_argv(pi_command: str, model: str | None = None) -> list[str]:
    """`pi_command` split as a shell would, plus askgate's arguments.
    Raises ValueError on an empty or unbalanced command."""
    argv = shlex.split(pi_command)
    if not argv:
        raise ValueError("--pi-command is empty")
    argv += ["--mode", "rpc", "--no-session"]
    if model:
        argv += ["--model", model]
    return argv


def assistant_text(message: Any) -> tuple[str | None, str | None]:
    """(text, error) of an assistant message frame's `message`; (None, None) for
    other roles."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None, None
    parts = message.get("content")
    text = ""
    if isinstance(parts, list):
        text = "".join(
            str(part.get("text", ""))
            for part in parts
            if isinstance(part, dict) and part.get("type") == "text"
        )
    error = None
    if message.get("stopReason") == "error":
        error = str(message.get("errorMessage") or "the model call failed")
    return text, error


class FrameTally:
    """What both transports keep from pi's event stream: the assistant's last text, the
    model call's error, the tool executions started and whether the agent settled aborted;
    `summary` turns it into the run's result by one rule."""

    def __init__(self) -> None:
        self.last_text = ""
        self.model_error: str | None = None
        self.tools_started = 0
        self.settled_aborted = False

    def count(self, frame: Frame) -> None:
        if isinstance(frame, MessageEnd):
            text, model_error = assistant_text(frame.message)
            if text is not None:
                self.last_text = text
                self.model_error = model_error
        elif isinstance(frame, ToolExecutionStart):
            self.tools_started += 1
        elif isinstance(frame, AgentSettled) and frame.aborted:
            self.settled_aborted = True

    def summary(
        self,
        error: str | None,
        *,
        stopped: bool,
        stop: StopRequest | None,
        status: int | None,
        **fields: Any,
    ) -> RunSummary:
        """The run's result: `error` (the worker's own) ranked by `run_error`; `fields`
        are the transport's own (dialogs, counters, stderr tail, transport)."""
        error = run_error(
            error, stopped=stopped, stop=stop, model_error=self.model_error, status=status
        )
        return RunSummary(
            ok=error is None,
            final_text=self.last_text,
            error=error,
            exit_status=status,
            aborted=stopped or self.settled_aborted,
            tools_started=self.tools_started,
            **fields,
        )


def prompt_in_thread(
    prompter: Prompter, request: PromptRequest, timeout: float
) -> asyncio.Future[PromptReply]:
    """Run the blocking `prompter.prompt` on a daemon thread (a human who never answers
    must not keep the process alive at exit)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[PromptReply] = loop.create_future()

    def settle(reply: PromptReply | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(reply)  # type: ignore[arg-type]

    def work() -> None:
        try:
            reply = prompter.prompt(request, timeout)
            if not isinstance(reply, PromptReply):
                raise TypeError(f"prompter returned {type(reply).__name__}")
        except BaseException as exc:  # reported on the loop; fail closed there
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, reply, None)

    threading.Thread(target=work, name="askgate-pi-dialog", daemon=True).start()
    return future


class WorkerRun:
    """One worker, one prompt."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        dialogs: DialogPolicy,
        prompter: Prompter,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        prompt_timeout: float = DEFAULT_PROMPT_TIMEOUT,
        settle_timeout: float = DEFAULT_SETTLE_TIMEOUT,
        command_timeout: float = 60.0,
        stop_grace: float = DEFAULT_STOP_GRACE,
        on_frame: Callable[[Frame], None] | None = None,
    ) -> None:
        self.client = PiRpcClient(argv, env=env, cwd=cwd, command_timeout=command_timeout)
        self.stop_grace = stop_grace
        self.policy = UiRequestPolicy(dialogs, reachable=prompter.available)
        self.prompter = prompter
        self.prompt_timeout = prompt_timeout
        self.settle_timeout = settle_timeout
        self.on_frame = on_frame
        self.tally = FrameTally()
        self._dialogs: set[asyncio.Task[None]] = set()

    def counters(self) -> dict[str, Any]:
        counters: dict[str, Any] = msgspec.to_builtins(self.policy.counters)
        counters["malformedFrames"] = self.client.malformed_frames
        counters["responsesMatched"] = self.client.responses_matched
        counters["responsesUnmatched"] = self.client.responses_unmatched
        return counters

    async def start(self) -> None:
        """Start the worker and begin answering its UI requests (`run` does this; a host
        that sends its own commands calls it, then `stop`)."""
        self.client.subscribe(self._on_frame)
        await self.client.start()

    async def stop(self) -> int | None:
        for task in self._dialogs:
            task.cancel()
        return await self.client.stop(self.stop_grace)

    async def steer(self, message: str) -> SteerResult:
        """Send a typed `steer` command to the running agent and return pi's answer."""
        try:
            response = await self.client.request(Steer(message=message))
        except WorkerError as exc:
            return SteerResult(ok=False, error=str(exc))
        data = response.data if isinstance(response.data, dict) else {}
        disposition = data.get("disposition")
        return SteerResult(
            ok=response.success,
            disposition=disposition if isinstance(disposition, str) else None,
            error=None if response.success else str(response.error or "refused"),
        )

    async def run(self, message: str, stop: StopRequest | None = None) -> RunSummary:
        """Send `message`, wait for the agent to settle, stop the worker, summarise. A
        `stop` request (or any error) ends the run the same way: stdin end, wait, SIGKILL."""
        error: str | None = None
        stopped = False
        try:
            await self.start()
            stopped = await until_stopped(self._converse(message), stop)
        except WorkerError as exc:
            error = str(exc)
        finally:
            status = await self.stop()
        return self.tally.summary(
            error,
            stopped=stopped,
            stop=stop,
            status=status,
            dialogs=self.policy.policy.value,
            counters=self.counters(),
            stderr_tail=self.client.stderr.text()[-4000:],
            transport="rpc",
        )

    async def _converse(self, message: str) -> None:
        response = await self.client.request(Prompt(message=message))
        if not response.success:
            raise WorkerError(f"the worker refused the prompt: {response.error}")
        await self.client.wait_settled(self.settle_timeout)
        await self._final_text()

    async def _final_text(self) -> None:
        try:
            response = await self.client.request(GetLastAssistantText(), timeout=10)
        except WorkerError:
            return  # keep the text seen in the stream
        data = response.data
        if response.success and isinstance(data, dict) and isinstance(data.get("text"), str):
            self.tally.last_text = data["text"]

    def _on_frame(self, frame: Frame) -> None:
        if isinstance(frame, ExtensionUIRequest):
            self._on_ui_request(frame)
        elif isinstance(frame, UnknownFrame) and frame.type == "extension_ui_request":
            self._act(self.policy.handle_unparsed(frame.fields))
        self.tally.count(frame)
        if self.on_frame is not None:
            self.on_frame(frame)

    def _on_ui_request(self, request: ExtensionUIRequest) -> None:
        try:
            action = self.policy.handle(request)
        except Exception as exc:
            # A dialog nobody answers hangs the worker: a bug here cancels it instead.
            action = self.policy.abandon(request, f"{type(exc).__name__}: {exc}")
        self._act(action)

    def _act(self, action: UiAction) -> None:
        if isinstance(action, Answer):
            self._spawn(self._send(action))
        elif isinstance(action, Ask):
            self._spawn(self._ask(action))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._dialogs.add(task)
        task.add_done_callback(self._dialogs.discard)

    async def _send(self, answer: Answer) -> None:
        # A worker that is gone has nothing waiting for the answer any more.
        with contextlib.suppress(WorkerError):
            await self.client.send(answer.response)

    async def _ask(self, ask: Ask) -> None:
        budget = self.prompt_timeout
        if ask.request.timeout:
            budget = min(budget, ask.request.timeout / 1000)
        try:
            reply = await asyncio.wait_for(
                prompt_in_thread(self.prompter, ask.prompt, budget), budget + PROMPTER_GRACE
            )
        except TimeoutError:
            reply = PromptReply(state=PromptState.TIMED_OUT, detail="the prompter overran")
        except Exception as exc:
            await self._send(self.policy.abandon(ask.request, str(exc)))
            return
        await self._send(self.policy.answer_for_reply(ask.request, reply))
