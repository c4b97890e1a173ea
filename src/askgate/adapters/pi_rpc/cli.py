"""`askgate pi run [--dialogs cancel|block|ask] [--model M] [--pi-command CMD] [--json] PROMPT`

Starts a pi worker in RPC mode, sends PROMPT, shows progress (assistant text, tool
executions) on stderr, answers the worker's dialogs by policy, waits for the agent to
settle, and prints the final text and the counters (or one JSON object with --json).
Exit status: 0 when the worker finished its turn, 1 when it failed, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import msgspec
from rich.console import Console
from rich.markup import escape

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
    WorkerRun,
    worker_argv,
)
from askgate.adapters.pi_rpc.ui_policy import DIALOGS, DialogPolicy, parse_policy

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
        default="cancel",
        metavar="cancel|block|ask",
        help="how the worker's dialogs are answered (default cancel; never auto-confirmed)",
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
    try:
        argv = worker_argv(args.pi_command, args.model)
    except ValueError as exc:
        print(f"{PROG}: bad --pi-command: {exc}", file=sys.stderr)
        return 2
    if args.cwd is not None and not os.path.isdir(args.cwd):
        print(f"{PROG}: --cwd {args.cwd!r} is not a directory", file=sys.stderr)
        return 2
    dialogs = parse_policy(args.dialogs)
    if dialogs.value != args.dialogs.strip().lower():
        print(f"{PROG}: unknown --dialogs {args.dialogs!r}: using cancel", file=sys.stderr)
    console = Console(stderr=True, highlight=False)
    progress = None if args.json else _Progress(console)
    run = WorkerRun(
        argv,
        dialogs=dialogs,
        prompter=_prompter(dialogs),
        cwd=args.cwd,
        prompt_timeout=args.prompt_timeout,
        on_frame=progress.show if progress is not None else None,
    )
    summary = asyncio.run(run.run(args.prompt))
    if args.json:
        sys.stdout.write(msgspec.json.encode(summary).decode() + "\n")
    else:
        _print_summary(console, summary)
    return 0 if summary.ok else 1


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
