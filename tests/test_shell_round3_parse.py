"""Issue 22, the parse-and-expansion half: the engine's final answer for attacks of each
class under three policies — round 2's permissive one (default allow, a few denies),
`examples/policy.toml`, and the policy `askgate init --yes` writes — and, where the harm
is observable, the same command run in real bash in a scratch copy of the world, showing
it really reads the secret or runs the planted program.

Classes: code the parser did not account for (hidden substitutions), bash's globs,
arithmetic contexts, other users' homes, literal consent, /proc paths of the deciding
process, the project root, the finality of a user's deny, and the `unset` false positive.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from askgate.policy.config import project_root_of
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.policy.paths import NO_PROJECT_ROOT
from askgate.policy.shell import analyze
from askgate.profiles.detect import detect_profiles, starter_policy
from test_shell_engine_corpus import permissive_policy

BASH = shutil.which("bash")
REPO = Path(__file__).resolve().parent.parent
SECRET = "SECRET=hunter2"
KEY = "PRIVATE-KEY-MATERIAL"


class World:
    """A home and a project on the real filesystem, and the three policies."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home" / "u"
        self.project = self.home / "proj"
        for directory in (self.home / ".ssh", self.project / "src", self.project / ".git"):
            directory.mkdir(parents=True, exist_ok=True)
        (self.home / ".ssh" / "id_rsa").write_text(KEY + "\n")
        (self.project / ".env").write_text(SECRET + "\n")
        (self.project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        (self.project / "a.txt").write_text("a\n")
        (self.project / "src" / "a.py").write_text("print(1)\n")
        self.env = {
            "HOME": str(self.home),
            "PATH": "/usr/bin:/bin",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "ASKGATE_MANAGED_POLICY": str(base / "no-managed-policy.toml"),
        }
        init = base / "init-policy.toml"
        chosen = [name for name, _ in detect_profiles(str(self.project))]
        init.write_text(starter_policy(chosen))
        self.policies: dict[str, Policy] = {
            "permissive": permissive_policy(self.home, self.project),
            "example": self.load(str(REPO / "examples" / "policy.toml")),
            "init": self.load(str(init)),
        }
        for name, policy in self.policies.items():
            assert not policy.errors, (name, policy.errors)

    def load(self, path: str) -> Policy:
        return Policy.load(str(self.project), config_files=[path], env=self.env)

    def answers(self, command: str, cwd: Path | None = None) -> dict[str, Action]:
        where = str(cwd or self.project)
        return {
            name: policy.decide(Surface.BASH, command, cwd=where).action
            for name, policy in self.policies.items()
        }

    def bash(self, command: str) -> str:
        """Run the command in real bash in the project, with this world's HOME."""
        assert BASH is not None
        result = subprocess.run(
            [BASH, "--norc", "--noprofile", "-c", command],
            cwd=self.project,
            env={**self.env, "LC_ALL": "C"},
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
        )
        return result.stdout + result.stderr


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("round3"))


needs_bash = pytest.mark.skipif(BASH is None, reason="needs bash")


def _never_allowed(world: World, command: str) -> dict[str, Action]:
    got = world.answers(command)
    assert all(action is not Action.ALLOW for action in got.values()), (command, got)
    return got


# -- 1. what the parser does not account for is code ------------------------------------

HIDDEN_SUBSTITUTIONS = [
    "echo ${x:-`cat .env`}",
    'echo "${x:-`cat .env`}"',
    "cat ${x:-<(cat .env)}",
    ": ${x:=`cat .env >&2`}",
    "x=a; echo ${x#`cat .env >&2`}",
    "echo ${x:-${y:-`cat .env`}}",
    "echo \"${x:-'`cat .env`'}\"",
    "echo `echo \\`cat .env\\``",
    "printf '%s\\n' ${x:+a} ${y:-`cat .env`}",
    "cat <<EOF\n${x:-'`cat .env`'}\nEOF",
]


@needs_bash
@pytest.mark.parametrize("command", HIDDEN_SUBSTITUTIONS)
def test_substitution_hidden_in_a_parameter_default_is_never_allowed(
    world: World, command: str
) -> None:
    assert SECRET in world.bash(command), "real bash reads the secret"
    got = _never_allowed(world, command)
    # The text is parsed again, so the read deny on **/.env* is seen where it applies.
    assert got["permissive"] in (Action.DENY, Action.ASK)


@needs_bash
@pytest.mark.parametrize(
    "command",
    ["echo ${x:-'`cat .env`'}", "echo '$(cat .env)' \"\\$(cat .env)\"", "echo $'`cat .env`'"],
)
def test_quoted_substitution_text_stays_data(world: World, command: str) -> None:
    assert SECRET not in world.bash(command), "real bash prints the text, runs nothing"
    assert world.answers(command)["permissive"] is Action.ALLOW


# Every place a word can stand, with a substitution in it: wherever real bash runs it (the
# secret reaches stderr), no policy allows the command. Round 2's analyser allowed 35 of
# these under the permissive policy.
_PLACES = [
    "echo ${x:-P}", "echo ${x:+P}", "x=; : ${x:=P}", "echo ${x-P}", "x=a; echo ${x#P}",
    "x=a; echo ${x%P}", "x=a; echo ${x/P/}", "x=a; echo ${x//a/P}", "x=a; echo ${x^P}",
    "x=a; echo ${x,,P}", "echo ${a[P]}", "x=abc; echo ${x:P}", "x=abc; echo ${x:0:P}",
    "echo $((P))", "[[ $x == P ]]", "[[ $x =~ P ]]", "case P in *) ;; esac",
    "case x in P) ;; esac", "for x in P; do :; done", "x=P", "export x=P",
    "f(){ local x=P; }; f", "declare x=P", "arr=(P)", "arr[P]=1", "cat <<E\nP\nE",
    "cat <<<P", "echo >P", "cat <P", 'echo $"P"', 'echo "P"', "((P))", "test P", "[ P ]",
    'echo ${x:-"P"}', "echo \"${x:-'P'}\"", 'echo ${x:-a"P"b}', "echo ${x:-${y:-P}}",
    'echo "${x:-"${y:-P}"}"', "cat <<E\n${x:-P}\nE", "cat <<E\n\"${x:-'P'}\"\nE",
    "x=(a); echo ${x[@]:P}", "echo {a,P}", "time P", "! P", "{ P; }", "(P)",
    "if P; then :; fi", "while P; do break; done", "echo ${x:-P}${y:-P}", "x=1; echo ${x/#1/P}",
]  # fmt: skip
_PAYLOADS = ["$(cat .env >&2)", "`cat .env >&2`", "<(cat .env >&2)", '"$(cat .env >&2)"',
             '"`cat .env >&2`"']  # fmt: skip


@needs_bash
def test_substitution_in_any_word_position_is_never_allowed_where_bash_runs_it(
    world: World,
) -> None:
    leaking = 0
    for place in _PLACES:
        for payload in _PAYLOADS:
            command = place.replace("P", payload)
            if SECRET not in world.bash(command):
                continue
            leaking += 1
            got = world.answers(command)
            assert Action.ALLOW not in got.values(), (command, got)
    assert leaking >= 150  # the comparison is not vacuous


def test_nesting_beyond_the_analysers_depth_is_never_allowed(world: World) -> None:
    command = "cat .env"
    for _ in range(80):
        command = f"echo $({command})"
    _never_allowed(world, command)
    command = "`cat .env`"
    for _ in range(80):
        command = "${x:-" + command + "}"
    _never_allowed(world, "echo " + command)


# -- 2. bash's globs, not Python's --------------------------------------------------------

GLOB_READS = [
    ("cat .[^x]nv", SECRET),
    ("cat .{e,x}n?", SECRET),
    ("cat .[[:lower:]]nv", SECRET),
    ("cat .e[!x]v", SECRET),
    ("head -1 .[e]n[v]", SECRET),
    ("cat ~/.[[:alpha:]]sh/id_rsa", KEY),
    ("cat ~/.s{s,x}h/id_*", KEY),
    ("cat ~/.ss?/id_[[:alpha:]]sa", KEY),
    ("for f in .[^a]n?; do cat $f; done", SECRET),
]


@needs_bash
@pytest.mark.parametrize("command, secret", GLOB_READS)
def test_bash_glob_reaching_a_denied_file_is_denied(
    world: World, command: str, secret: str
) -> None:
    assert secret in world.bash(command), "real bash expands the glob to the secret"
    got = world.answers(command)
    assert got == {name: Action.DENY for name in got}, (command, got)


_MATCHING = {
    "e": ["e", "?", "[e]", "[!x]", "[^x]", "[[:alpha:]]", "[[:lower:]]", "[a-z]", "{e,x}",
          "[]e]", "*", "[[:alnum:]]", "[d-f]"],
    "n": ["n", "?", "[n]", "[!.]", "[[:lower:]]", "[m-o]", "{n,m}", "*"],
    "v": ["v", "?", "[v]", "[^e]", "[[:alpha:]]", "{v,w}", "*", "[u-w]"],
}  # fmt: skip


@needs_bash
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    parts=st.tuples(*(st.sampled_from(_MATCHING[c]) for c in "env")),
    tail=st.sampled_from(["", "*", "?", "{,.local}"]),
)
def test_any_bash_glob_spelling_of_the_secret_is_denied(
    world: World, parts: tuple[str, str, str], tail: str
) -> None:
    command = "cat ." + "".join(parts) + tail
    if SECRET not in world.bash(command):
        return  # (e.g. `?` for the last letter with a tail that needs more)
    got = world.answers(command)
    # A brace expansion without a glob character (`.{e,x}nv`) is floored to ask instead
    # (it could also make options: `rm {-rf,/}`); with one, the engine expands it.
    brace_only = "{" in command and not any(c in command for c in "*?[")
    assert got["permissive"] is (Action.ASK if brace_only else Action.DENY), (command, got)
    assert Action.ALLOW not in got.values(), (command, got)


GLOB_OPTIONS = [
    "shopt -s dotglob; cat *",
    "shopt -s nocaseglob; cat .EN[V]",
    "GLOBIGNORE=x; cat *",
    "bash -c 'shopt -s dotglob; cat *'",
]


@needs_bash
@pytest.mark.parametrize("command", GLOB_OPTIONS)
def test_glob_options_set_earlier_in_the_command_are_never_allowed(
    world: World, command: str
) -> None:
    assert SECRET in world.bash(command), "real bash reads the secret"
    _never_allowed(world, command)


@needs_bash
def test_one_glob_word_naming_source_and_target_checks_each_as_read(world: World) -> None:
    """`cp a.txt {.en[v],DIR}` is one word in the target's place, but cp reads `.env` and
    writes DIR: each name a word gives is checked as a read (and a write) too."""
    target = world.base / "leak"
    target.mkdir(exist_ok=True)
    command = f"cp a.txt {{.en[v],{target}}}"
    world.bash(command)
    assert SECRET in (target / ".env").read_text(), "real cp copied the secret"
    got = world.answers(command)
    assert got == {name: Action.DENY for name in got}, (command, got)


@pytest.mark.parametrize("command", ["cat .[[=e=]]nv", "cat .[[.e.]]nv", "cat .[[:nope:]]nv"])
def test_glob_feature_the_expander_does_not_model_is_never_allowed(
    world: World, command: str
) -> None:
    _never_allowed(world, command)


@needs_bash
@pytest.mark.skipif(shutil.which("tar") is None, reason="needs tar")
def test_glob_expanding_to_an_option_is_never_allowed(world: World) -> None:
    """The classic wildcard injection: files named like options, then `tar cf x *`."""
    names = ["--checkpoint=1", "--checkpoint-action=exec=echo PWNED >&2"]
    for name in names:
        (world.project / name).write_text("")
    try:
        assert "PWNED" in world.bash("tar cf /dev/null *"), "real tar runs the option"
        for command in ("tar cf /dev/null *", "tar cf /dev/null ./* *", "rsync -a * /tmp/x"):
            _never_allowed(world, command)
    finally:
        for name in names:
            (world.project / name).unlink()


def test_ordinary_globs_stay_allowed(world: World) -> None:
    for command in ("cat *.txt", "wc -l src/*.py", "ls src/[ab].py", "cat a.tx?"):
        assert world.answers(command)["permissive"] is Action.ALLOW, command


# -- 3. arithmetic and integer contexts evaluate code -------------------------------------

ARITHMETIC = [
    "declare -a a=([v]=1)",
    "a+=([v]=1)",
    "f() { local -a x=([v]=1); }; f",
    "echo $[v]",
    "echo ${a[v]}",
    "printf -v 'a[v]' x",
    "read 'a[v]' < /dev/null",
    "test -v 'a[v]'",
    "[[ -v a[v] ]]",
    "x=1; declare -i x; x=v",
    "set -- a b; echo ${@:v}",
    "echo $((v))",
    "(( v ))",
    "let v",
    "[[ v -eq 1 ]]",
    # kept as plain text by the parser, inside another expansion:
    "echo ${x:-$[v]}",
    "x=a; echo ${x%%${a[v]}}",
    "echo \"${x:-'${a[v]}'}\"",
]


@needs_bash
@pytest.mark.parametrize("command", ARITHMETIC)
def test_arithmetic_on_a_variable_runs_code_and_is_never_allowed(
    world: World, command: str
) -> None:
    planted = f"v='x[$(echo PWNED >&2)]'; {command}"
    assert "PWNED" in world.bash(planted), "real bash runs the substitution in v's value"
    _never_allowed(world, command)  # v from the environment or an earlier command


def test_arithmetic_on_literals_is_not_floored(world: World) -> None:
    for command in ("echo $(( 1 + 2 ))", "x=5; echo $((x+1))", "declare -A m=([k]=1)"):
        assert analyze(command).floor is None, command


# -- 8. other users' homes cannot be placed ----------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["cat ~root/.bashrc", "ls ~nobody", "cd ~root && cat .profile", "cat ~root/.b*",
     "cp ~daemon/x .", "cat ~u/.ssh/id_rsa"],
)  # fmt: skip
def test_another_users_home_is_never_allowed(world: World, command: str) -> None:
    _never_allowed(world, command)


def test_another_users_home_through_a_file_tool_asks(world: World) -> None:
    for name, policy in world.policies.items():
        decision = policy.decide(Surface.READ, "~root/.bashrc", cwd=str(world.project))
        assert decision.action is not Action.ALLOW, (name, decision.reason)


# -- 9. literal consent stays literal -----------------------------------------------------


def _with_literal(policy: Policy, pattern: str) -> Policy:
    literal = Rule(
        surface=Surface.BASH,
        pattern=pattern,
        action=Action.ALLOW,
        origin=Origin.USER,
        rank=100,
        base_dir=policy.project_root,
    )
    return Policy(
        [*policy.rules.rules, literal],
        project_root=policy.project_root,
        default=policy.default,
        env=policy.env,
    )


@needs_bash
@pytest.mark.parametrize(
    "command, literal",
    [
        ("PATH=src:/usr/bin id", "id"),
        ("env PATH=src:/usr/bin id", "id"),
        ("LD_PRELOAD=./x.so true", "true"),
        ("BASH_ENV=src/id bash -c true", "true"),
    ],
)
def test_env_prefix_around_a_literal_rule_is_not_consented(
    world: World, command: str, literal: str
) -> None:
    planted = world.project / "src" / "id"
    planted.write_text("#!/bin/sh\necho PLANTED\n")
    planted.chmod(0o755)
    try:
        if "LD_PRELOAD" not in command:
            assert "PLANTED" in world.bash(command), "real bash runs the planted program"
        for name, policy in world.policies.items():
            widened = _with_literal(policy, literal)
            assert widened.decide(Surface.BASH, literal, cwd=str(world.project)).action is (
                Action.ALLOW
            )
            decision = widened.decide(Surface.BASH, command, cwd=str(world.project))
            assert decision.action is not Action.ALLOW, (name, command, decision.reason)
    finally:
        planted.unlink()


@pytest.mark.parametrize(
    "command",
    ["timeout 5 rm -rf ./build", "nice rm -rf ./build", "bash -c 'rm -rf ./build'",
     "env -u X rm -rf ./build", "command rm -rf ./build"],
)  # fmt: skip
def test_wrapper_around_a_literal_rule_does_not_speak_for_its_write(
    world: World, command: str
) -> None:
    # examples/policy.toml allows writes under src/ only: `./build` needs the literal rule.
    widened = _with_literal(world.policies["example"], "rm -rf ./build")
    literal = widened.decide(Surface.BASH, "rm -rf ./build", cwd=str(world.project))
    assert literal.action is Action.ALLOW, literal.reason
    wrapped = widened.decide(Surface.BASH, command, cwd=str(world.project))
    assert wrapped.action is not Action.ALLOW, (command, wrapped.reason)


# -- 10. the same answer everywhere: /proc paths of the deciding process -----------------

_DECIDE_ELSEWHERE = """
import json, sys
from askgate.policy.engine import Policy
from askgate.policy.model import Surface
config, project, env, path = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
policy = Policy.load(project, config_files=[config], env=env)
print(policy.decide(Surface.READ, path, cwd=project, tool="Read").action)
"""


def test_proc_self_path_gets_the_same_answer_in_any_deciding_process(world: World) -> None:
    """The daemon decides from `/`, a one-shot hook from the agent's directory: a path
    through /proc/self is ask in both, never the daemon's allow vs the hook's deny."""
    import json

    link = world.project / "here"
    if not link.is_symlink():
        link.symlink_to("/proc/self/cwd")
    config = str(REPO / "examples" / "policy.toml")
    paths = [
        "/proc/self/cwd/.env",
        str(link / ".env"),
        "/proc/thread-self/cwd/.env",
        f"/proc/{os.getpid()}/cwd/.env",
        "/proc/self/root" + str(world.project / ".env"),
    ]
    for path in paths:
        answers = set()
        for cwd in ("/", str(world.project)):
            result = subprocess.run(
                [sys.executable, "-c", _DECIDE_ELSEWHERE, config, str(world.project),
                 json.dumps(world.env), path],
                cwd=cwd, capture_output=True, text=True, check=True,
            )  # fmt: skip
            answers.add(result.stdout.strip())
        for name, policy in world.policies.items():
            decision = policy.decide(Surface.READ, path, cwd=str(world.project), tool="Read")
            answers.add(str(decision.action))
            assert decision.action is Action.ASK, (name, path, decision.reason)
        assert answers == {"ask"}, (path, answers)


def test_standard_streams_are_not_proc_paths(world: World) -> None:
    for command in ("echo hi > /dev/stderr", "cat /dev/stdin", "echo x > /dev/null"):
        assert world.answers(command)["permissive"] is Action.ALLOW, command


# -- 13. the project root is never ~, an ancestor of it, or / ----------------------------


def test_session_started_in_home_does_not_make_home_the_project(world: World) -> None:
    init = world.base / "init-policy.toml"
    assert project_root_of(str(world.home), world.env) == NO_PROJECT_ROOT
    assert project_root_of("/", world.env) == NO_PROJECT_ROOT
    in_home = Policy.load(str(world.home), config_files=[str(init)], env=world.env)
    # project-write allows `./**`: in a real project that is the project, never all of ~.
    bashrc = in_home.decide(Surface.WRITE, str(world.home / "notes.txt"), cwd=str(world.home))
    assert bashrc.action is not Action.ALLOW, bashrc.reason
    command = in_home.decide(Surface.BASH, "touch notes.txt", cwd=str(world.home))
    assert command.action is not Action.ALLOW, command.reason


def test_dotfiles_repository_in_home_is_not_the_project(world: World) -> None:
    (world.home / ".git").mkdir(exist_ok=True)
    plain = world.home / "plain"
    plain.mkdir(exist_ok=True)
    try:
        assert project_root_of(str(plain), world.env) == str(plain)
        assert project_root_of(str(world.project), world.env) == str(world.project)
        policy = Policy(
            [], project_root=str(world.home), default=Action.ALLOW, env=world.env
        )  # built directly, as a framework might: still nothing is inside
        decision = policy.decide(Surface.READ, str(world.home / ".bashrc"), cwd=str(plain))
        assert any(c.surface is Surface.EXTERNAL_DIRECTORY for c in decision.checks)
    finally:
        (world.home / ".git").rmdir()


def test_daemon_keeps_one_policy_per_bounded_root(world: World) -> None:
    """With a dotfiles repository in ~, `~/a` and `~/b` share find_project_root's answer
    (~) but are different projects: the daemon must not hand one the other's policy."""
    from askgate.daemon.server import PolicyCache

    (world.home / ".git").mkdir(exist_ok=True)
    first, second = world.home / "a", world.home / "b"
    first.mkdir(exist_ok=True)
    second.mkdir(exist_ok=True)
    try:
        cache = PolicyCache()
        config = [str(world.base / "init-policy.toml")]
        one = cache.load(str(first), config, None, world.env)
        two = cache.load(str(second), config, None, world.env)
        assert (one.project_root, two.project_root) == (str(first), str(second))
        decision = two.decide(Surface.WRITE, str(first / "x.py"), cwd=str(second))
        assert decision.action is not Action.ALLOW, decision.reason  # not inside ~/b
    finally:
        (world.home / ".git").rmdir()


# -- 14. a user's deny is final over project files ---------------------------------------


@pytest.mark.parametrize("trusted", [True, False])
def test_project_allow_does_not_lift_the_users_deny(
    tmp_path: Path, world: World, trusted: bool
) -> None:
    from askgate.policy.config import trust_project

    env = {**world.env, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data")}  # fmt: skip
    user = tmp_path / "config" / "askgate" / "policy.toml"
    user.parent.mkdir(parents=True)
    user.write_text('default = "ask"\n[read]\n"~/.ssh/**" = "deny"\n"~/notes/**" = "ask"\n')
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / ".askgate").mkdir()
    (project / ".askgate" / "policy.toml").write_text(
        'default = "allow"\n[read]\n"~/.ssh/config" = "allow"\n"~/.ssh/*.pub" = "allow"\n'
        '"~/notes/todo.md" = "allow"\n'
    )
    if trusted:
        trust_project(str(project), env)
    policy = Policy.load(str(project), env=env)
    for path in ("~/.ssh/config", "~/.ssh/id_rsa.pub", "~/.ssh/id_rsa"):
        decision = policy.decide(Surface.READ, path, cwd=str(project), tool="Read")
        assert decision.action is Action.DENY, (path, decision.reason)
        command = policy.decide(Surface.BASH, f"cat {path}", cwd=str(project))
        assert command.action is Action.DENY, (path, command.reason)
    # The user's ask is loosened by a trusted project's narrower allow (and only then).
    notes = policy.decide(Surface.READ, "~/notes/todo.md", cwd=str(project), tool="Read")
    assert notes.action is (Action.ALLOW if trusted else Action.ASK), notes.reason


# -- 15. `unset NAME` is not floored ------------------------------------------------------


@pytest.mark.parametrize("command", ["unset FOO", "unset -v FOO BAR", "unset -f myfunc"])
def test_unset_of_an_ordinary_name_is_not_floored(world: World, command: str) -> None:
    analysis = analyze(command)
    assert analysis.floor is None and all(u.floor is None for u in analysis.units), analysis
    assert world.answers(command)["permissive"] is Action.ALLOW


@pytest.mark.parametrize("command", ["unset PATH", "unset 'a[$i]'", "unset IFS"])
def test_unset_that_changes_what_runs_stays_floored(world: World, command: str) -> None:
    _never_allowed(world, command)
