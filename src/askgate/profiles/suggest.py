"""Rules proposed from what people approved: the pure part of `askgate suggest`.

Input: review-log records. Each ask a human approved contributes, per unit that asked, the
narrowest safe pattern ("Yes, for this session" uses the same logic, session.py). A pattern
is proposed when enough approvals share it and it passes every safety check:

- a safe pattern exists (never an interpreter, wrapper or runner such as `bash`, `sudo`,
  `xargs`, and never a bare `*`);
- it lifts no deny: no deny rule on the surface contains it (an allow nested inside a deny
  would override that deny);
- it would actually allow the approved value: re-deciding the ORIGINAL request (the
  review log's `value_exact`; a unit's logged command is unquoted and would re-parse as
  another command) with the proposal added allows that unit, which is never the case when
  the ask came from a floor (an opaque construct, a wrapper, a read or write rule);
- it allows no network tool, no interpreter running inline code and no package install
  unless the file it goes to requires the sandbox (`risky.py`);
- it does not come from a multi-line body (a heredoc, an edit payload): those are one-off.

Approvals whose original request was not kept (cut short, or masked because it held
something secret-looking) are skipped and counted.
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


class Approved(msgspec.Struct, frozen=True):
    """One approved unit: the value a pattern is made from (a bash unit's normalised
    command) and the original request it came from (what is re-decided)."""

    surface: Surface
    value: str
    original: str


def original_request(record: Mapping[str, Any]) -> str | None:
    """The approved request byte for byte, or None when the log did not keep it."""
    exact = record.get("value_exact")
    if isinstance(exact, str) and exact:
        return exact
    if "value_exact" in record:
        return None  # the logger saw it and could not keep it (too long, or masked)
    value = record.get("value")  # a log written before `value_exact`: only if complete
    if not isinstance(value, str) or not value or "[redacted]" in value:
        return None
    if len(value) > 1_000 or value.endswith(" chars]"):
        return None
    return value


def approved_values(
    records: Iterable[Mapping[str, Any]], since: _dt.datetime | None
) -> tuple[list[Approved], int]:
    """Every unit a human approved after `since` (for bash, the units that asked;
    otherwise the decision's value), and how many approvals were skipped: the original
    was not kept, or it is a multi-line body (a heredoc, an edit payload)."""
    found: list[Approved] = []
    skipped = 0
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
        original = original_request(record)
        if original is None or "\n" in original or "\r" in original:
            skipped += 1
            continue
        if surface is Surface.BASH:
            units = record.get("units")
            for unit in units if isinstance(units, list) else ():
                if isinstance(unit, dict) and unit.get("action") == "ask":
                    command = unit.get("command")
                    if isinstance(command, str) and command and "\n" not in command:
                        found.append(Approved(surface, command, original))
        else:
            found.append(Approved(surface, original, original))
    return found, skipped


def _lifted_deny(rules: RuleSet, surface: Surface, pattern: str) -> Rule | None:
    proposed = compile_pattern(kind_of(surface), pattern)
    for rule in rules.rules:
        is_deny = rule.surface is surface and rule.action is Action.DENY
        if is_deny and contains(rules.compile(rule), proposed):
            return rule
    return None


def propose(
    approved: Iterable[Approved],
    *,
    policy_rules: Iterable[Rule],
    decide_with: Any,
    minimum: int,
    home: str | None = None,
    sandbox_required: bool = False,
) -> tuple[list[Proposal], list[Rejected]]:
    """Group `approved` values by their safe pattern and keep the safe, frequent ones.

    `decide_with(rule, surface, original) -> Decision` re-decides the original request
    with `rule` added (the caller owns the policy and the working directory).
    `sandbox_required`: the file the proposals go to requires the sandbox for bash.
    """
    from askgate.session import suggest_pattern

    groups: dict[tuple[Surface, str], list[Approved]] = {}
    for item in approved:
        pattern = suggest_pattern(item.surface, item.value)
        if pattern is None:  # no safe pattern: an interpreter, a wrapper, a bare value
            continue
        groups.setdefault((item.surface, pattern), []).append(item)
    rules = RuleSet(policy_rules, home=home)
    proposals: list[Proposal] = []
    rejected: list[Rejected] = []
    for (surface, pattern), items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        if len(items) < minimum:
            continue
        why = _unsafe_reason(rules, surface, pattern, items, decide_with, sandbox_required)
        if why:
            rejected.append(Rejected(surface=surface, pattern=pattern, count=len(items), why=why))
            continue
        values = [item.value for item in items]
        examples = tuple(dict.fromkeys(values))[:3]
        proposals.append(
            Proposal(surface=surface, pattern=pattern, count=len(values), examples=examples)
        )
    return proposals, rejected


def _unsafe_reason(
    rules: RuleSet,
    surface: Surface,
    pattern: str,
    items: list[Approved],
    decide_with: Any,
    sandbox_required: bool,
) -> str | None:
    from askgate.profiles.risky import risky_class

    if pattern.strip() in ("*", "**", "/**") or pattern.startswith("*"):
        return "too wide (a bare wildcard)"
    if surface is Surface.BASH and not sandbox_required:
        for text in (pattern, *(item.value for item in items)):
            kind = risky_class(text)
            if kind is not None:
                return f'{kind}: proposed only where [sandbox] bash = "required"'
    lifted = _lifted_deny(rules, surface, pattern)
    if lifted is not None:
        return f"would lift the deny {lifted.pattern!r}"
    candidate = Rule(
        surface=surface, pattern=pattern, action=Action.ALLOW, origin=Origin.USER, rank=100
    )
    for item in {(i.value, i.original): i for i in items}.values():
        decision = decide_with(candidate, surface, item.original)
        if not _allows(decision, surface, item.value):
            return f"would not allow {item.value!r} (a floor or another rule still asks)"
    return None


def _allows(decision: Any, surface: Surface, unit: str) -> bool:
    """The re-decided original allows the approved unit (for bash: every unit of it with
    that command; the others may still ask for their own reasons)."""
    if surface is not Surface.BASH:
        return bool(decision.action is Action.ALLOW)
    matching = [u for u in decision.units if u.command == unit]
    if not matching:
        return bool(decision.action is Action.ALLOW)
    return all(u.action is Action.ALLOW for u in matching)
