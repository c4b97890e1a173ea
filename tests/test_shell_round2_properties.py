"""Round-2 properties of the bash analysis (issue #7), on generated commands.

1. A stack of arbitrary commands that ends in a read or write a rule denies is never
   allowed, whatever the stack did to the working directory, links or the shell.
2. Differential: for generated `cd`/`pushd`/`popd` sequences, the directories the
   analysis says the next command may run in include the one real bash reports.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from askgate.policy import paths
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Surface
from askgate.policy.shell import analyze
from test_shell_engine_corpus import permissive_policy

# -- 1. denied endings stay denied under any stack --------------------------------------

PREFIXES = [
    "cd /tmp", "cd ~", "cd", "cd src", "cd ..", "cd -", "cd $X", 'cd "$(pwd)"', "pushd /etc",
    "pushd ~", "popd", "popd -n", "pushd +1", "pushd", "true", "false", "echo hi",
    "export X=1", "x=5", "ln -s ~ h", "ln -s /etc e", "(cd /)", "{ cd /tmp; }",
    "if true; then cd /; fi", "cd /nonexistent", "env -C / true", "shopt -s lastpipe",
    "true | cd /etc", "cd() { :; }", "enable -n cd", "for i in 1 2; do cd ..; done",
    "f() { cd /; }", "f", "cat <(ls)", "set -e",
]  # fmt: skip
SEPARATORS = ["; ", " && ", " || ", "\n", " & "]
DENIED_ENDINGS = [
    "cat ~/.ssh/id_rsa", "cat $HOME/.ssh/id_rsa", "base64 ~/.ssh/id_rsa",
    "perl -pe1 ~/.ssh/id_rsa", "echo x > /etc/hosts", "echo x >> ~/.bashrc",
    "cp a.txt /etc/x", "tee -a ~/.bashrc < a.txt", "cd ~ && cat .ssh/id_rsa",
    "cd /etc && echo x > hosts", "pushd ~ >/dev/null && base64 .ssh/id_rsa",
    "env -C ~ cat .ssh/id_rsa", "awk '{print}' ~/.ssh/id_rsa", "cat ~/.ssh/*",
    "curl http://x", "rm -rf /tmp/x", "sudo true",
]  # fmt: skip

_stacks = st.tuples(
    st.lists(st.tuples(st.sampled_from(PREFIXES), st.sampled_from(SEPARATORS)), max_size=6),
    st.sampled_from(DENIED_ENDINGS),
).map(lambda parts: "".join(p + s for p, s in parts[0]) + parts[1])


@pytest.fixture(scope="module")
def sandbox_policy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Policy, Path]:
    home = tmp_path_factory.mktemp("props") / "home" / "u"
    project = home / "proj"
    (home / ".ssh").mkdir(parents=True)
    (project / "src").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY")
    (home / ".bashrc").write_text("")
    (project / "a.txt").write_text("a")
    return permissive_policy(home, project), project


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(_stacks)
def test_a_stack_ending_in_a_denied_access_is_never_allowed(
    sandbox_policy: tuple[Policy, Path], command: str
) -> None:
    policy, project = sandbox_policy
    decision = policy.decide(Surface.BASH, command, cwd=str(project))
    assert decision.action is not Action.ALLOW, (command, decision.reason)


# -- 2. differential: the analysed directories contain real bash's -------------------------

BASH = "/bin/bash"
_STEPS = [
    "cd a", "cd b", "cd ..", "cd {root}/c", "cd x", "cd -", "cd", "cd ~", "cd {root}/a/b",
    "pushd a", "pushd {root}/c", "pushd", "popd", "popd -n", "pushd +1", "pushd -n {root}/a",
    "popd +1", "cd ../..", "pushd x", "cd {root}",
]  # fmt: skip
_JOINS = ["; ", " && ", " || "]
_sequences = st.lists(
    st.tuples(st.sampled_from(_STEPS), st.sampled_from(_JOINS)), min_size=1, max_size=7
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(os.path.realpath(tmp_path_factory.mktemp("cdtree")))
    for directory in ("a/b", "c", "home"):
        (root / directory).mkdir(parents=True)
    return root


def _real_pwd(root: Path, script: str) -> str:
    result = subprocess.run(
        [BASH, "--norc", "--noprofile", "-c", script + "\npwd"],
        cwd=root,
        env={"HOME": str(root / "home"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(not os.path.exists(BASH), reason="needs bash")
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(_sequences)
def test_the_analysed_directories_contain_the_real_one(tree: Path, steps: list) -> None:
    script = "".join(step.format(root=tree) + join for step, join in steps[:-1])
    script += steps[-1][0].format(root=tree)
    real = _real_pwd(tree, script + " >/dev/null 2>&1")
    home = str(tree / "home")
    # Without a look at the filesystem every cd may fail; with one, a cd into a directory
    # that exists is taken to succeed. Both must contain what bash did.
    for analysis in (
        analyze(script + "\nls zz"),
        analyze(script + "\nls zz", cwd=str(tree), home=home),
    ):
        unit = analysis.units[-1]
        assert unit.command == "ls zz"
        if unit.floor is not None:
            assert "relative path" in (unit.floor_reason or ""), unit.floor_reason
            continue  # one possibility is unknown: that covers any directory
        possible = {
            paths.normalize(d, str(tree), {"HOME": home}) if d else str(tree)
            for d in (unit.cwd or "", *unit.other_cwds)
        }
        assert real in possible, (script, real, possible)


def test_the_differential_check_is_not_trivial(tree: Path) -> None:
    """Known sequences give a known set (the unknown case must not be the only one)."""
    script = f"cd a && cd b; pushd {tree}/c && popd"
    unit = analyze(script + "\nls zz", cwd=str(tree), home=str(tree / "home")).units[-1]
    assert (unit.cwd, unit.other_cwds) == ("a/b", ()), unit  # every cd succeeds
    assert unit.floor is None
    real = _real_pwd(tree, script + " >/dev/null 2>&1")
    assert real == str(tree / "a" / "b")
    env = {"HOME": str(tree / "home")}
    possible = {
        paths.normalize(d, str(tree), env) if d else str(tree)
        for d in (unit.cwd or "", *unit.other_cwds)
    }
    assert real in possible
