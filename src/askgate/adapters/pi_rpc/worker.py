"""A pi worker run, typed, for callers that embed one (and for `askgate pi run`).

    from askgate.adapters.pi_rpc.worker import WorkerOptions, run_worker

    summary = asyncio.run(run_worker("fix the tests", WorkerOptions(model="m")))

Seed 004's worker layer: two transports (`rpc`, the default here: dialogs answered by
policy or asked of a human, steering; `stdio`: pi's JSON print mode, no dialogs), chosen by
`WorkerOptions.transport` or `PI_CREW_WORKER_TRANSPORT`; the dialog policy by
`WorkerOptions.dialogs` or `PI_CREW_RPC_DIALOG_ANSWER`; and one fallback: an rpc run that
failed early is retried once on stdio. "Early" is the seed's double-execution guard — an
error, no final text, not aborted — and one more condition of askgate's: no tool execution
had started (a tool that ran must not run twice).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum

import msgspec

from askgate.adapters.pi_rpc.client import DEFAULT_STOP_GRACE
from askgate.adapters.pi_rpc.frames import Frame
from askgate.adapters.pi_rpc.runner import (
    DEFAULT_PROMPT_TIMEOUT,
    DEFAULT_SETTLE_TIMEOUT,
    RunSummary,
    StopRequest,
    WorkerRun,
    worker_argv,
)
from askgate.adapters.pi_rpc.stdio import StdioWorkerRun, stdio_argv
from askgate.adapters.pi_rpc.ui_policy import DialogPolicy, known_policy
from askgate.prompters.base import NoPrompter, Prompter

TRANSPORT_ENV = "PI_CREW_WORKER_TRANSPORT"
DIALOG_ANSWER_ENV = "PI_CREW_RPC_DIALOG_ANSWER"


class Transport(StrEnum):
    RPC = "rpc"
    STDIO = "stdio"


class Choice(msgspec.Struct, frozen=True):
    """A setting as resolved from a flag, then the environment, then the default, with
    the one warning line to print when a given value was not usable."""

    value: str
    source: str  # "flag", the environment variable's name, or "default"
    warning: str | None = None


def resolve_transport(flag: str | None, env: Mapping[str, str]) -> Choice:
    """`--transport`, else `$PI_CREW_WORKER_TRANSPORT`, else `rpc`. An unknown value
    falls back to `rpc` with a warning (rpc is the transport whose dialogs askgate
    controls: it never answers yes)."""
    for given, source in ((flag, "--transport"), (env.get(TRANSPORT_ENV), TRANSPORT_ENV)):
        if given is None or not given.strip():
            continue
        name = given.strip().lower()
        if name in {transport.value for transport in Transport}:
            return Choice(name, source)
        return Choice(Transport.RPC.value, source, f"unknown {source} {given!r}: using rpc")
    return Choice(Transport.RPC.value, "default")


def resolve_dialogs(flag: str | None, env: Mapping[str, str]) -> Choice:
    """`--dialogs`, else `$PI_CREW_RPC_DIALOG_ANSWER` (the seed's name: `cancel` or
    `block`; askgate's `ask` too), else `cancel`. Anything invalid fails safe to `cancel`
    with one warning line."""
    for given, source in ((flag, "--dialogs"), (env.get(DIALOG_ANSWER_ENV), DIALOG_ANSWER_ENV)):
        if given is None or not given.strip():
            continue
        policy = known_policy(given)
        if policy is not None:
            return Choice(policy.value, source)
        return Choice(
            DialogPolicy.CANCEL.value, source, f"unknown {source} {given!r}: using cancel"
        )
    return Choice(DialogPolicy.CANCEL.value, "default")


class WorkerOptions(msgspec.Struct, kw_only=True):
    """Everything a worker run needs besides its prompt."""

    pi_command: str = "pi"
    model: str | None = None
    transport: Transport = Transport.RPC
    dialogs: DialogPolicy = DialogPolicy.CANCEL
    cwd: str | None = None
    env: dict[str, str] | None = None
    prompt_timeout: float = DEFAULT_PROMPT_TIMEOUT
    settle_timeout: float = DEFAULT_SETTLE_TIMEOUT
    command_timeout: float = 60.0
    # After the worker's stdin ends, how long it has to exit before SIGKILL.
    stop_grace: float = DEFAULT_STOP_GRACE
    # Retry an early rpc failure once on stdio (the seed's fallback).
    fallback: bool = True


def is_early_rpc_failure(summary: RunSummary) -> bool:
    """The only rpc result retried on stdio: it failed, produced no final text, was not
    aborted, and started no tool (so retrying cannot run anything twice)."""
    return (
        summary.transport == Transport.RPC.value
        and summary.error is not None
        and not summary.final_text
        and not summary.aborted
        and summary.tools_started == 0
    )


async def run_worker(
    prompt: str,
    options: WorkerOptions,
    *,
    prompter: Prompter | None = None,
    stop: StopRequest | None = None,
    on_frame: Callable[[Frame], None] | None = None,
    on_fallback: Callable[[RunSummary], None] | None = None,
    on_start: Callable[[WorkerRun], None] | None = None,
) -> RunSummary:
    """Run `prompt` on one worker (and, after an early rpc failure, once more on stdio).
    `prompter` answers dialogs under `DialogPolicy.ASK`; `stop` ends the run from
    outside; `on_start` receives the rpc run (to steer it); `on_fallback` is told of a
    retry before it starts."""
    if options.transport is Transport.STDIO:
        return await _stdio(prompt, options, stop, on_frame)
    run = WorkerRun(
        worker_argv(options.pi_command, options.model),
        dialogs=options.dialogs,
        prompter=prompter if prompter is not None else NoPrompter(),
        env=options.env,
        cwd=options.cwd,
        prompt_timeout=options.prompt_timeout,
        settle_timeout=options.settle_timeout,
        command_timeout=options.command_timeout,
        stop_grace=options.stop_grace,
        on_frame=on_frame,
    )
    if on_start is not None:
        on_start(run)
    first = await run.run(prompt, stop)
    if not options.fallback or not is_early_rpc_failure(first):
        return first
    if stop is not None and stop.requested:
        return first
    if on_fallback is not None:
        on_fallback(first)
    second = await _stdio(prompt, options, stop, on_frame)
    second.fallback_from = Transport.RPC.value
    second.fallback_reason = first.error
    return second


async def _stdio(
    prompt: str,
    options: WorkerOptions,
    stop: StopRequest | None,
    on_frame: Callable[[Frame], None] | None,
) -> RunSummary:
    run = StdioWorkerRun(
        stdio_argv(options.pi_command, options.model),
        env=options.env,
        cwd=options.cwd,
        settle_timeout=options.settle_timeout,
        stop_grace=options.stop_grace,
        on_frame=on_frame,
    )
    return await run.run(prompt, stop)
