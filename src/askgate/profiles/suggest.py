"""Rules proposed from what people approved: the pure part of `askgate suggest`.

Input: review-log records. Each ask a human approved contributes, per unit that asked, the
narrowest safe pattern ("Yes, for this session" uses the same logic, session.py). A pattern
is proposed when enough approvals share it and it passes every safety check:

- a safe pattern exists (never an interpreter, wrapper or runner such as `bash`, `sudo`,
  `xargs`, and never a bare `*`);
- it lifts no deny: no deny rule on the surface contains it (an allow nested inside a deny
  would override that deny);
- it would actually allow the approved value: re-deciding it with the proposal added gives
  allow, which is never the case when the ask came from a floor (an opaque construct, a
  wrapper, a read or write rule).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.policy.patterns import compile_pattern, contains, kind_of
from askgate.policy.rules import RuleSet

APPROVED = frozenset({"user_approved", "user_approved_for_session"})


class Proposal(msgspec.Struct, frozen=True, kw_only=True):
    surface: Surface
    pattern: str
    count: int
    examples: tuple[str, ...]  # up to three approved values it covers


class Rejected(msgspec.Struct, frozen=True, kw_only=True):
    surface: Surface
    pattern: str
    count: int
    why: str


def parse_since(text: str, now: _dt.datetime) -> _dt.datetime:
    """`7d`, `24h`, `30m` before `now`, or an ISO 8601 date/time (UTC when no zone)."""
    units = {"d": "days", "h": "hours", "m": "minutes"}
    if text[-1:] in units and text[:-1].isdigit():
        return now - _dt.timedelta(**{units[text[-1]]: int(text[:-1])})
    try:
        moment = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--since {text!r}: expected 7d, 24h, 30m or an ISO date") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=_dt.UTC)


def _timestamp(record: Mapping[str, Any]) -> _dt.datetime | None:
    value = record.get("timestamp")
    if not isinstance(value, str):
        return None
    try:
        moment = _dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=_dt.UTC)


def approved_values(
    records: Iterable[Mapping[str, Any]], since: _dt.datetime | None
) -> list[tuple[Surface, str]]:
    """(surface, value) of every unit a human approved after `since`: for bash, the units
    that asked; otherwise the decision's value."""
    found: list[tuple[Surface, str]] = []
    for record in records:
        if record.get("event") != "decision" or record.get("resolution") not in APPROVED:
            continue
        moment = _timestamp(record)
        if since is not None and (moment is None or moment < since):
            continue
        try:
            surface = Surface(str(record.get("surface")))
        except ValueError:
            continue
        if surface is Surface.BASH:
            units = record.get("units")
            for unit in units if isinstance(units, list) else ():
                if isinstance(unit, dict) and unit.get("action") == "ask":
                    command = unit.get("command")
                    if isinstance(command, str) and command:
                        found.append((surface, command))
        elif isinstance(record.get("value"), str) and record["value"]:
            found.append((surface, record["value"]))
    return found


def _lifted_deny(rules: RuleSet, surface: Surface, pattern: str) -> Rule | None:
    proposed = compile_pattern(kind_of(surface), pattern)
    for rule in rules.rules:
        is_deny = rule.surface is surface and rule.action is Action.DENY
        if is_deny and contains(rules.compile(rule), proposed):
            return rule
    return None


def propose(
    approved: Iterable[tuple[Surface, str]],
    *,
    policy_rules: Iterable[Rule],
    decide_with: Any,
    minimum: int,
    home: str | None = None,
) -> tuple[list[Proposal], list[Rejected]]:
    """Group `approved` values by their safe pattern and keep the safe, frequent ones.

    `decide_with(rule, surface, value) -> Action` re-decides `value` with `rule` added (the
    caller owns the policy and the working directory).
    """
    from askgate.session import suggest_pattern

    groups: dict[tuple[Surface, str], list[str]] = {}
    for surface, value in approved:
        pattern = suggest_pattern(surface, value)
        if pattern is None:  # no safe pattern: an interpreter, a wrapper, a bare value
            continue
        groups.setdefault((surface, pattern), []).append(value)
    rules = RuleSet(policy_rules, home=home)
    proposals: list[Proposal] = []
    rejected: list[Rejected] = []
    for (surface, pattern), values in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        if len(values) < minimum:
            continue
        why = _unsafe_reason(rules, surface, pattern, values, decide_with)
        if why:
            rejected.append(Rejected(surface=surface, pattern=pattern, count=len(values), why=why))
            continue
        examples = tuple(dict.fromkeys(values))[:3]
        proposals.append(
            Proposal(surface=surface, pattern=pattern, count=len(values), examples=examples)
        )
    return proposals, rejected


def _unsafe_reason(
    rules: RuleSet, surface: Surface, pattern: str, values: list[str], decide_with: Any
) -> str | None:
    if pattern.strip() in ("*", "**", "/**") or pattern.startswith("*"):
        return "too wide (a bare wildcard)"
    lifted = _lifted_deny(rules, surface, pattern)
    if lifted is not None:
        return f"would lift the deny {lifted.pattern!r}"
    candidate = Rule(
        surface=surface, pattern=pattern, action=Action.ALLOW, origin=Origin.USER, rank=100
    )
    for value in dict.fromkeys(values):
        if decide_with(candidate, surface, value) is not Action.ALLOW:
            return f"would not allow {value!r} (a floor or another rule still asks)"
    return None
