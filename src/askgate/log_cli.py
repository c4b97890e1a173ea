"""`askgate log`: the review log as a table of recent decisions (or JSON lines).

The log is agent-controlled text (commands, paths, reasons) written one JSON object per
line by `askgate.audit`. Reading it never trusts it: a line that is not a JSON object with
a timestamp is skipped and counted (and the count reported), control characters are shown
as escapes, and rich never reads markup in a cell. A missing, unreadable or entirely
corrupt log is a one-line error, never a traceback.

Exit codes: 0 the records were printed (possibly none), 2 bad usage or a log that cannot be
read, 1 an unexpected internal error.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn

EXIT_CODES = """\
exit codes:
  0  the matching records were printed (none is not an error)
  1  unexpected internal error (one line; ASKGATE_DEBUG=1 for the traceback)
  2  bad usage, or the review log is missing, unreadable or not a review log"""

DEFAULT_LIMIT = 50
# A record is a few KB (every field is bounded by askgate.audit); a longer line is corrupt.
MAX_LINE = 4 * 1024 * 1024
VALUE_WIDTH = 80
_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class LogError(Exception):
    """Bad usage or an unreadable log: exit 2 with this one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise LogError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="askgate log",
        description="Show recent decisions from the review log, newest last.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--since",
        metavar="WHEN",
        help="only records from this point on: a duration back from now (90s, 30m, 12h, 7d,"
        " 2w) or an ISO 8601 date or time (2026-11-30, 2026-11-30T09:00; local time"
        " unless it has an offset)",
    )
    parser.add_argument(
        "--limit",
        type=_limit,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most the N most recent records (default {DEFAULT_LIMIT}; 0 for all)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the records as stored, one JSON per line"
    )
    parser.add_argument(
        "--file",
        metavar="PATH",
        help="the review log to read (default: $ASKGATE_AUDIT_LOG, else"
        " $XDG_STATE_HOME/askgate/review.jsonl)",
    )
    return parser


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 (all) or more")
    return value


def parse_since(text: str, *, now: dt.datetime | None = None) -> dt.datetime:
    """The moment `--since TEXT` names, timezone-aware."""
    now = dt.datetime.now(dt.UTC) if now is None else now
    stripped = text.strip()
    duration = _DURATION.fullmatch(stripped)
    if duration is not None:
        seconds = int(duration.group(1)) * _UNIT_SECONDS[duration.group(2)]
        try:
            return now - dt.timedelta(seconds=seconds)
        except OverflowError:
            return dt.datetime.min.replace(tzinfo=dt.UTC)
    try:
        moment = dt.datetime.fromisoformat(stripped)
    except ValueError:
        raise LogError(
            f"--since {text[:100]!r}: expected a duration (90s, 30m, 12h, 7d, 2w) or an ISO"
            " 8601 date or time (2026-11-30, 2026-11-30T09:00:00+00:00)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a time without offset is the user's local time
    return moment


class Scan:
    """What reading the log found: the records kept and the lines that were not records."""

    def __init__(self, limit: int) -> None:
        self.records: collections.deque[dict[str, Any]] = collections.deque(maxlen=limit or None)
        self.lines = 0
        self.corrupt = 0
        self.first_corrupt: int | None = None

    def bad(self, number: int) -> None:
        self.corrupt += 1
        if self.first_corrupt is None:
            self.first_corrupt = number


def _timestamp(record: Mapping[str, Any]) -> dt.datetime | None:
    value = record.get("timestamp")
    if not isinstance(value, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def _lines(path: str) -> Iterator[bytes]:
    # O_NONBLOCK: a FIFO planted at the log path must not hang the command.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise LogError(
            f"no review log at {path} (nothing has been decided yet, or it is written"
            " elsewhere: see --file and ASKGATE_AUDIT_LOG)"
        ) from None
    except OSError as exc:
        raise LogError(f"cannot read the review log {path}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise LogError(f"{path} is {kind}, not a review log")
    with os.fdopen(fd, "rb") as handle:
        try:
            while line := handle.readline(MAX_LINE + 1):
                if len(line) > MAX_LINE and not line.endswith(b"\n"):
                    # Far longer than any record askgate writes: skip to the next line
                    # without holding it in memory, and let the caller count it.
                    while (rest := handle.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                        pass
                    yield b"\x00oversized"
                    continue
                yield line
        except OSError as exc:
            raise LogError(f"cannot read the review log {path}: {exc.strerror or exc}") from None


def scan(path: str, *, since: dt.datetime | None, limit: int) -> Scan:
    """Read the log, keeping the last `limit` records at or after `since`."""
    found = Scan(limit)
    for number, raw in enumerate(_lines(path), start=1):
        if not raw.strip():
            continue
        found.lines += 1
        try:
            record = json.loads(raw)
        except ValueError:
            found.bad(number)
            continue
        moment = _timestamp(record) if isinstance(record, dict) else None
        if moment is None:
            found.bad(number)
            continue
        if since is not None and moment < since:
            continue
        found.records.append(record)
    if found.lines and found.corrupt == found.lines:
        raise LogError(
            f"{path} is not a review log: none of its {found.lines} line(s) is a record"
            " (a JSON object with a timestamp)"
        )
    return found


# --- rendering -----------------------------------------------------------------------------


def _visible(value: Any, width: int | None = None) -> str:
    from askgate.prompters.terminal import visible

    text = visible("" if value is None else str(value))
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def _when(record: Mapping[str, Any]) -> str:
    moment = _timestamp(record)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "?"


def _outcome(record: Mapping[str, Any]) -> tuple[str, str]:
    """(result, how) of one record, whatever its event."""
    event = record.get("event")
    if event == "rpc_prompt":
        approved = record.get("approved") is True
        return ("allow" if approved else "deny"), f"rpc_prompt: {record.get('answer')}"
    if event == "ask_delegated":
        return "ask", f"delegated to {record.get('delegated_to')}"
    return str(record.get("action") or "?"), str(record.get("resolution") or event or "?")


_STYLE = {"allow": "green", "ask": "yellow", "deny": "red"}


def render_table(records: Sequence[Mapping[str, Any]]) -> None:
    from rich.table import Table
    from rich.text import Text

    from askgate.report import console

    table = Table(show_edge=False, pad_edge=False)
    for column in ("time", "result", "how", "agent", "tool", "surface", "value"):
        table.add_column(column, overflow="fold")
    for record in records:
        result, how = _outcome(record)
        cells = [
            _when(record),
            result,
            how,
            _visible(record.get("agent") or "-"),
            _visible(record.get("tool") or "-"),
            _visible(record.get("surface") or "-"),
            _visible(record.get("value"), VALUE_WIDTH),
        ]
        # Text, never markup: a command like "[red]x[/]" is shown as typed.
        row = [Text(_visible(cell)) for cell in cells]
        row[1].stylize(_STYLE.get(result, ""))
        table.add_row(*row)
    console().print(table)


def _print_json(records: Sequence[Mapping[str, Any]]) -> None:
    for record in records:
        print(json.dumps(record, ensure_ascii=False, separators=(",", ":")))


def _default_path(env: Mapping[str, str]) -> str:
    from askgate.audit import default_log_path

    return default_log_path(env)


def run(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    path = args.file if args.file is not None else _default_path(os.environ)
    if not path:
        raise LogError("--file is empty")
    since = parse_since(args.since) if args.since is not None else None
    found = scan(path, since=since, limit=args.limit)
    records = list(found.records)
    if args.json:
        _print_json(records)
    elif records:
        render_table(records)
    else:
        when = f" since {since.isoformat(timespec='seconds')}" if since is not None else ""
        print(f"no decisions in {path}{when}", file=sys.stderr)
    if found.corrupt:
        print(
            f"askgate: warning: skipped {found.corrupt} corrupt line(s) of {path}"
            f" (the first is line {found.first_corrupt})",
            file=sys.stderr,
        )
    return 0


def main(argv: Sequence[str]) -> int:
    from askgate.cli_support import error_line, tolerate_undecodable_output

    tolerate_undecodable_output()
    try:
        return run(argv)
    except LogError as exc:
        print(f"askgate: error: {error_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `askgate log | head`: the reader left; nothing more to say.
        sys.stderr.close()
        return 0
    except Exception as exc:
        if os.environ.get("ASKGATE_DEBUG"):
            raise
        print(f"askgate: internal error: {error_line(repr(exc))}", file=sys.stderr)
        return 1
