"""Human and machine renderings of decisions (used by the CLI)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from askgate.policy.engine import Policy
from askgate.policy.model import Basis, Check, Decision, Origin, Rule, RuleRef

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

JSON_VERSION = 1
# Wide enough for a path, a pattern and a status side by side when stdout is a pipe or a
# file (rich would assume 80 columns and fold every cell).
PIPE_WIDTH = 120


# --- JSON ---------------------------------------------------------------------------------


def _text(value: str) -> str:
    """`value` as valid Unicode: bytes that were not UTF-8 (lone surrogates from the
    command line or stdin) become visible `\\xNN` escapes instead of breaking the JSON."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        try:
            raw = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")


def json_safe(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return {_text(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def dump_json(value: Any, *, indent: int | None = None) -> str:
    """JSON text that is always valid UTF-8, whatever bytes the input carried."""
    return json.dumps(json_safe(value), ensure_ascii=False, indent=indent)


def rule_to_json(rule: RuleRef | None) -> dict[str, Any] | None:
    if rule is None:
        return None
    return {
        "surface": str(rule.surface),
        "pattern": rule.pattern,
        "action": str(rule.action),
        "origin": str(rule.origin),
        "source": rule.source or None,
        "line": rule.line,
        "reason": rule.reason,
        "agent": rule.agent,
    }


def check_to_json(check: Check) -> dict[str, Any]:
    return {
        "surface": str(check.surface),
        "value": check.value,
        "action": str(check.action),
        "basis": check.basis,
        "rule": rule_to_json(check.rule),
        "note": check.note,
    }


def decision_to_json(decision: Decision) -> dict[str, Any]:
    """The `askgate check --json` object (versioned: see docs/cli.md)."""
    out: dict[str, Any] = {
        "version": JSON_VERSION,
        "action": str(decision.action),
        "reason": decision.reason,
        "surface": str(decision.surface),
        "value": decision.value,
        "rule": rule_to_json(decision.rule),
        "clamped": decision.clamped,
        "checks": [check_to_json(c) for c in decision.checks],
    }
    if decision.surface == "bash":
        out["units"] = [
            {
                "command": u.command,
                "action": str(u.action),
                "rule": rule_to_json(u.rule),
                "reason": u.reason,
                "context": u.context,
                "checks": [check_to_json(c) for c in u.checks],
            }
            for u in decision.units
        ]
    return out


# --- text ---------------------------------------------------------------------------------

_STYLE = {"allow": "green", "ask": "yellow", "deny": "red"}


def console_width(environ: dict[str, str] | None = None, *, is_terminal: bool) -> int | None:
    """None lets rich follow `COLUMNS` or the terminal; a pipe gets `PIPE_WIDTH`."""
    columns = (os.environ if environ is None else environ).get("COLUMNS", "")
    if columns.isdigit() or is_terminal:
        return None
    return PIPE_WIDTH


def colour_enabled(environ: Mapping[str, str] | None = None, *, is_terminal: bool) -> bool:
    """Colour only on a terminal, and never when `NO_COLOR` is set to anything
    (no-color.org); `FORCE_COLOR` does not colour a pipe or a file."""
    environ = os.environ if environ is None else environ
    return is_terminal and not environ.get("NO_COLOR")


def console() -> Console:
    """A rich console for stdout that follows the conventions above (width and colour)."""
    from rich.console import Console

    is_terminal = sys.stdout.isatty()
    width = console_width(is_terminal=is_terminal)
    if not colour_enabled(is_terminal=is_terminal):
        return Console(
            file=sys.stdout,
            soft_wrap=True,
            highlight=False,
            width=width,
            color_system=None,
            no_color=True,
            force_terminal=is_terminal,
        )
    return Console(file=sys.stdout, soft_wrap=True, highlight=False, width=width)


_console = console


def render_check(decision: Decision) -> None:
    print(f"{decision.action}: {decision.reason}")
    for unit in decision.units:
        print(f"  {unit.action:<5} {unit.command}  ({unit.reason})")


def display_path(path: str, *, cwd: str | None = None, home: str | None = None) -> str:
    """`path` as a person would type it: relative below the working directory, `~/…`
    below the home directory, else absolute. For tables only; JSON keeps absolute paths."""
    cwd = os.getcwd() if cwd is None else cwd
    home = os.environ.get("HOME", "") if home is None else home
    for base, prefix in ((cwd, ""), (home, "~/")):
        if base and base != "/" and path.startswith(base.rstrip("/") + "/"):
            return prefix + path[len(base.rstrip("/")) + 1 :]
    return path


def source_label(source: str, line: int | None) -> str:
    """`describe_source` with the file path shortened for display."""
    from askgate.policy.builtin import describe_source

    label = describe_source(source, line)
    return display_path(label) if label.startswith("/") else label


def _where(rule: Rule) -> str:
    # Built-in floors are marked trusted=False only so that they override nothing.
    untrusted = not rule.trusted and rule.origin is not Origin.BUILTIN
    where = str(rule.origin) + (" (untrusted)" if untrusted else "")
    return where + (f" {source_label(rule.source, rule.line)}" if rule.source else "")


def _overriders(policy: Policy, check: Check, rule: Rule, agent: str | None) -> list[str]:
    """Patterns of the matching rules that override `rule` (for naming them only: whether
    a rule is overridden comes from the evaluator's own answer)."""
    from askgate.policy.rules import overrides

    matching = policy.rules.matching(check.surface, check.value, agent)
    target = next((c for c in matching if c.rule is rule), None)
    if target is None:
        return []
    return [repr(c.rule.pattern) for c in matching if c is not target and overrides(c, target)]


def _status(policy: Policy, check: Check, rule: Rule, agent: str | None, ev: Any) -> str:
    if rule is ev.rule:
        if check.basis == Basis.IGNORED:
            return "WINNER, but an allow here cannot loosen the command"
        return "WINNER (strictest standing)"
    if any(rule is r for r in ev.standing):
        if rule.action is ev.action:
            return "standing, same action"
        return "standing, less strict"
    names = _overriders(policy, check, rule, agent)
    if names:
        return f"overridden by {', '.join(names)}"
    return "overridden by a narrower rule"


def _explain_rows(policy: Policy, check: Check, agent: str | None) -> list[tuple[str, ...]]:
    """One row per candidate rule of one lookup (a single row for a default or floor)."""
    if check.basis in (Basis.DEFAULT, Basis.FLOOR):
        return [("-", str(check.action), check.note or check.basis, check.basis)]
    ev = policy.rules.evaluate(check.surface, check.value, agent)
    return [
        (rule.pattern, str(rule.action), _status(policy, check, rule, agent, ev), _where(rule))
        for rule in ev.matched
    ]


def _plain(*cells: str) -> list[Text]:
    # Commands, patterns and paths are hostile text: never let rich read "[/]" or
    # "[red]" in them as markup (an error, or text silently restyled away).
    from rich.text import Text

    return [Text(cell) for cell in cells]


_EXPLAIN_COLUMNS = ("lookup", "candidate rule", "action", "status", "from")


def _explain_no_wrap(rows: list[list[str]], width: int) -> list[bool]:
    """Keep the rule and its status on one line when they fit, folding the lookup and the
    file name instead: the rule and its status are what the table is read for."""
    longest = [max((len(row[i]) for row in rows), default=0) for i in range(len(_EXPLAIN_COLUMNS))]
    padding = 2 * len(_EXPLAIN_COLUMNS) + len(_EXPLAIN_COLUMNS) + 1  # cells and borders
    others = 12 + 12 + max(longest[2], len("action"))  # lookup and from: 12 each at least
    fits = padding + others + longest[1] + longest[3] <= width
    return [False, fits, False, fits, False]


def render_explain(decision: Decision, policy: Policy, *, agent: str | None) -> None:
    from rich.table import Table
    from rich.text import Text

    console = _console()
    style = _STYLE[str(decision.action)]
    console.print(f"[bold {style}]{decision.action}[/] ", end="")
    console.print(f"{decision.surface} {decision.value!r}", markup=False)
    console.print(f"because: {decision.reason}", markup=False)
    groups: list[tuple[str, tuple[Check, ...]]] = [("request", decision.checks)]
    groups += [
        (f"unit {u.command!r} ({u.context}) -> {u.action}", u.checks) for u in decision.units
    ]
    for title, checks in groups:
        if not checks:
            continue
        rows: list[list[str]] = []
        for check in checks:
            lookup = f"{check.surface} {check.value!r}"
            for index, row in enumerate(_explain_rows(policy, check, agent)):
                # The lookup is named once; its candidates follow on the next rows.
                rows.append([lookup if index == 0 else "", *row])
        if not rows:
            continue
        table = Table(title=Text(title, style="bold"), title_justify="left")
        for col, no_wrap in zip(
            _EXPLAIN_COLUMNS, _explain_no_wrap(rows, console.width), strict=True
        ):
            table.add_column(col, overflow="fold", no_wrap=no_wrap)
        for cells in rows:
            table.add_row(*_plain(*cells))
        console.print(table)


def render_config(loaded: Any, *, as_json: bool, builtin: bool = False) -> None:
    shown = list(loaded.rules)
    if builtin:  # the shipped rule files, and the protections computed from the environment
        from askgate.policy.protected import protected_rules

        shown += [*loaded.builtin_rules, *protected_rules(os.environ, loaded.project_root)]
    rows = [
        {
            "surface": str(r.surface),
            "pattern": r.pattern,
            "action": str(r.action),
            "origin": str(r.origin),
            "rank": r.rank,
            "agent": r.agent,
            "trusted": r.trusted,
            "source": r.source,
            "line": r.line,
            "where": source_label(r.source, r.line) if r.source else "",
            "reason": r.reason,
        }
        for r in shown
    ]
    summary = {
        "project_root": loaded.project_root,
        "default": str(loaded.default),
        "default_origin": str(loaded.default_origin),
        "yolo": loaded.yolo,
        "files": [getattr(f, "path", str(f)) for f in loaded.files],
        "warnings": list(loaded.warnings),
        "rules": rows,
    }
    if as_json:
        print(dump_json(summary, indent=2))
        return
    from rich.table import Table

    console = _console()
    console.print(
        f"project root: {loaded.project_root}\ndefault: {loaded.default} "
        f"({loaded.default_origin})  yolo: {loaded.yolo}",
        markup=False,
    )
    for w in loaded.warnings:
        console.print(f"warning: {w}", markup=False)
    table = Table()
    for col in ("surface", "pattern", "action", "origin", "agent", "where"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            *_plain(
                r["surface"],
                r["pattern"],
                r["action"],
                r["origin"] + ("" if r["trusted"] or r["origin"] == "builtin" else " (untrusted)"),
                r["agent"] or "",
                r["where"],
            )
        )
    console.print(table)
    if not builtin:
        console.print(
            "(askgate's built-in rules are not shown: --builtin lists them)", markup=False
        )


def render_examples(runs: Any, *, as_json: bool) -> int:
    """`askgate config test`: every example of every file; exit 0 all pass, 1 some fail,
    2 a file could not be parsed."""
    failed = sum(1 for run in runs for example in run.examples if not example.passed)
    broken = [run for run in runs if run.error]
    total = sum(len(run.examples) for run in runs)
    if as_json:
        print(
            dump_json(
                {
                    "ok": not failed and not broken,
                    "examples": total,
                    "failed": failed,
                    "files": [
                        {
                            "path": run.path,
                            "error": run.error,
                            "examples": [
                                {
                                    "rule": example.key,
                                    "line": example.line,
                                    "value": example.value,
                                    "expect": "match" if example.should_match else "not_match",
                                    "passed": example.passed,
                                }
                                for example in run.examples
                            ],
                        }
                        for run in runs
                    ],
                },
                indent=2,
            )
        )
    else:
        from rich.table import Table

        table = Table()
        for column in ("result", "rule", "example", "expect", "where"):
            table.add_column(column, overflow="fold")
        for run in runs:
            for example in run.examples:
                table.add_row(
                    *_plain(
                        "ok" if example.passed else "FAILED",
                        example.key,
                        example.value,
                        "match" if example.should_match else "not match",
                        source_label(run.path, example.line),
                    )
                )
        console = _console()
        console.print(table)
        for run in broken:
            console.print(f"error: {run.error}", markup=False)
        console.print(f"{total - failed} of {total} examples pass", markup=False)
    if broken:
        return 2
    return 1 if failed else 0
