"""Human and machine renderings of decisions (used by the CLI)."""

from __future__ import annotations

import json
import sys
from typing import Any

from askgate.policy.engine import Policy
from askgate.policy.model import Check, Decision, RuleRef

JSON_VERSION = 1


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


_STYLE = {"allow": "green", "ask": "yellow", "deny": "red"}


def render_check(decision: Decision) -> None:
    print(f"{decision.action}: {decision.reason}")
    for unit in decision.units:
        print(f"  {unit.action:<5} {unit.command}  ({unit.reason})")


def render_explain(decision: Decision, policy: Policy, *, agent: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, soft_wrap=True, highlight=False)
    style = _STYLE[str(decision.action)]
    console.print(f"[bold {style}]{decision.action}[/] {decision.surface} {decision.value!r}")
    console.print(f"because: {decision.reason}", markup=False)
    groups: list[tuple[str, tuple[Check, ...]]] = [("request", decision.checks)]
    groups += [(f"unit {u.command!r} [{u.context}]", u.checks) for u in decision.units]
    for title, checks in groups:
        if not checks:
            continue
        table = Table(title=title, title_justify="left", show_lines=False)
        for col in ("lookup", "candidate rule", "action", "origin", "status"):
            table.add_column(col, overflow="fold")
        for check in checks:
            lookup = f"{check.surface} {check.value!r}"
            if check.basis in ("default", "floor"):
                table.add_row(lookup, "-", str(check.action), check.basis, check.note or "")
                continue
            ev = policy.rules.evaluate(check.surface, check.value, agent)
            standing = {id(r) for r in ev.standing}
            for rule in ev.matched:
                if rule is ev.rule:
                    status = "WINNER (strictest standing)"
                    if check.basis == "ignored":
                        status += "; cannot loosen a command"
                elif id(rule) in standing:
                    status = "standing, less strict"
                else:
                    status = "overridden by a narrower rule of equal or higher scope"
                where = f"{rule.origin}" + (f" {rule.source}:{rule.line}" if rule.source else "")
                table.add_row(lookup, rule.pattern, str(rule.action), where, status)
        console.print(table)


def render_config(loaded: Any, *, as_json: bool) -> None:
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
            "reason": r.reason,
        }
        for r in loaded.rules
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
        print(json.dumps(summary, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, soft_wrap=True, highlight=False)
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
            r["surface"],
            r["pattern"],
            r["action"],
            r["origin"] + ("" if r["trusted"] else " (untrusted)"),
            r["agent"] or "",
            f"{r['source']}:{r['line']}",
        )
    console.print(table)
