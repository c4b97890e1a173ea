"""Needless asks the shell analysis produced on real agent traffic (issue 21), removed in
code, each with its harmful variants (issue 22 stays closed): the final answer under the
`init` policy (sandbox off and on), a permissive policy and `examples/policy.toml`."""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.model import Action
from bash_world import World

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
