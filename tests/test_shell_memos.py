"""The analyser's process-wide memos (plain commands' units by their text as written,
plain words' run-time reasons) never change an answer: every corpus command analyses the
same with cold memos as after the whole corpus has warmed them, where the same plain
text recurs in other places (after a cd, inside `bash -c`, over ssh, in a pipeline,
under a floor, next to redirects and descriptors, in a tree that does not parse)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from askgate.policy.model import Action, ShellAnalysis
from askgate.policy.shell import analyze, base, commands
from data_modules import load_data_module
from test_shell_engine_corpus import permissive_policy

_corpus = load_data_module("bash_corpus")

# The same plain commands in places that change their units (cwd, frame, remote).
_CONTEXTS = (
    "ls docs",
    "cd /etc && ls docs",
    "cd src; cd /nonexistent-askgate; ls docs",
    "bash -c 'ls docs'",
    "ssh host ls docs",
    "cat README.md | ls docs",
    "eval ls docs",
    "cd $UNKNOWN_DIR && cat a.txt",
    "cat a.txt",
    "git status",
    "git -C /etc status",
    "(cd /etc && git status)",
    "for f in 1 2; do git status; done",
    "/usr/bin/ls docs",
    "./tool run --fast",
    "tool7 run --fast",
    "cat $PWD/a.txt",
    "cd src && cat $PWD/a.txt",
    "cat /proc/self/cwd/a.txt",
    "diff <(sort a.txt) <(sort b.txt)",
    "cat a.txt 2",
    "cat a.txt 2>/etc/hosts",
    "cat a.txt 2</etc/hosts",
    "{ cat a.txt; } > /etc/hosts",
    "cat a.txt > /etc/hosts",
    "if true; then cat a.txt; fi",
    "if true; then cat a.txt; f",
    "cat a.txt &",
    "x=1 cat a.txt",
    "cat a.txt <<< x",
)


def _commands() -> list[str]:
    found = [case.command for case in _corpus.CASES]
    found += [case.command for case in _corpus.ENGINE_CASES]
    found += list(_CONTEXTS)
    return list(dict.fromkeys(c for c in found if isinstance(c, str)))


@pytest.fixture
def cold_memos() -> Iterator[None]:
    _clear()
    yield
    _clear()


def _clear() -> None:
    commands._FUSED_COMMANDS.clear()
    base._PLAIN_WORD_DYNAMIC.clear()


def _analyse(command: str, cwd: str) -> ShellAnalysis:
    return analyze(command, cwd=cwd, home=cwd)


def test_warm_memos_give_the_cold_answers(cold_memos: None, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "docs").mkdir()
    cwd = str(tmp_path)
    every = _commands()
    cold: dict[str, ShellAnalysis] = {}
    for command in every:
        _clear()
        cold[command] = _analyse(command, cwd)
    for command in every:  # warm everything, then ask again in reverse order
        _analyse(command, cwd)
    assert commands._FUSED_COMMANDS  # the memo was used
    differing = [c for c in reversed(every) if _analyse(c, cwd) != cold[c]]
    assert differing == []


def test_a_memoised_unit_still_takes_its_place(cold_memos: None, tmp_path: Path) -> None:
    """The memo holds the words' part only: the cwd, the frame's floor and remote-ness
    come from where the command stands each time."""
    (tmp_path / "src").mkdir()
    cwd = str(tmp_path)
    first = _analyse("cat a.txt", cwd).units[0]
    assert first.reads == ("a.txt",) and first.cwd is None and first.floor is None
    moved = _analyse("cd src && cat a.txt", cwd).units[-1]
    assert moved.cwd == "src" and moved.reads == ("a.txt",)
    remote = _analyse("ssh host cat a.txt", cwd).units[-1]
    assert remote.reads == ()
    unknown = _analyse("cd $X && cat a.txt", cwd).units[-1]
    assert unknown.floor is not None and "relative path" in (unknown.floor_reason or "")


# --- the engine's memo of unit verdicts that looked at no file ---------------------------


def _sandbox(root: Path) -> tuple[Path, Path]:
    home = root / "home"
    project = home / "proj"
    for directory in (home / ".ssh", project / "src"):
        directory.mkdir(parents=True)
    for path in (home / ".ssh" / "id_rsa", project / ".env", project / "a.txt"):
        path.write_text("x\n")
    return home, project


def test_warm_unit_verdicts_give_the_cold_answers(cold_memos: None, tmp_path: Path) -> None:
    """Every engine corpus command: the same decision from a fresh policy as from one
    that has decided the whole corpus (and the analysis memos warm)."""
    home, project = _sandbox(tmp_path)
    every = [case.command for case in _corpus.ENGINE_CASES] + list(_CONTEXTS)
    cwd = str(project)
    cold = {}
    for command in every:
        _clear()
        cold[command] = permissive_policy(home, project).decide("bash", command, cwd=cwd)
    warm = permissive_policy(home, project)
    for command in every:
        warm.decide("bash", command, cwd=cwd)
    assert warm._unit_decisions  # the memo was used
    differing = [c for c in reversed(every) if warm.decide("bash", c, cwd=cwd) != cold[c]]
    assert differing == []


def test_a_verdict_that_looked_at_files_is_not_remembered(tmp_path: Path) -> None:
    """`tool7 run secret.txt`: the bare word is a path only if that file exists, so the
    same unit is allowed before the file is made and denied after."""
    home, project = _sandbox(tmp_path)
    policy = permissive_policy(home, project)
    cwd = str(project)
    command = "tool7 run .env.local && tool7 run status"
    assert policy.decide("bash", command, cwd=cwd).action is Action.ALLOW
    (project / ".env.local").write_text("SECRET=2\n")
    assert policy.decide("bash", command, cwd=cwd).action is Action.DENY
    (project / ".env.local").unlink()
    assert policy.decide("bash", command, cwd=cwd).action is Action.ALLOW
