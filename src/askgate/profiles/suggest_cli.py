"""`askgate suggest`: propose allow rules from the asks people approved (review log).

Exit codes: 0 proposals shown (or none qualify), 1 the review log is missing, empty or
unreadable, 2 bad usage or a bad policy file.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from askgate.cli_support import OneLineParser, confirm

MAX_LOG_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="askgate suggest",
        description="Propose allow rules from the asks a human approved.",
        epilog="exit codes: 0 done, 1 review log missing/empty/unreadable, 2 bad usage",
    )
    parser.add_argument("--since", default="7d", help="7d, 24h, 30m or an ISO date (default 7d)")
    parser.add_argument("--min", type=int, default=3, help="approvals a rule needs (default 3)")
    parser.add_argument("--log", default=None, help="review log (default: askgate's own)")
    parser.add_argument("--write", action="store_true", help="add chosen rules to the user file")
    parser.add_argument("--yes", action="store_true", help="with --write: add all without asking")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--cwd", default=None, help="project the rules are checked against")
    return parser


class LogError(Exception):
    """The review log cannot be used: exit 1 with this line."""


def read_log(path: str) -> tuple[list[dict[str, Any]], int]:
    """Records of a JSONL review log and the number of lines that were not records."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise LogError(f"no review log at {path} (nothing has been decided yet?)") from None
    except OSError as error:
        raise LogError(f"cannot read the review log {path}: {error.strerror}") from None
    if size > MAX_LOG_BYTES:
        raise LogError(f"review log {path} is larger than {MAX_LOG_BYTES} bytes")
    records: list[dict[str, Any]] = []
    bad = 0
    for line in _lines(path):
        try:
            record = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            bad += 1
    if not records:
        raise LogError(
            f"review log {path} is empty"
            if not bad
            else f"review log {path} is corrupt ({bad} lines, none of them a record)"
        )
    return records, bad


def _lines(path: str) -> Iterator[bytes]:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise LogError(f"cannot open the review log {path}: {error.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        for line in handle:
            if line.strip() and len(line) <= MAX_LINE_BYTES:
                yield line


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.min < 1:
        print("askgate: error: --min must be at least 1", file=sys.stderr)
        return 2
    from askgate.profiles.suggest import approved_values, parse_since

    now = _dt.datetime.now(_dt.UTC)
    try:
        since = parse_since(args.since, now)
    except ValueError as error:
        print(f"askgate: error: {error}", file=sys.stderr)
        return 2
    from askgate.audit import default_log_path

    path = args.log or default_log_path()
    try:
        records, bad = read_log(path)
    except LogError as error:
        print(f"askgate: {error}", file=sys.stderr)
        return 1
    if bad:
        print(f"askgate: warning: skipped {bad} unreadable lines of {path}", file=sys.stderr)
    cwd = os.path.abspath(args.cwd or os.getcwd())
    approved, skipped = approved_values(records, since)
    if skipped:
        print(
            f"askgate: note: skipped {skipped} approvals whose original request the log did"
            " not keep, or that span several lines (heredocs, edit payloads)",
            file=sys.stderr,
        )
    return _suggest(args, approved, cwd)


def _user_requires_sandbox(loaded: Any) -> bool:
    """The proposals go to the user file: does it (or the managed file above it) require
    the sandbox for bash? A project file's setting does not hold in other projects."""
    from askgate.policy.model import Origin

    for file in loaded.files:
        table = file.sandbox
        scoped = file.origin in (Origin.USER, Origin.MANAGED)
        if scoped and table is not None and table.bash == "required":
            return True
    return False


def _suggest(args: argparse.Namespace, approved: list[Any], cwd: str) -> int:
    import msgspec

    from askgate.policy.config import load_policy
    from askgate.policy.engine import Policy
    from askgate.policy.paths import home_directory
    from askgate.profiles.suggest import propose

    loaded = load_policy(cwd)
    if loaded.errors:
        print(f"askgate: error: {loaded.errors[0]}", file=sys.stderr)
        return 2
    policy = Policy.from_loaded(loaded)

    def decide_with(rule: Any, surface: Any, value: str) -> Any:
        extended = msgspec.structs.replace(loaded, rules=(*loaded.rules, rule))
        return Policy.from_loaded(extended).decide(surface, value, cwd=cwd)

    proposals, rejected = propose(
        approved,
        policy_rules=policy.rules.rules,
        decide_with=decide_with,
        minimum=args.min,
        home=home_directory(),
        sandbox_required=_user_requires_sandbox(loaded),
    )
    if args.json:
        print(
            json.dumps(
                {
                    "approved": len(approved),
                    "proposals": [msgspec.to_builtins(p) for p in proposals],
                    "rejected": [msgspec.to_builtins(r) for r in rejected],
                },
                indent=2,
            )
        )
    else:
        _print_text(approved, proposals, rejected, args.min)
    if args.write and proposals:
        return _write(proposals, assume_yes=args.yes)
    return 0


def _print_text(
    approved: list[Any], proposals: list[Any], rejected: list[Any], minimum: int
) -> None:
    print(f"{len(approved)} approved asks in the review log")
    if not proposals:
        print(f"no rule was approved {minimum}x or more and is safe to propose")
    for proposal in proposals:
        shown = ", ".join(repr(e) for e in proposal.examples)
        print(f'approved {proposal.count}x: {proposal.surface} "{proposal.pattern}" -> allow')
        print(f"    e.g. {shown}")
    for item in rejected:
        print(f'not proposed ({item.count}x): {item.surface} "{item.pattern}": {item.why}')


def _write(proposals: list[Any], *, assume_yes: bool) -> int:
    from askgate.policy.config import user_policy_path
    from askgate.profiles.policy_edit import PolicyEditError, add_rules

    chosen = []
    for proposal in proposals:
        if assume_yes or confirm(f'add {proposal.surface} "{proposal.pattern}" = "allow"?'):
            chosen.append((proposal.surface, proposal.pattern))
    if not chosen:
        print("nothing added")
        return 0
    path = user_policy_path()
    try:
        added = add_rules(path, chosen)
    except PolicyEditError as error:
        print(f"askgate: error: {error}", file=sys.stderr)
        return 2
    print(f"added {added} rule(s) to {path}")
    return 0
