"""Compiled regexes kept between one-shot hook processes (askgate.regex_cache): a
program is reused only when it is what Python itself would compile, and only from a file
this user alone could have written."""

from __future__ import annotations

import json
import marshal
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from askgate import regex_cache
from hook_env import one_shot_hook_env

POLICY = """
default = "ask"
[bash]
"git status *" = "allow"
"rm *" = { action = "deny", reason = "no deleting" }
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return one_shot_hook_env(tmp_path, POLICY)


def cache_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_STATE_HOME"]) / "askgate" / regex_cache.FILE_NAME


def hook(env: dict[str, str], command: str, **extra: str) -> subprocess.CompletedProcess[bytes]:
    body = {
        "session_id": "s1",
        "cwd": str(Path(env["HOME"]).parent / "project"),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "toolu_1",
    }
    return subprocess.run(
        [sys.executable, "-m", "askgate", "hook", "claude-code"],
        input=json.dumps(body).encode(),
        capture_output=True,
        env={**env, **extra},
        timeout=60,
    )


@pytest.fixture
def installed(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The cache installed in this process, undone afterwards (with re's own cache)."""
    import re._compiler

    python_compile = regex_cache._python_compile or re._compiler.compile
    monkeypatch.setattr(re._compiler, "compile", python_compile)
    monkeypatch.setattr(regex_cache, "_state", regex_cache._State())
    re.purge()
    regex_cache.install(env)
    assert re._compiler.compile is regex_cache._compile
    yield
    re.purge()


def test_every_cached_program_is_what_python_compiles(env: dict[str, str]) -> None:
    """Run real hook processes, then check each program in the file: compiled, it equals
    Python's own compile of the same pattern (Pattern equality compares the code)."""
    import _sre

    commands = ("git status", "rm -rf build", "perl -e 'system(1)'", "cd x && psql -c '\\!'")
    first = [hook(env, c) for c in commands]
    stored = marshal.loads(cache_file(env).read_bytes())
    assert stored[0] == regex_cache._identity()
    table = stored[1]
    assert len(table) >= 20
    for (kind, pattern, flags), program in table.items():
        assert kind == type(pattern).__name__
        assert _sre.compile(pattern, *program) == re.compile(pattern, flags), pattern
    again = [hook(env, c) for c in commands]  # from the file this time
    off = [hook(env, c, ASKGATE_HOOK_CACHE="off") for c in commands]
    for a, b, c in zip(first, again, off, strict=True):
        assert a.returncode == b.returncode == c.returncode == 0
        assert a.stdout == b.stdout == c.stdout


def test_the_file_is_private(env: dict[str, str]) -> None:
    hook(env, "git status")
    assert cache_file(env).stat().st_mode & 0o777 == 0o600
    assert cache_file(env).parent.stat().st_mode & 0o777 == 0o700


def _forge(env: dict[str, str], pattern: str, program_of: str) -> None:
    """A cache file claiming that `pattern` compiles to `program_of`'s program."""
    path = cache_file(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    table = {("str", pattern, 0): regex_cache._program_of(program_of, 0)}
    path.write_bytes(marshal.dumps((regex_cache._identity(), table)))
    path.chmod(0o600)


def test_control_a_private_file_is_believed(env: dict[str, str], installed: None) -> None:
    """The control for the tests below: a private file is used as it is (it has the
    standing of the policy cache next to it), so they can tell when it was not."""
    _forge(env, "cat", "dog")
    assert re.compile("cat").fullmatch("dog")


@pytest.mark.parametrize("mode", [0o666, 0o620])
def test_a_file_others_can_write_is_ignored(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    _forge(env, "cat", "dog")
    cache_file(env).chmod(mode)
    import re._compiler

    python_compile = regex_cache._python_compile or re._compiler.compile
    with monkeypatch.context() as patch:
        patch.setattr(re._compiler, "compile", python_compile)
        patch.setattr(regex_cache, "_state", regex_cache._State())
        re.purge()
        regex_cache.install(env)
        assert re._compiler.compile is regex_cache._compile
        assert re.compile("cat").fullmatch("cat")
        assert not re.compile("cat").fullmatch("dog")
    assert re._compiler.compile is python_compile
    re.purge()


def test_installing_twice_keeps_pythons_compile(env: dict[str, str], installed: None) -> None:
    """A second install (another hook entry in the same process) must not wrap the
    cache around itself."""
    regex_cache.install(env)
    assert regex_cache._python_compile is not regex_cache._compile
    re.purge()
    assert re.compile("d(o)g").match("dog").group(1) == "o"


def test_another_pythons_programs_are_ignored(env: dict[str, str], installed: None) -> None:
    path = cache_file(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    table = {("str", "cat", 0): regex_cache._program_of("dog", 0)}
    identity = (regex_cache.FORMAT, "2.7.18", *regex_cache._identity()[2:])
    path.write_bytes(marshal.dumps((identity, table)))
    path.chmod(0o600)
    assert re.compile("cat").fullmatch("cat")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00garbage",
        marshal.dumps(("not", "it")),
        marshal.dumps((regex_cache._identity(), {("str", "cat", 0): (0, [99999], 0, {}, ())})),
        marshal.dumps((regex_cache._identity(), {("str", "cat", 0): "not a program"})),
    ],
    ids=["empty", "garbage", "other-shape", "invalid-code", "wrong-entry"],
)
def test_a_corrupt_file_falls_back_to_pythons_compile(
    env: dict[str, str], installed: None, data: bytes
) -> None:
    path = cache_file(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(data)
    path.chmod(0o600)
    assert re.compile("cat").fullmatch("cat")
    assert re.compile("c(?P<x>a)t").match("cat").group("x") == "a"
    with pytest.raises(re.error):
        re.compile("(unclosed")


def test_a_corrupt_file_still_decides_every_hook_call(env: dict[str, str]) -> None:
    path = cache_file(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(b"\xff" * 100)
    path.chmod(0o600)
    for command, decision in (("git status", "allow"), ("rm -rf x", "deny")):
        done = hook(env, command)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == decision
    marshal.loads(path.read_bytes())  # rewritten whole


@pytest.mark.parametrize(
    ("agent", "body", "expected"),
    [
        (
            "codex",
            {"hook_event_name": "PreToolUse", "tool_name": "Bash", "turn_id": "t"},
            b'"permissionDecision":"deny"',
        ),
        (
            "gemini",
            {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command"},
            b'"decision":"deny"',
        ),
    ],
)
def test_codex_and_gemini_hooks_are_readied_the_same_way(
    env: dict[str, str], agent: str, body: dict[str, str], expected: bytes
) -> None:
    """Their hooks always decide in-process: readied before their adapter loads, with
    the same answers as with the caches off."""
    payload = {
        "session_id": "s1",
        "cwd": str(Path(env["HOME"]).parent / "project"),
        "tool_input": {"command": "rm -rf build"},
        "tool_use_id": "call_1",
        **body,
    }

    def run(**extra: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "askgate", "hook", agent],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env={**env, **extra},
            timeout=60,
        )

    off = run(ASKGATE_HOOK_CACHE="off")
    assert not cache_file(env).exists()
    first, second = run(), run()
    assert cache_file(env).exists()
    assert off.returncode == first.returncode == second.returncode
    assert off.stdout == first.stdout == second.stdout
    assert expected in off.stdout and b"no deleting" in off.stdout
