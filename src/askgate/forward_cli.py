"""`askgate forward serve|status`: serve a session's forwarded asks from a terminal, and
show who is serving what."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from askgate.forwarding.env import default_forwarding_root
from askgate.forwarding.io import (
    HOST,
    list_json_at,
    now_ms,
    open_subdirectory,
    opened_directory,
    pid_alive,
    read_limited_at,
)
from askgate.forwarding.protocol import (
    DEFAULT_TIMEOUT,
    MAX_HEARTBEAT_BYTES,
    Heartbeat,
    InvalidSessionId,
    decode_heartbeat,
    heartbeat_is_fresh,
)

PROG = "askgate forward"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + traceback
        raise _UsageError(message)


EXIT_CODES = """\
exit codes:
  0  serve: stopped by Ctrl-C or SIGTERM; status: printed
  1  serve could not start (another live process serves the session, a bad session id,
     no terminal), or status cannot read the forwarding directory
  2  bad usage"""


def _parser() -> argparse.ArgumentParser:
    help_end: dict[str, Any] = {
        "epilog": EXIT_CODES,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
    parser = _Parser(
        prog=PROG, description="Permission forwarding between agent sessions.", **help_end
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve = commands.add_parser(
        "serve", help="answer a session's forwarded asks in this terminal", **help_end
    )
    serve.add_argument("--session", required=True, help="session id the children forward to")
    serve.add_argument("--root", type=Path, help="forwarding directory (default: pi's)")
    serve.add_argument("--poll", action="store_true", help="poll instead of using inotify")
    serve.add_argument(
        "--poll-interval", type=float, default=0.25, metavar="SECONDS", help="default 0.25"
    )
    serve.add_argument(
        "--prompt-timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="per prompt; unanswered, it ends timed_out (default: %(default)s s)",
    )
    status = commands.add_parser(
        "status", help="list serving sessions and pending requests", **help_end
    )
    status.add_argument("--root", type=Path, help="forwarding directory (default: pi's)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except _UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    root: Path = args.root if args.root is not None else default_forwarding_root()
    if args.command == "serve":
        if args.poll_interval <= 0:
            print(f"{PROG}: --poll-interval must be positive", file=sys.stderr)
            return 2
        return _serve(args, root)
    try:
        return status(root, sys.stdout)
    except OSError as exc:
        print(f"{PROG}: cannot read {root}: {exc}", file=sys.stderr)
        return 1


def _serve(args: argparse.Namespace, root: Path) -> int:
    from askgate.forwarding.server import ForwardingError, ForwardingServer

    try:
        from askgate.prompters.terminal import TerminalPrompter
    except ImportError as exc:
        print(f"{PROG}: no terminal prompter available ({exc})", file=sys.stderr)
        return 1
    try:
        server = ForwardingServer(
            args.session,
            TerminalPrompter(stdin=sys.stdin, stdout=sys.stderr),
            root=root,
            mode="poll" if args.poll else "watch",
            poll_interval=args.poll_interval,
            prompt_timeout=args.prompt_timeout,
        )
        server.start()
    except (ForwardingError, InvalidSessionId) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    stopping = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    print(
        f"serving forwarded permission requests for session {args.session} under {root} "
        "(Ctrl-C to stop)",
        file=sys.stderr,
    )
    try:
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.stop()
    return 0


def status(root: Path, out: TextIO) -> int:
    """One line per heartbeat and per session directory holding requests. Read-only, and
    like everything under the root, read through directory descriptors (forwarding/io)."""
    if not root.is_dir():
        print(f"no forwarding directory at {root}", file=out)
        return 0
    now = now_ms()
    print(f"forwarding directory: {root}", file=out)
    try:
        with opened_directory(root, ("serving",), tighten=False) as serving:
            heartbeats = [
                (info.name, _heartbeat_at(serving, info.name)) for info in list_json_at(serving)
            ]
    except FileNotFoundError:
        heartbeats = []
    except OSError as exc:
        print(f"serving: {exc}", file=out)
        heartbeats = []
    if not heartbeats:
        print("serving: nobody", file=out)
    for name, heartbeat in sorted(heartbeats, key=lambda item: item[0]):
        if heartbeat is None:
            print(f"serving: {name}: unreadable heartbeat", file=out)
            continue
        age = max(0, now - heartbeat.refreshed_at) / 1000
        if heartbeat.stopped:
            state = "stopped"
        elif heartbeat.host == HOST and not pid_alive(heartbeat.pid):
            state = "dead (process gone)"
        elif heartbeat_is_fresh(heartbeat, now):
            state = "serving"
        else:
            state = "stale"
        print(
            f"serving: session {heartbeat.session_id!r} pid {heartbeat.pid} on {heartbeat.host}, "
            f"refreshed {age:.1f}s ago: {state}",
            file=out,
        )
    for name, pending, answered in _session_counts(root, out):
        if pending or answered:
            print(
                f"session dir {name}: {pending} pending request(s), {answered} unread response(s)",
                file=out,
            )
    return 0


def _heartbeat_at(serving: int, name: str) -> Heartbeat | None:
    try:
        return decode_heartbeat(read_limited_at(serving, name, MAX_HEARTBEAT_BYTES))
    except OSError:
        return None


def _count_json(session: int, name: str, where: Path) -> int:
    try:
        fd = open_subdirectory(session, name, where / name, tighten=False)
    except FileNotFoundError:
        return 0
    try:
        return len(list_json_at(fd))
    finally:
        os.close(fd)


def _session_counts(root: Path, out: TextIO) -> list[tuple[str, int, int]]:
    """(session dir name, pending requests, unread responses) for each session directory;
    a directory that is refused is reported, not entered."""
    counts: list[tuple[str, int, int]] = []
    try:
        with opened_directory(root, ("sessions",), tighten=False) as sessions:
            with os.scandir(os.dup(sessions)) as entries:
                names = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
            for name in names:
                where = root / "sessions" / name
                try:
                    session = open_subdirectory(sessions, name, where, tighten=False)
                except OSError as exc:
                    print(f"session dir {name}: {exc}", file=out)
                    continue
                try:
                    pending = _count_json(session, "requests", where)
                    answered = _count_json(session, "responses", where)
                except OSError as exc:
                    print(f"session dir {name}: {exc}", file=out)
                    continue
                finally:
                    os.close(session)
                counts.append((name, pending, answered))
    except FileNotFoundError:
        return []
    except OSError as exc:
        print(f"sessions: {exc}", file=out)
    return counts
