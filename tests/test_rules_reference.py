"""RuleSet.evaluate agrees with a reference evaluator written straight from DESIGN.md's
"Which rule wins", with its own matcher and brute-force containment.

The reference knows nothing of the engine: patterns become regexes by the documented
dialect (anchored, `*` any characters, `?` one, a trailing `" *"` optional), and "every
value the narrower pattern matches, the wider one matches too" is checked on every string
of a finite universe. The universe holds all strings up to length 6 over the patterns'
characters plus one foreign character, which is long enough to separate any two of the
generated patterns (at most three tokens each) that differ.
"""

from __future__ import annotations

import itertools
import re
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.policy.rules import RuleSet

CHARS = "a "  # the characters patterns are written with
UNIVERSE = [
    "".join(t) for n in range(7) for t in itertools.product(CHARS + "x", repeat=n)
]  # 1 + 3 + … + 729 strings; "x" stands for every other character


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    # (A bare `" *"` is not "optional tail after nothing": it needs its space, as in
    # patterns.py; DESIGN.md's examples never write one.)
    tail = pattern.endswith(" *") and len(pattern) > 2
    body = pattern[:-2] if tail else pattern
    text = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in body)
    return re.compile(text + ("(?: .*)?" if tail else ""), re.DOTALL)


def _matches(pattern: str, value: str) -> bool:
    return _regex(pattern).fullmatch(value) is not None


@cache
def _within(inner: str, outer: str) -> bool:
    """Every value `inner` matches, `outer` matches too (brute force over the universe)."""
    return all(_matches(outer, s) for s in UNIVERSE if _matches(inner, s))


def reference(rules: list[Rule], value: str, agent: str | None) -> tuple[Action | None, set[int]]:
    """DESIGN.md "Which rule wins", rule by rule: (action, ids of the rules standing)."""
    hits = [r for r in rules if r.agent in (None, agent) and _matches(r.pattern, value)]

    def overrides(o: Rule, r: Rule) -> bool:  # o is narrower and from the same or higher scope
        if o is r or not o.trusted or o.rank < r.rank:
            return False
        narrower = _within(o.pattern, r.pattern) and not _within(r.pattern, o.pattern)
        equal = _within(o.pattern, r.pattern) and _within(r.pattern, o.pattern)
        return narrower or (equal and o.rank > r.rank)

    standing = [r for r in hits if not any(overrides(o, r) for o in hits)]
    if not standing:
        return None, set()
    return max((r.action for r in standing), key=lambda a: a.strictness), set(map(id, standing))


TOKENS = ["a", " ", "*", "?", " *", "aa", "a a"]
_rules = st.builds(
    lambda tokens, action, rank, trusted, agent: Rule(
        surface=Surface.BASH,
        pattern="".join(tokens),
        action=Action(action),
        origin=Origin.USER,
        rank=rank,
        trusted=trusted,
        agent=agent,
    ),
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=3),
    st.sampled_from(["allow", "ask", "deny"]),
    st.sampled_from([100, 200, 300, 600]),
    st.booleans(),
    st.sampled_from([None, None, "rev"]),
)
_values = st.lists(st.sampled_from(["a", " ", "x", "aa"]), max_size=4).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_rules, min_size=1, max_size=7),
    _values,
    st.sampled_from([None, "rev"]),
)
def test_evaluate_agrees_with_the_reference(rules: list[Rule], value: str, agent) -> None:
    evaluation = RuleSet(rules, home="/home/t").evaluate(Surface.BASH, value, agent)
    action, standing = reference(rules, value, agent)
    assert evaluation.action is action
    assert set(map(id, evaluation.standing)) == standing
    if action is not None:
        assert evaluation.rule is not None and evaluation.rule.action is action


def test_the_reference_itself_follows_the_documented_examples() -> None:
    def r(pattern: str, action: str, rank: int = 100, trusted: bool = True) -> Rule:
        return Rule(
            surface=Surface.BASH,
            pattern=pattern,
            action=Action(action),
            origin=Origin.USER,
            rank=rank,
            trusted=trusted,
        )

    # An exception nested inside a wider rule wins; a cross-cutting deny is not lifted.
    assert reference([r("a *", "ask"), r("a a *", "allow")], "a a", None)[0] is Action.ALLOW
    assert reference([r("* aa *", "deny"), r("a *", "allow")], "a aa", None)[0] is Action.DENY
    # Nothing overrides from a lower scope; untrusted rules override nothing.
    assert reference([r("a *", "deny", 600), r("a a", "allow", 100)], "a a", None)[0] is (
        Action.DENY
    )
    assert reference([r("a *", "ask"), r("a a", "allow", trusted=False)], "a a", None)[0] is (
        Action.ASK
    )
