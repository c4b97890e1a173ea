"""What the importers share: the conversion record (claude_code.py's `Converted`,
`Skipped`, `Conversion`, `render`), dropping the rules the source agent would never apply,
and the command scaffold (`FILES… [-o FILE] [--force]`, one-line errors, exit 2)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from askgate.importers.claude_code import (
    STRICTNESS,
    Conversion,
    Converted,
    ImportError_,
    Skipped,
    _anchored,
    _write,
    describe,
    render,
)

__all__ = [
    "MAX_FILE_BYTES",
    "STRICTNESS",
    "Conversion",
    "Converted",
    "ImportError_",
    "Skipped",
    "drop_shadowed",
    "read_bounded",
    "read_text",
    "run_import",
]

MAX_FILE_BYTES = 1024 * 1024  # a policy file larger than this is not one


def read_bounded(path: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the file `path`, at most `max_bytes` of them (else ImportError_)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise ImportError_(f"{path}: cannot read: {error.strerror or error}") from None
    if len(data) > max_bytes:
        raise ImportError_(f"{path}: larger than {max_bytes} bytes")
    return data


def read_text(path: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """`read_bounded`, as UTF-8 text."""
    try:
        return read_bounded(path, max_bytes).decode("utf-8")
    except UnicodeDecodeError:
        raise ImportError_(f"{path}: not UTF-8 text") from None


def _compiled(rule: Converted) -> Any:
    from askgate.policy.model import Surface
    from askgate.policy.patterns import compile_pattern, kind_of

    surface = Surface(rule.surface)
    text = _anchored(rule.pattern) if surface.is_path else rule.pattern
    return compile_pattern(kind_of(surface), text)


def drop_shadowed(
    conversion: Conversion, beats: Callable[[int, int], bool], why: Callable[[Converted], str]
) -> None:
    """Drop rule i when some rule j of the same surface contains it, has another action and
    `beats(j, i)` (indexes into `conversion.rules`): in the source agent j decides every
    value i matches, so i never applies (while in askgate the narrower i would override
    j). `why(j)` says so in the list of rules left out. Equal patterns keep the winner."""
    from askgate.policy.patterns import contains

    rules = conversion.rules
    best: dict[tuple[str, str], int] = {}  # a TOML key appears once
    for i, rule in enumerate(rules):
        key = (rule.surface, rule.pattern)
        if key not in best or beats(i, best[key]):
            best[key] = i
    order = sorted(best.values())
    compiled = {i: _compiled(rules[i]) for i in order}
    kept: list[Converted] = []
    for i, rule in enumerate(rules):
        winner: int | None = best[(rule.surface, rule.pattern)]
        if winner == i:
            winner = next(
                (
                    j
                    for j in order
                    if j != i
                    and rules[j].surface == rule.surface
                    and rules[j].action != rule.action
                    and beats(j, i)
                    and contains(compiled[j], compiled[i])
                ),
                None,
            )
        if winner is None:
            kept.append(rule)
        elif rules[winner].action != rule.action:
            conversion.skipped.append(
                Skipped(rule.rule, rule.action, rule.source, why(rules[winner]))
            )
    conversion.rules = kept


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ImportError_(message)


def run_import(
    argv: Sequence[str],
    *,
    agent: str,
    title: str,
    defaults: Callable[[str], list[str]],
    convert: Callable[[list[str]], Conversion],
    help_files: str,
) -> int:
    parser = _Parser(prog=f"askgate import {agent}", description=f"{title} as an askgate policy")
    parser.add_argument("files", nargs="*", metavar="FILE", help=help_files)
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing -o FILE")
    try:
        args = parser.parse_args(list(argv))
        paths = args.files or defaults(os.getcwd())
        if not paths:
            raise ImportError_(f"no {title} file found; name one")
        conversion = convert([os.path.abspath(p) for p in paths])
        text = render(conversion, f"{title} by `askgate import {agent}`")
        _check_loads(text)
        if args.output:
            _write(args.output, text, force=args.force)
            print(f"wrote {args.output}: {len(conversion.rules)} rule(s)")
        else:
            sys.stdout.write(text)
        for skipped in conversion.skipped:
            print(f"askgate import: not converted: {describe(skipped)}", file=sys.stderr)
        if conversion.profiles:
            print(
                f"askgate import: selected profile {', '.join(conversion.profiles)}"
                f" ({conversion.profiles_why})",
                file=sys.stderr,
            )
        return 0
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except ImportError_ as exc:
        print(f"askgate import {agent}: error: {exc}", file=sys.stderr)
        return 2


def _check_loads(text: str) -> None:
    """What an importer writes must load (a file that clamps would be worse than none)."""
    from askgate.policy.model import Origin
    from askgate.policy.policy_file import ConfigError, parse_policy_text

    try:
        parse_policy_text(
            text, path="<import>", origin=Origin.USER, rank_base=0, trusted=True, base_dir="/"
        )
    except ConfigError as error:
        raise ImportError_(f"the converted file would not load: {error}") from None
