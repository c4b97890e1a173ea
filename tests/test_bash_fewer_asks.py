"""Needless asks the shell analysis produced on real agent traffic (issue 21), removed in
code, each with its harmful variants (issue 22 stays closed): the final answer under the
`init` policy (sandbox off and on), a permissive policy and `examples/policy.toml`."""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.model import Action
from bash_world import BASH, ENV_SECRET, World

needs_bash = pytest.mark.skipif(BASH is None, reason="needs bash")

POLICIES = ("init-off", "init-on", "permissive", "example")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(Path(tmp_path_factory.mktemp("fewer-asks")), policies=POLICIES)


# -- 1. a harmless setting behind env, timeout, nice, nohup -------------------------------

SETTINGS_THROUGH_WRAPPERS = [
    "PYTHONPATH=src timeout 60 pytest",
    "timeout 60 env PYTHONPATH=src pytest",
    "env -u X FOO=bar pytest",
    "nohup env PYTHONPATH=src:. pytest -q",
    "GIT_PAGER=cat timeout 5 git log --oneline -3",
    "timeout 5 env GIT_PAGER=cat git log --oneline -3",
]
HARMFUL_SETTINGS_THROUGH_WRAPPERS = [
    "timeout 5 env LD_PRELOAD=./x.so ls",
    "env BASH_ENV=./x bash -c true",
    "timeout 5 env BASH_ENV=./x bash -c true",
    "PYTHONPATH=~/.ssh python -m app",
    "timeout 5 env PYTHONPATH=~/.ssh python -m app",
    "timeout 5 env PYTHONPATH=/tmp/evil pytest",
    "env PYTHONPATH=../other timeout 5 pytest",
    "env PYTHONPATH=src timeout 5 pip list",
    "PYTHONPATH=src timeout 5 bash -c pytest",
    "env -C /tmp PYTHONPATH=src pytest",
    "PYTHONPATH=src env -C /tmp pytest",
    "env PYTHONPATH=$X pytest",
    "timeout 5 env PAGER=less git log",
    "timeout 5 env 'GIT_PAGER=sh -c id' git log",
    "env PYTHONPATH=src env -S 'pytest -q'",
]


@pytest.mark.parametrize("command", SETTINGS_THROUGH_WRAPPERS)
def test_a_harmless_setting_through_a_wrapper_is_allowed_like_the_prefix(
    world: World, command: str
) -> None:
    got = world.answers(command)
    assert got["init-off"] is Action.ALLOW and got["init-on"] is Action.ALLOW, (command, got)
    assert got["permissive"] is Action.ALLOW, (command, got)


@pytest.mark.parametrize("command", HARMFUL_SETTINGS_THROUGH_WRAPPERS)
def test_a_harmful_setting_through_a_wrapper_is_not_allowed(world: World, command: str) -> None:
    world.not_allowed(command)


# -- 3. export of a harmless setting ------------------------------------------------------

HARMLESS_EXPORTS = [
    "export PAGER=cat",
    "export GIT_PAGER=cat",
    "export CI=1",
    "export TERM=dumb",
    "export PAGER=cat GIT_PAGER=cat CI=1",
    "export GIT_PAGER=cat && git log -3",
    "builtin export PAGER=",
]
HARMFUL_EXPORTS = [
    "export LD_PRELOAD=./x.so",
    "export PATH=./bin:$PATH",
    "export BASH_ENV=./x",
    "export PAGER=less",
    "export PAGER=$X",
    "export PAGER+=cat",
    "export 'PAGER=sh -c id'",
    "export PAGER",
    "export PYTHONPATH=src",  # harmless only right before Python
    "export GIT_PAGER=cat LD_PRELOAD=./x.so",
]


@pytest.mark.parametrize("command", HARMLESS_EXPORTS)
def test_export_of_a_harmless_setting_is_allowed(world: World, command: str) -> None:
    got = world.answers(command)
    assert got["init-off"] is Action.ALLOW and got["permissive"] is Action.ALLOW, (command, got)


@pytest.mark.parametrize("command", HARMFUL_EXPORTS)
def test_export_of_a_harmful_setting_is_not_allowed(world: World, command: str) -> None:
    world.not_allowed(command)


# -- 4. ruby inline code reading a literal name -------------------------------------------

RUBY_LITERAL_READS = [
    "ruby -e 'puts File.read(\"README.md\")'",
    "ruby -e 'puts File.read \"x.json\"'",
    "ruby -e 'puts File.readlines(\"x.json\").size'",
    "ruby -e 'File.foreach(\"x.json\") { |l| puts l }'",
]
RUBY_SECRET_OR_BUILT_NAMES = [
    "ruby -e 'puts File.read(\".env\")'",
    "ruby -e 'puts File.read(\"./.env\")'",
    "ruby -e 'puts File.read \".env\"'",
    'ruby -e \'puts File.read(".e"+"nv")\'',
    'ruby -e \'puts File.read ".e" + "nv"\'',
    'ruby -e \'x=".e"+"nv"; puts File.read("#{x}")\'',
    "ruby -e 'puts File.read(\"#{Dir.home}/.ssh/id_rsa\")'",
    "ruby -e 'puts File.read(x)'",
    "ruby -e 'puts File.read(\"x.json\"); puts File.read(ARGV[0])' .env",
    "ruby -e 'puts File.readlines x'",
    "ruby -e 'puts IO.read(\"|cat .env\")'",
    "ruby -e 'puts IO.readlines(\"| id\")'",
    "ruby -e 'puts Dir[\".e*\"].map { |f| File.read(f) }'",
]


@pytest.mark.parametrize("command", RUBY_LITERAL_READS)
def test_ruby_reading_a_literal_project_file_is_decided_as_a_read(
    world: World, command: str
) -> None:
    got = world.answers(command)
    assert got["permissive"] is Action.ALLOW and got["init-on"] is Action.ALLOW, (command, got)


@pytest.mark.parametrize("command", RUBY_SECRET_OR_BUILT_NAMES)
def test_ruby_reading_a_secret_or_a_built_name_is_not_allowed(world: World, command: str) -> None:
    world.not_allowed(command)


def test_ruby_reading_a_literal_secret_is_denied(world: World) -> None:
    got = world.answers("ruby -e 'puts File.read(\".env\")'")
    assert all(action is Action.DENY for action in got.values()), got


# -- 5. sed's r, R, w, W and s///w: the read or write they are --------------------------

SED_FILE_COMMANDS = [
    ("sed '1r x.json' src/app.py", "permissive"),
    ("sed -e '1r x.json' -e '2R x.json' src/app.py", "permissive"),
    ("sed -i '1r x.json' src/app.py", "init-off"),
    ("sed -n '/x/w /dev/stdout' src/app.py", "init-off"),
    ("sed -n '1w out.txt' src/app.py", "init-off"),
    ("sed 's/a/b/w out.txt' src/app.py", "permissive"),
]
SED_HARMFUL_FILES = [
    "sed '1r .env' src/app.py",
    "sed '1r ./.env' src/app.py",
    "sed -e 1p -e '2R .env' src/app.py",
    "sed -e '/x/{r .env' -e '}' src/app.py",
    "sed -i '1r ~/.ssh/id_rsa' src/app.py",  # (sed reads ./~/…: asking is conservative)
    "sed -n '1w .git/hooks/pre-commit' src/app.py",
    "sed -n 's/a/b/w CLAUDE.md' src/app.py",
    "sed -n '1w ../.bashrc' src/app.py",  # ~/.bashrc
    "sed -n 'w /etc/passwd' src/app.py",  # outside the working directory: a question
    "sed 's/a/b/w /tmp/o' src/app.py",
    "sed '1e cat .env' src/app.py",
    "sed 's/a/cat .env/e' src/app.py",
    "sed '1r' src/app.py",
    "sed '1r a\\b' src/app.py",
]


@pytest.mark.parametrize(("command", "policy"), SED_FILE_COMMANDS)
def test_sed_reading_or_writing_a_named_project_file_is_allowed(
    world: World, command: str, policy: str
) -> None:
    assert world.answers(command)[policy] is Action.ALLOW, command


@pytest.mark.parametrize("command", SED_HARMFUL_FILES)
def test_sed_reading_a_secret_or_writing_a_protected_file_is_not_allowed(
    world: World, command: str
) -> None:
    world.not_allowed(command)


def test_sed_reads_its_r_file_to_the_end_of_the_line() -> None:
    from askgate.policy.shell.sedscript import script_files

    assert script_files("1r a;p") == (False, ["a;p"], [])
    assert script_files("1r a\n2w b\ns/x/y/w c") == (False, ["a"], ["b", "c"])
    assert script_files("1e id")[0] and script_files("s/a/b/e")[0]


@needs_bash
def test_sed_r_really_reads_the_file_and_w_really_writes_it(world: World) -> None:
    assert ENV_SECRET in world.bash("sed '1r .env' src/app.py")
    assert world.bash("sed -n '1w w.txt' src/app.py; cat w.txt") == "print('hi')\n"
    # The name runs to the end of the line and is not globbed or tilde-expanded.
    assert ENV_SECRET not in world.bash("sed '1r .e*' src/app.py; sed '1r .env;p' src/app.py")


# -- 2. command substitutions whose output is known --------------------------------------

KNOWN_OUTPUTS = [
    ("ls $(pwd)/src", "init-off"),
    ('ls "$(pwd)/src"', "init-off"),
    ("ls `pwd`/src", "init-off"),
    ("cat $(pwd)/x.json", "init-off"),
    ("echo $(date)", "init-off"),
    ("echo $(date +%s)", "init-off"),
    ("pytest -n $(nproc)", "init-off"),
    ('pytest -n "$(nproc)"', "init-off"),
    ("sleep $(date '+%S')", "init-off"),
    ("sleep $(nproc)", "init-off"),
    ("basename $(pwd)", "init-off"),  # basename and dirname open no file (names.toml)
    ('basename "$PWD"', "init-off"),
    ("dirname src/app.py", "init-off"),
    ("make -j$(nproc)", "init-on"),
    ("make --jobs=$(nproc)", "init-on"),
]
UNKNOWN_OR_HARMFUL_OUTPUTS = [
    "cat $(pwd)/.env",
    "rm -rf $(pwd)",  # what it writes is named by a substitution: a question, as before
    "cp x.json $(pwd)/y",
    "touch $(date +%s)",  # digits as a file name: the write is not seen
    "sort -o$(nproc) x.json",
    "sort --output=$(nproc) x.json",
    'cat "$(pwd)"/.e*',
    "cd src && cat $(pwd)/../.env",
    "cat $(pwd)/../.ssh/id_rsa",
    "cat `pwd`/../.ssh/id_rsa",
    "cat $(date +/proc/self/environ)",  # a format prints any text
    "cat $(date +../.ssh/id_rsa)",
    "cat .env$(date +)",  # an empty format prints nothing
    "cat .e$(nproc)",
    "cat $(nproc)/../.env",
    "ls $(pwd x)",
    "basename --unknown-option .env",  # an option the spec does not name: unknown role
    "ls $(pwd; cat .env)",
    "ls $(pwd)$(cat .env)",
    "ls x$(pwd)",
    "ls $(cat list)",
    "ls $(git rev-parse --show-toplevel)/../.ssh",
    "ls $(which python)",
    "python3 $(nproc)",
    "bash -c $(nproc)",
    "$(nproc)",
]


@pytest.mark.parametrize(("command", "policy"), KNOWN_OUTPUTS)
def test_a_known_harmless_substitution_is_not_a_question(
    world: World, command: str, policy: str
) -> None:
    assert world.answers(command)[policy] is Action.ALLOW, command


@pytest.mark.parametrize("command", UNKNOWN_OR_HARMFUL_OUTPUTS)
def test_any_other_substitution_keeps_its_question(world: World, command: str) -> None:
    world.not_allowed(command)


@needs_bash
def test_pwd_substitution_is_pwd_and_date_formats_print_any_text(world: World) -> None:
    assert ENV_SECRET in world.bash("cd src && cat $(pwd)/../.env")
    assert world.bash("cd src && echo $(pwd)") == world.bash("cd src && echo $PWD")
    assert world.bash("echo $(date +../.ssh/id_rsa)") == "../.ssh/id_rsa\n"
    assert ENV_SECRET in world.bash("cat .env$(date +)")
    assert world.bash("echo $(date +%s)$(nproc)").strip().isdigit()
