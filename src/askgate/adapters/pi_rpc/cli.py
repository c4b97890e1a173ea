"""`askgate pi run [--transport rpc|stdio] [--dialogs cancel|block|ask] [--model M]
[--pi-command CMD] [--steer-stdin] [--json] PROMPT`

Starts a pi worker (RPC mode by default, or JSON print mode with `--transport stdio`),
sends PROMPT, shows progress (assistant text, tool executions) on stderr, answers the
worker's dialogs by policy, waits for the agent to settle, and prints the final text and
the counters (or one JSON object with --json). SIGINT, SIGTERM, SIGHUP and the death of
askgate's parent all stop the worker the same way: its stdin ends, askgate waits, then
SIGKILL, once. Exit status: 0 when the worker finished its turn, 1 when it failed, 2 on
bad usage, 128 + the signal's number when a signal stopped it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import msgspec
from rich.console import Console
from rich.markup import escape

from askgate.adapters.pi_rpc.client import DEFAULT_STOP_GRACE
from askgate.adapters.pi_rpc.frames import (
    ExtensionUIRequest,
    Frame,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from askgate.adapters.pi_rpc.runner import (
    DEFAULT_PROMPT_TIMEOUT,
    RunSummary,
    StopRequest,
    WorkerRun,
    worker_argv,
)
from askgate.adapters.pi_rpc.stdio import stdio_argv
from askgate.adapters.pi_rpc.ui_policy import DIALOGS, DialogPolicy
from askgate.adapters.pi_rpc.worker import (
    DIALOG_ANSWER_ENV,
    TRANSPORT_ENV,
    Transport,
    WorkerOptions,
    resolve_dialogs,
    resolve_transport,
    run_worker,
)

if TYPE_CHECKING:
    from askgate.prompt import Prompter

PROG = "askgate pi"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Drive pi workers over RPC.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="run one prompt on a pi worker")
    run.add_argument("prompt", metavar="PROMPT")
    run.add_argument(
        "--dialogs",
        default=None,
        metavar="cancel|block|ask",
        help="how the worker's dialogs are answered (default: $"
        + DIALOG_ANSWER_ENV
        + ", else cancel; never auto-confirmed)",
    )
    run.add_argument(
        "--transport",
        default=None,
        metavar="rpc|stdio",
        help="rpc (pi --mode rpc: dialogs, steering) or stdio (pi --mode json: no dialogs); "
        f"default: ${TRANSPORT_ENV}, else rpc. An rpc run that fails early is retried "
        "once on stdio",
    )
    run.add_argument(
        "--no-fallback",
        action="store_true",
        help="do not retry an early rpc failure on stdio",
    )
    run.add_argument(
        "--steer-stdin",
        action="store_true",
        help="send each line read on stdin to the running agent as a steer (rpc only)",
    )
    run.add_argument("--model", help="passed to the worker as --model")
    run.add_argument(
        "--pi-command",
        default="pi",
        metavar="CMD",
        help="the worker's command line, split like a shell (default: pi); "
        "askgate appends --mode rpc --no-session",
    )
    run.add_argument(
        "--prompt-timeout",
        type=float,
        default=DEFAULT_PROMPT_TIMEOUT,
        metavar="SECONDS",
        help="how long a human has for one dialog with --dialogs ask (default %(default)g)",
    )
    run.add_argument(
        "--stop-grace",
        type=float,
        default=DEFAULT_STOP_GRACE,
        metavar="SECONDS",
        help="after the worker's stdin ends, how long it has to exit before SIGKILL "
        "(default %(default)g)",
    )
    run.add_argument("--cwd", help="the worker's working directory (default: here)")
    run.add_argument("--json", action="store_true", help="print one JSON summary, no progress")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except _UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line, not a traceback (ASKGATE_DEBUG shows it)
        if os.environ.get("ASKGATE_DEBUG"):
            raise
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.prompt_timeout <= 0:
        print(f"{PROG}: --prompt-timeout must be positive", file=sys.stderr)
        return 2
    if not 0 <= args.stop_grace <= 600:
        print(f"{PROG}: --stop-grace must be between 0 and 600 seconds", file=sys.stderr)
        return 2
    try:
        worker_argv(args.pi_command, args.model)
        stdio_argv(args.pi_command, args.model)
    except ValueError as exc:
        print(f"{PROG}: bad --pi-command: {exc}", file=sys.stderr)
        return 2
    if args.cwd is not None and not os.path.isdir(args.cwd):
        print(f"{PROG}: --cwd {args.cwd!r} is not a directory", file=sys.stderr)
        return 2
    transport_choice = resolve_transport(args.transport, os.environ)
    dialogs_choice = resolve_dialogs(args.dialogs, os.environ)
    for choice in (transport_choice, dialogs_choice):
        if choice.warning:
            print(f"{PROG}: warning: {choice.warning}", file=sys.stderr)
    transport = Transport(transport_choice.value)
    dialogs = DialogPolicy(dialogs_choice.value)
    if args.steer_stdin and transport is Transport.STDIO:
        print(f"{PROG}: --steer-stdin needs the rpc transport", file=sys.stderr)
        return 2
    if transport is Transport.STDIO and dialogs_choice.source != "default":
        print(
            f"{PROG}: warning: the stdio transport has no dialogs: pi's extensions run "
            f"without a UI, so {dialogs_choice.source} {dialogs.value} does not apply",
            file=sys.stderr,
        )
    console = Console(stderr=True, highlight=False)
    progress = None if args.json else _Progress(console)
    options = WorkerOptions(
        pi_command=args.pi_command,
        model=args.model,
        transport=transport,
        dialogs=dialogs,
        cwd=args.cwd,
        prompt_timeout=args.prompt_timeout,
        stop_grace=args.stop_grace,
        fallback=not args.no_fallback,
    )
    stop = StopRequest()
    summary = asyncio.run(
        _main(args, options, _prompter(dialogs), stop, progress.show if progress else None)
    )
    if args.json:
        sys.stdout.write(msgspec.json.encode(summary).decode() + "\n")
    else:
        _print_summary(console, summary)
    if stop.reason in _STOP_EXIT:
        return _STOP_EXIT[stop.reason]
    return 0 if summary.ok else 1


# What stopped a run, and the exit status it ends with (128 + the signal's number).
_STOP_SIGNALS = {
    signal.SIGINT: "SIGINT",
    signal.SIGTERM: "SIGTERM",
    signal.SIGHUP: "SIGHUP",
    signal.SIGUSR2: "parent process exited",  # delivered by the kernel: PR_SET_PDEATHSIG
}
_STOP_EXIT = {
    "SIGINT": 128 + signal.SIGINT,
    "SIGTERM": 128 + signal.SIGTERM,
    "SIGHUP": 128 + signal.SIGHUP,
    "parent process exited": 128 + signal.SIGHUP,
}


async def _main(
    args: argparse.Namespace,
    options: WorkerOptions,
    prompter: Prompter,
    stop: StopRequest,
    on_frame: object,
) -> RunSummary:
    """The run with every stop path wired: the signals above stop it (the worker's stdin
    ends, askgate waits, then SIGKILL, once — in the run's own `finally`, which an
    exception takes too)."""
    loop = asyncio.get_running_loop()
    for signum, reason in _STOP_SIGNALS.items():
        loop.add_signal_handler(signum, stop.request, reason)
    _stop_when_parent_dies(stop)
    steering: list[asyncio.Task[None]] = []

    def started(run: WorkerRun) -> None:
        if args.steer_stdin:
            steering.append(asyncio.ensure_future(_steer_from_stdin(run)))

    def fell_back(first: RunSummary) -> None:
        print(
            f"{PROG}: warning: the rpc transport failed early ({first.error}): "
            "retrying once on stdio",
            file=sys.stderr,
        )

    try:
        return await run_worker(
            args.prompt,
            options,
            prompter=prompter,
            stop=stop,
            on_frame=on_frame,  # type: ignore[arg-type]
            on_fallback=fell_back,
            on_start=started,
        )
    finally:
        for task in steering:
            task.cancel()
        for signum in _STOP_SIGNALS:
            loop.remove_signal_handler(signum)


def _stop_when_parent_dies(stop: StopRequest) -> None:
    """Ask the kernel for SIGUSR2 when askgate's parent exits (Linux PR_SET_PDEATHSIG),
    and stop at once if it already has (the parent changed before the request took)."""
    parent = os.getppid()
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGUSR2), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        stop.request("parent process exited")


async def _steer_from_stdin(run: WorkerRun) -> None:
    """Each line on askgate's stdin becomes a typed `steer` for the running agent."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: warning: cannot read steers from stdin: {exc}", file=sys.stderr)
        return
    while line := await reader.readline():
        message = line.decode("utf-8", "replace").strip()
        if not message:
            continue
        result = await run.steer(message)
        answer = result.disposition if result.ok else f"refused: {result.error}"
        print(f"{PROG}: steer {message[:60]!r}: {answer}", file=sys.stderr)


def _prompter(dialogs: DialogPolicy) -> Prompter:
    from askgate.prompters.base import NoPrompter

    if dialogs is not DialogPolicy.ASK:
        return NoPrompter()
    from askgate.prompters.choose import default_prompter

    return default_prompter(session=None)


class _Progress:
    """Assistant text as it streams; one line per tool execution and dialog."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.mid_line = False

    def show(self, frame: Frame) -> None:
        if isinstance(frame, MessageUpdate):
            event = frame.assistantMessageEvent
            if isinstance(event, dict) and event.get("type") == "text_delta":
                self.console.print(escape(str(event.get("delta", ""))), end="", style="cyan")
                self.mid_line = True
            return
        if isinstance(frame, ToolExecutionStart):
            self._line(f"[bold]▶ {escape(frame.toolName)}[/] {escape(_short(frame.args))}")
        elif isinstance(frame, ToolExecutionEnd):
            mark = "[red]✗[/]" if frame.isError else "[green]✓[/]"
            self._line(f"{mark} {escape(frame.toolName)}")
        elif isinstance(frame, ExtensionUIRequest) and frame.method in DIALOGS:
            title = (frame.title or "").splitlines()[0] if frame.title else ""
            self._line(f"[yellow]? {escape(frame.method)}[/] {escape(title)}")

    def _line(self, text: str) -> None:
        if self.mid_line:
            self.console.print()
            self.mid_line = False
        self.console.print(text)


def _short(value: object, limit: int = 200) -> str:
    text = msgspec.json.encode(value).decode() if value is not None else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _print_summary(console: Console, summary: RunSummary) -> None:
    console.print()
    if summary.error:
        console.print(f"[red]{PROG}: {escape(summary.error)}[/]")
        tail = summary.stderr_tail.strip().splitlines()[-5:]
        for line in tail:
            console.print(f"  [dim]{escape(line)}[/]")
    counts = summary.counters
    parts = [f"{key}={value}" for key, value in counts.items() if key != "drainedByMethod"]
    by_method = counts.get("drainedByMethod") or {}
    if by_method:
        parts.append("drainedByMethod=" + ",".join(f"{k}:{v}" for k, v in by_method.items()))
    console.print(f"[dim]dialogs={summary.dialogs} " + " ".join(parts) + "[/]")
    print(summary.final_text)
