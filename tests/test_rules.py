"""The winning-rule rule: overrides by narrower rules, scopes, trust, order independence."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.policy.patterns import compile_pattern, contains
from askgate.policy.rules import RuleSet

RANKS = {Origin.USER: 10, Origin.PROJECT: 20, Origin.USER_AGENT: 30, Origin.MANAGED: 50}


def rule(
    pattern: str,
    action: str,
    *,
    surface: Surface = Surface.BASH,
    origin: Origin = Origin.USER,
    trusted: bool = True,
    agent: str | None = None,
    base_dir: str | None = None,
) -> Rule:
    return Rule(
        surface=surface,
        pattern=pattern,
        action=Action(action),
        origin=origin,
        rank=RANKS[origin],
        trusted=trusted,
        agent=agent,
        base_dir=base_dir,
    )


def answer(rules: list[Rule], value: str, surface: Surface = Surface.BASH, agent=None):
    ev = RuleSet(rules, home="/home/u").evaluate(surface, value, agent)
    return ev.action, (ev.rule.pattern if ev.rule else None)


def test_exception_nested_inside_rule() -> None:
    rules = [rule("git *", "allow"), rule("git push *", "deny")]
    assert answer(rules, "git status") == (Action.ALLOW, "git *")
    assert answer(rules, "git push origin") == (Action.DENY, "git push *")


def test_cross_cutting_deny_not_lifted_by_unrelated_allow() -> None:
    rules = [rule("* --force", "deny"), rule("git push *", "allow")]
    assert answer(rules, "git push origin --force")[0] is Action.DENY


def test_narrower_rule_from_lower_scope_does_not_override() -> None:
    rules = [
        rule(
            "**",
            "deny",
            surface=Surface.WRITE,
            origin=Origin.USER_AGENT,
            agent="rev",
            base_dir="/p",
        ),
        rule("src/**", "allow", surface=Surface.WRITE, origin=Origin.USER, base_dir="/p"),
    ]
    assert answer(rules, "/p/src/a.py", Surface.WRITE, agent="rev")[0] is Action.DENY
    # Without the agent, its section does not apply.
    assert answer(rules, "/p/src/a.py", Surface.WRITE)[0] is Action.ALLOW


def test_managed_rules_are_floors() -> None:
    rules = [rule("curl *", "deny", origin=Origin.MANAGED), rule("curl -s x", "allow")]
    assert answer(rules, "curl -s x")[0] is Action.DENY


def test_equal_pattern_overridden_only_from_higher_scope() -> None:
    assert answer([rule("ls", "ask"), rule("ls", "allow", origin=Origin.PROJECT)], "ls")[0] is (
        Action.ALLOW
    )
    assert answer([rule("ls", "allow"), rule("ls", "deny", origin=Origin.PROJECT)], "ls")[0] is (
        Action.DENY
    )


def test_untrusted_rules_override_nothing() -> None:
    rules = [
        rule("rm *", "deny"),
        rule("rm -rf ./build", "ask", origin=Origin.PROJECT, trusted=False),
    ]
    assert answer(rules, "rm -rf ./build")[0] is Action.DENY
    rules = [
        rule("git *", "allow"),
        rule("git push *", "deny", origin=Origin.PROJECT, trusted=False),
    ]
    assert answer(rules, "git push x")[0] is Action.DENY


def test_path_patterns_expand_home_and_root() -> None:
    rules = [
        rule("~/.ssh/**", "deny", surface=Surface.READ),
        rule(".env*", "deny", surface=Surface.READ, base_dir="/p"),
        rule(".env.example", "allow", surface=Surface.READ, base_dir="/p"),
    ]
    assert answer(rules, "/home/u/.ssh/id_rsa", Surface.READ)[0] is Action.DENY
    assert answer(rules, "/p/.env", Surface.READ)[0] is Action.DENY
    assert answer(rules, "/p/.env.example", Surface.READ)[0] is Action.ALLOW
    assert answer(rules, "/q/.env", Surface.READ)[0] is None


def test_index_scales_without_losing_wildcard_rules() -> None:
    rules = [rule(f"tool{i} *", "allow") for i in range(2000)]
    rules += [rule("*", "ask"), rule("* --force", "deny")]
    assert answer(rules, "tool1234 run")[0] is Action.ALLOW
    assert answer(rules, "tool1234 run --force")[0] is Action.DENY
    assert answer(rules, "other")[0] is Action.ASK


# --- properties ------------------------------------------------------------------------------

WORDS = ["git", "push", "status", "rm", "-rf", "--force", "x"]
_patterns = st.lists(st.sampled_from([*WORDS, "*"]), min_size=1, max_size=3).map(" ".join)
_values = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
_rules = st.builds(
    rule,
    _patterns,
    st.sampled_from(["allow", "ask", "deny"]),
    origin=st.sampled_from(list(RANKS)),
    trusted=st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_rules, min_size=1, max_size=8), _values, st.randoms(use_true_random=False))
def test_answer_does_not_depend_on_rule_order(rules, value, rnd) -> None:
    before = answer(rules, value)[0]
    shuffled = list(rules)
    rnd.shuffle(shuffled)
    assert answer(shuffled, value)[0] is before


SMALL = ["git", "push", "x"]
_small_rules = st.builds(
    rule,
    st.lists(st.sampled_from([*SMALL, "*"]), min_size=1, max_size=2).map(" ".join),
    st.sampled_from(["allow", "ask", "deny"]),
    origin=st.sampled_from(list(RANKS)),
    trusted=st.booleans(),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    st.lists(_small_rules, min_size=1, max_size=5),
    _small_rules,
    st.lists(st.sampled_from(SMALL), min_size=1, max_size=3).map(" ".join),
)
def test_adding_a_rule_that_is_not_narrower_never_loosens(rules, extra, value) -> None:
    matching = [r for r in rules if compile_pattern("wildcard", r.pattern).matches(value)]
    assume(matching)  # with no match the default applies, and any rule may replace it
    extra_p = compile_pattern("wildcard", extra.pattern)
    assume(not any(contains(compile_pattern("wildcard", r.pattern), extra_p) for r in matching))
    before = answer(rules, value)[0]
    after = answer([*rules, extra], value)[0]
    assert after.strictness >= before.strictness
