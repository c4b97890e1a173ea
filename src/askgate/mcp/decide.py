"""One MCP call -> one policy Decision: its `server:tool` rule and every argument together.

Pure given the policy (which reads the filesystem only to resolve symlinks). The gate turns
the Decision into an Outcome (`Gate.preflight(request, decision=...)`), so an MCP call is
settled, asked, audited and broadcast like every other tool call.

How arguments combine with the call's rule (docs/mcp.md):

* the call's own decision: `mcp` rule ``server:tool``, then the `tool` rule
  ``mcp__server__tool``, then `default`;
* a **read** path only tightens: a matching `read` deny or ask applies (a matching allow is
  recorded, it cannot loosen), and `external_directory` applies outside the project, as for
  the paths a bash command reads;
* a **write** path follows the `write` rules with `default` as the fallback (an allowed tool
  must not write anywhere), as bash redirect targets do;
* a **command** is a bash decision (its rule, else `default`);
* a **URL** is a web fetch decision (`url_decision`);
* what cannot be checked (a ``file:`` URI of another host, values nested too deeply) asks.

The strictest answer wins; a deny on any argument denies the call.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import msgspec

from askgate.mcp.arguments import MAX_DEPTH, MAX_VALUES, Argument, Role, ToolShape, classify
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Basis, Check, Decision, Surface, UnitDecision
from askgate.tools import mcp_tool_name

# The tool whose rule decides a URL until the `net` surface lands (one switch: url_decision).
WEBFETCH_TOOL = "WebFetch"
# A recursive reader of the engine (policy.engine.RECURSIVE_TOOLS): a search below a
# directory is checked against the read rules inside it.
_RECURSIVE_TOOL = "Grep"
_MAX_SHOWN = 300


def call_value(server: str, tool: str) -> str:
    """The `mcp` surface value of one call (`server:tool`)."""
    return f"{server}:{tool}"


def name_decision(
    policy: Policy, server: str, tool: str, *, cwd: str | None = None, agent: str | None = None
) -> Decision:
    """The call's own rule, without its arguments (what `tools/list` filtering uses)."""
    return policy.decide(
        Surface.MCP,
        call_value(server, tool),
        cwd=cwd,
        agent=agent,
        tool=mcp_tool_name(server, tool),
    )


_NAMES: weakref.WeakKeyDictionary[Policy, dict[tuple[str, str, str, str | None], Decision]]
_NAMES = weakref.WeakKeyDictionary()
_NAME_MEMO_LIMIT = 4_096


def _name_memo(policy: Policy, server: str, tool: str, cwd: str, agent: str | None) -> Decision:
    """`name_decision`, remembered: it depends on the rules alone, which never change."""
    memo = _NAMES.get(policy)
    if memo is None:
        memo = _NAMES[policy] = {}
    key = (server, tool, cwd, agent)
    found = memo.get(key)
    if found is None:
        found = name_decision(policy, server, tool, cwd=cwd, agent=agent)
        if len(memo) >= _NAME_MEMO_LIMIT:
            memo.clear()
        memo[key] = found
    return found


def decide_call(
    policy: Policy,
    server: str,
    tool: str,
    arguments: Any,
    *,
    shape: ToolShape | None = None,
    cwd: str,
    agent: str | None = None,
) -> Decision:
    """The decision for one `tools/call` (or a resources/prompts request, named by a
    pseudo-tool such as ``resources/read``)."""
    shape = shape or ToolShape.of(tool)
    own = _name_memo(policy, server, tool, cwd, agent)
    if own.action is Action.DENY:
        return own  # nothing an argument says can change it; skip the file lookups
    units = [argument_unit(policy, arg, cwd, agent) for arg in classify(shape, arguments)]
    if has_conditions(policy):
        units += condition_units(policy, server, tool, arguments, agent)
    return combine(own, units)


# --- argument conditions -------------------------------------------------------------------
# An `mcp` rule whose pattern has `(` speaks about one argument of a call:
# `"slack:post_message(channel=#general)" = "deny"`. Each leaf of the arguments is looked up
# as `server:tool(key=value)` (nested keys joined by `.`, list indexes left out); only such
# rules count there, and only to tighten (docs/mcp.md, "Argument conditions").

MAX_CONDITION_VALUE = 1_000
_CONDITIONS: weakref.WeakKeyDictionary[Policy, bool] = weakref.WeakKeyDictionary()


def has_conditions(policy: Policy) -> bool:
    """Whether any `mcp` rule is an argument condition (else no leaf is looked up)."""
    found = _CONDITIONS.get(policy)
    if found is None:
        found = any(r.surface is Surface.MCP and "(" in r.pattern for r in policy.rules.rules)
        _CONDITIONS[policy] = found
    return found


def condition_values(server: str, tool: str, arguments: Any) -> list[tuple[str, str]]:
    """(key, the `mcp` value looked up) for every scalar leaf of `arguments`."""
    out: list[tuple[str, str]] = []

    def walk(value: Any, key: str, depth: int) -> None:
        if depth > MAX_DEPTH or len(out) >= MAX_VALUES:
            return
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, f"{key}.{k}" if key else str(k), depth + 1)
        elif isinstance(value, list):
            for v in value:
                walk(v, key, depth + 1)
        elif key:
            text = _scalar_text(value)
            out.append((key, f"{call_value(server, tool)}({key}={text})"))

    walk(arguments, "", 0)
    return out


def _scalar_text(value: Any) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
    if any(ord(c) < 0x20 or c == "\x7f" for c in text):
        text = msgspec.json.encode(text).decode()[1:-1]  # escaped: never a control character
    if len(text) > MAX_CONDITION_VALUE:
        text = text[:MAX_CONDITION_VALUE] + "…"
    return text


def condition_units(
    policy: Policy, server: str, tool: str, arguments: Any, agent: str | None
) -> list[UnitDecision]:
    units: list[UnitDecision] = []
    for key, value in condition_values(server, tool, arguments):
        decision = policy.decide(Surface.MCP, value, agent=agent)
        rule = decision.rule
        if rule is None or "(" not in rule.pattern or decision.action is Action.ALLOW:
            continue  # no argument rule speaks, or it allows: nothing to tighten
        units.append(
            UnitDecision(
                command=f"arguments.{key} (condition {value[:_MAX_SHOWN]!r})",
                action=decision.action,
                rule=rule,
                reason=decision.reason,
                checks=decision.checks,
                context="mcp argument",
            )
        )
    return units


def combine(own: Decision, units: Sequence[UnitDecision]) -> Decision:
    if not units:
        return own
    action = Action.strictest(own.action, *(u.action for u in units))
    decisive = next((u for u in units if u.action is action), None)
    own_speaks = own.action is action and not _by_default(own)
    if decisive is not None and not own_speaks:
        reason, rule = f"{decisive.command}: {decisive.reason}", decisive.rule
    else:
        reason, rule = own.reason, own.rule
    return msgspec.structs.replace(
        own,
        action=action,
        reason=reason,
        rule=rule,
        units=tuple(units),
    )


def _by_default(decision: Decision) -> bool:
    return all(c.basis == Basis.DEFAULT for c in decision.checks if c.basis != Basis.IGNORED)


def argument_unit(policy: Policy, arg: Argument, cwd: str, agent: str | None) -> UnitDecision:
    """One argument's verdict, shown as one unit of the call's decision."""
    shown = arg.value if len(arg.value) <= _MAX_SHOWN else arg.value[:_MAX_SHOWN] + "…"
    label = f"{arg.where} ({arg.role} {shown!r})"
    if arg.role is Role.OPAQUE:
        why = f"cannot be checked: {arg.why or 'not a local path or a URL'}"
        check = _floor(Surface.TOOL, arg.where, Action.ASK, why)
        return UnitDecision(
            command=label, action=Action.ASK, rule=None, reason=why, checks=(check,),
            context="mcp argument",
        )  # fmt: skip
    if arg.role is Role.READ:
        tool = _RECURSIVE_TOOL if arg.recursive else None
        decision = _tighten_only(
            policy.decide(Surface.READ, arg.value, cwd=cwd, agent=agent, tool=tool)
        )
    elif arg.role is Role.WRITE:
        # A write path is read-checked too: an edit returns a diff of what it changed, a
        # move makes the file readable elsewhere, an unclassified argument may be read.
        decision = _both(
            policy.decide(Surface.WRITE, arg.value, cwd=cwd, agent=agent),
            _tighten_only(policy.decide(Surface.READ, arg.value, cwd=cwd, agent=agent)),
        )
    elif arg.role is Role.COMMAND:
        decision = policy.decide(Surface.BASH, arg.value, cwd=cwd, agent=agent)
    else:
        decision = url_decision(policy, arg.value, cwd=cwd, agent=agent)
    checks = list(decision.checks)
    for unit in decision.units:
        checks.extend(unit.checks)
    return UnitDecision(
        command=label,
        action=decision.action,
        rule=decision.rule,
        reason=decision.reason,
        checks=tuple(checks),
        context="mcp argument",
    )


def url_decision(policy: Policy, url: str, *, cwd: str, agent: str | None) -> Decision:
    """A URL an MCP argument names, decided as a web fetch. Today: the `WebFetch` tool's
    rule (else `default`); the one place to switch to the `net` surface when it lands."""
    problem = _url_problem(url)
    if problem is not None:
        check = _floor(Surface.TOOL, WEBFETCH_TOOL, Action.ASK, f"URL {problem}")
        return Decision(
            action=Action.ASK, reason=f"URL {problem}", surface=Surface.TOOL,
            value=WEBFETCH_TOOL, rule=None, checks=(check,),
        )  # fmt: skip
    return policy.decide(Surface.TOOL, WEBFETCH_TOOL, cwd=cwd, agent=agent)


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError for a port that is not a number in range
    except ValueError as exc:
        return f"cannot be parsed: {exc}"
    del port
    if parts.scheme.lower() not in ("http", "https"):
        return f"has scheme {parts.scheme!r}, not http or https"
    if not parts.hostname:
        return "names no host"
    if any(ord(c) < 0x21 or c == "\x7f" for c in url):
        return "contains spaces or control characters"
    if "\\" in parts.netloc or "@" in parts.netloc:
        return "carries credentials or a backslash in its host part"
    return None


def _both(write: Decision, read: Decision) -> Decision:
    """The stricter of a path's write and read decisions, with the checks of both."""
    first, second = (read, write) if read.action.strictness > write.action.strictness else (
        write, read)  # fmt: skip
    return msgspec.structs.replace(first, checks=(*first.checks, *second.checks))


def _tighten_only(decision: Decision) -> Decision:
    """A read path's decision where only deny and ask rules (and floors, and
    external_directory) count: no rule or an allow adds nothing."""
    kept: list[Check] = []
    for check in decision.checks:
        fallback = check.surface is Surface.TOOL or (
            check.surface is Surface.READ and check.basis == Basis.DEFAULT
        )
        if fallback:
            continue
        if check.surface is Surface.READ and check.action is Action.ALLOW:
            if check.basis == Basis.RULE:
                kept.append(
                    msgspec.structs.replace(
                        check, basis=Basis.IGNORED, note="an allow here cannot loosen the call"
                    )
                )
            continue
        kept.append(check)
    counted = [c for c in kept if c.basis != Basis.IGNORED]
    action = Action.strictest(Action.ALLOW, *(c.action for c in counted))
    decisive = next((c for c in counted if c.action is action), None)
    if decisive is None:
        reason, rule = "no read rule restricts this path", None
    elif decisive is (decision.checks[0] if decision.checks else None):
        reason, rule = decision.reason, decisive.rule
    else:
        reason, rule = check_reason(decisive), decisive.rule
    return msgspec.structs.replace(
        decision, action=action, reason=reason, rule=rule, checks=tuple(kept), clamped=False
    )


def check_reason(check: Check) -> str:
    if check.basis == Basis.FLOOR:
        return check.note or "needs a human"
    if check.rule is None:
        return f"no {check.surface} rule matches {check.value!r}; {check.note or 'default'}"
    rule = check.rule
    text = f"{check.surface} rule {rule.pattern!r} = {rule.action} matches {check.value!r}"
    text += f" ({rule.origin})"
    return text + (f": {rule.reason}" if rule.reason else "")


def _floor(surface: Surface, value: str, action: Action, note: str) -> Check:
    return Check(surface=surface, value=value, action=action, rule=None, basis=Basis.FLOOR,
                 note=note)  # fmt: skip
