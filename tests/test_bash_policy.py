"""Bash commands through the whole engine: the adversarial corpus, everyday commands,
and the property that a unit-level deny is never lost, however the unit is wrapped."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin, Rule, Surface
from test_shell_corpus import CASES, _id


def _rule(surface: str, pattern: str, action: str, base_dir: str) -> Rule:
    return Rule(
        surface=Surface(surface),
        pattern=pattern,
        action=Action(action),
        origin=Origin.USER,
        rank=100,
        base_dir=base_dir,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("proj")
    (root / ".git").mkdir()
    (root / "src").mkdir()
    return root


def permissive(project, denies: tuple[str, ...] = ()) -> Policy:
    """As loose as a policy gets: allow by default and allow every command, path and
    directory, except the given bash denies. Only floors and denies can stop a command."""
    rules = [
        _rule("bash", "*", "allow", str(project)),
        _rule("read", "/**", "allow", str(project)),
        _rule("write", "/**", "allow", str(project)),
        _rule("external_directory", "/**", "allow", str(project)),
    ]
    rules += [_rule("bash", f"{text} *", "deny", str(project)) for text in denies]
    return Policy(
        rules,
        project_root=str(project),
        default=Action.ALLOW,
        env={"HOME": "/home/u", "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_corpus_is_never_allowed_where_it_must_not_be(project, case) -> None:
    policy = permissive(project, case.deny_visible)
    decision = policy.decide(Surface.BASH, case.command, cwd=str(project))
    if case.deny_visible:
        assert decision.action is Action.DENY, (case.command, decision.reason)
    if case.at_least_ask or case.floor:
        assert decision.action is not Action.ALLOW, (case.command, decision.reason)


def test_corpus_size_and_coverage() -> None:
    assert len(CASES) >= 100
    hostile = [c for c in CASES if c.deny_visible or c.at_least_ask or c.floor]
    assert len(hostile) >= 100


EVERYDAY = [
    "git status && git diff",
    "git status; git log --oneline -5",
    "ls | grep x",
    "cd src && ls",
    "cd src && ls -la && cd ..",
    "git diff | head -n 20",
    "grep -rn TODO src | wc -l",
    "echo 'rm -rf /'",
    'echo "done" # rm -rf /',
    "git log --format='%H %s' | head -5",
]


@pytest.mark.parametrize("command", EVERYDAY)
def test_everyday_commands_allowed_by_their_parts(project, command) -> None:
    rules = [
        _rule("bash", pattern, "allow", str(project))
        for pattern in (
            "git status *",
            "git diff *",
            "git log *",
            "ls *",
            "grep *",
            "cd *",
            "head *",
            "wc *",
            "echo *",
        )
    ]
    rules.append(_rule("read", "**", "allow", str(project)))
    policy = Policy(rules, project_root=str(project), env={"HOME": "/home/u"})
    decision = policy.decide(Surface.BASH, command, cwd=str(project))
    assert decision.action is Action.ALLOW, [(u.command, u.reason) for u in decision.units]


def test_cd_out_of_the_project_is_seen(project) -> None:
    rules = [_rule("bash", p, "allow", str(project)) for p in ("cd *", "cat *")]
    rules.append(_rule("read", "/etc/**", "deny", str(project)))
    policy = Policy(rules, project_root=str(project), env={"HOME": "/home/u"})
    decision = policy.decide(Surface.BASH, "cd /etc && cat passwd", cwd=str(project))
    assert decision.action is Action.DENY


# --- property (d): a unit-level deny survives any executing context --------------------

DENIED = "rm -rf /"
# Wrappers take a simple command; compound contexts take any command list.
WRAPPERS = [
    "env FOO=1 {x}",
    "timeout 5 {x}",
    "nice -n 5 {x}",
    "nohup {x}",
    "command {x}",
    "time {x}",
    "sudo {x}",
    "exec {x}",
    "stdbuf -oL {x}",
    "/usr/bin/env {x}",
]
CONTEXTS = [
    "{x}",
    "true && {x}",
    "{x} || true",
    "true; {x}",
    "echo a | {x}",
    "{x} | cat",
    "{x} &",
    "$({x})",
    "echo $({x})",
    "echo `{x}`",
    'echo "$({x})"',
    "( {x} )",
    "{{ {x}; }}",
    "if true; then {x}; fi",
    "if {x}; then :; fi",
    "while {x}; do break; done",
    "for i in 1 2; do {x}; done",
    "case a in a) {x};; esac",
    "f() {{ {x}; }}; f",
    "x=$({x})",
    "cat <({x})",
    "[[ -n $({x}) ]]",
    "echo $(( $({x}) + 1 ))",
    "{x} > /dev/null 2>&1",
    "{x}\n",
    "\n{x}",
]

_simple = st.recursive(
    st.just(DENIED),
    lambda inner: st.builds(lambda w, x: w.format(x=x), st.sampled_from(WRAPPERS), inner),
    max_leaves=2,
)
# A shell's -c script is one word: quote it properly (shlex.quote), as a caller would.
_SHELLS = [lambda x: "bash -c " + shlex.quote(x), lambda x: "sh -c " + shlex.quote(x)]
_commands = st.recursive(
    st.one_of(_simple, _simple.map(lambda x: "FOO=1 " + x), _simple.map(lambda x: "sudo A=1 " + x)),
    lambda inner: st.one_of(
        st.builds(lambda ctx, x: ctx.format(x=x), st.sampled_from(CONTEXTS), inner),
        st.builds(lambda wrap, x: wrap(x), st.sampled_from(_SHELLS), inner),
    ),
    max_leaves=4,
)


@settings(max_examples=250, deadline=None)
@given(_commands)
def test_unit_deny_is_never_lost(command: str) -> None:
    policy = _PROPERTY_POLICY
    decision = policy.decide(Surface.BASH, command, cwd="/tmp")
    assert decision.action is not Action.ALLOW, (command, decision.reason)
    unparsed = any(c.basis == "floor" for c in decision.checks)
    # Unescaped nested backticks close early: bash runs `rm -rf /` as echo's words then.
    unparsed = unparsed or command.count("`") > 2
    if not unparsed:  # e.g. unescaped nested backticks: ask, because bash reads them otherwise
        assert decision.action is Action.DENY, (command, decision.reason)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes_and_is_never_looser_than_its_units(text: str) -> None:
    decision = _PROPERTY_POLICY.decide(Surface.BASH, text, cwd="/tmp")
    assert decision.action in (Action.ALLOW, Action.ASK, Action.DENY)
    for unit in decision.units:
        assert unit.action.strictness <= decision.action.strictness


_PROPERTY_POLICY = Policy(
    [
        Rule(surface=Surface.BASH, pattern="*", action=Action.ALLOW, origin=Origin.USER, rank=1),
        Rule(
            surface=Surface.BASH,
            pattern="rm -rf / *",
            action=Action.DENY,
            origin=Origin.USER,
            rank=1,
        ),
        Rule(surface=Surface.WRITE, pattern="/**", action=Action.ALLOW, origin=Origin.USER, rank=1),
        Rule(surface=Surface.READ, pattern="/**", action=Action.ALLOW, origin=Origin.USER, rank=1),
        Rule(
            surface=Surface.EXTERNAL_DIRECTORY,
            pattern="/**",
            action=Action.ALLOW,
            origin=Origin.USER,
            rank=1,
        ),
    ],
    project_root="/tmp",
    default=Action.ALLOW,
    env={"HOME": "/home/u"},
)


# --- round 2: literal rules are consent (issue #7, principle 7) ------------------------


def _strict(project, *rules: tuple[str, str, str]) -> Policy:
    """Default ask: nothing is allowed unless a rule says so."""
    return Policy(
        [_rule(s, p, a, str(project)) for s, p, a in rules],
        project_root=str(project),
        default=Action.ASK,
        env={"HOME": "/home/u"},
    )


def test_a_literal_bash_rule_speaks_for_the_paths_it_spells(project) -> None:
    policy = _strict(project, ("bash", "rm -rf ./build", "allow"))
    assert policy.decide("bash", "rm -rf ./build", cwd=str(project)).action is Action.ALLOW
    # The same command allowed by a wildcard does not speak for the path.
    wildcard = _strict(project, ("bash", "rm -rf *", "allow"))
    assert wildcard.decide("bash", "rm -rf ./build", cwd=str(project)).action is Action.ASK


def test_a_literal_rule_does_not_lift_write_denies(project) -> None:
    policy = _strict(
        project,
        ("bash", "rm -rf ./build", "allow"),
        ("write", "build/**", "deny"),
        ("write", "build", "deny"),
    )
    assert policy.decide("bash", "rm -rf ./build", cwd=str(project)).action is Action.DENY


def test_a_literal_rule_lifts_the_floor_of_exactly_that_unit(project) -> None:
    policy = _strict(
        project,
        ("bash", "source .venv/bin/activate", "allow"),
        ("bash", "source *", "allow"),
        ("bash", "pytest", "allow"),
        ("read", "**", "allow"),
    )
    lifted = policy.decide("bash", "source .venv/bin/activate && pytest", cwd=str(project))
    assert lifted.action is Action.ALLOW, lifted.reason
    # A wildcard rule never lifts a floor.
    floored = policy.decide("bash", "source .venv/bin/other", cwd=str(project))
    assert floored.action is Action.ASK


def test_a_literal_rule_does_not_speak_for_a_path_in_an_unknown_directory(project) -> None:
    policy = _strict(project, ("bash", "rm -rf ./build", "allow"), ("bash", "cd *", "allow"))
    decision = policy.decide("bash", 'cd "$X" && rm -rf ./build', cwd=str(project))
    assert decision.action is Action.ASK


def test_cdpath_in_the_environment_makes_a_relative_cd_unknown(project) -> None:
    rules = [_rule("bash", "*", "allow", str(project))]
    with_cdpath = Policy(
        rules,
        project_root=str(project),
        default=Action.ALLOW,
        env={"HOME": "/home/u", "CDPATH": "/etc"},
    )
    decision = with_cdpath.decide("bash", "cd ssh && cat id_rsa", cwd=str(project))
    assert decision.action is Action.ASK
    assert with_cdpath.decide("bash", "cd src && make", cwd=str(project)).action is Action.ALLOW


# --- round 2: the new filesystem look-ups fail closed ------------------------------------


def _allow_all(project, **env: str) -> Policy:
    return Policy(
        [_rule("bash", "*", "allow", str(project))],
        project_root=str(project),
        default=Action.ALLOW,
        env={"HOME": "/home/u", **env},
    )


def test_a_glob_naming_too_many_files_asks(tmp_path) -> None:
    for index in range(300):
        (tmp_path / f"f{index}.txt").write_text("")
    policy = _allow_all(tmp_path)
    assert policy.decide("bash", "wc -l *.txt", cwd=str(tmp_path)).action is Action.ASK
    assert policy.decide("bash", "wc -l f1.txt", cwd=str(tmp_path)).action is Action.ALLOW


def test_a_glob_with_many_wildcard_levels_asks_instead_of_walking_the_disk(project) -> None:
    policy = _allow_all(project)
    decision = policy.decide("bash", "cat /*/*/*/nothing*", cwd=str(project))
    assert decision.action is Action.ASK


def test_a_directory_that_cannot_be_resolved_asks(project) -> None:
    policy = _allow_all(project)
    # `~-` is $OLDPWD, unknown to askgate: the unit's directory cannot be checked.
    decision = policy.decide("bash", "cd ~- && cat x", cwd=str(project))
    assert decision.action is Action.ASK
