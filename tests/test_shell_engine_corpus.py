"""Round-2 corpus (tests/data/bash_corpus.py ENGINE_CASES): the engine's final answer
under issue #7's permissive policy, in a sandbox home and project on the real
filesystem (the analysis stats files and the engine resolves symlinks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.builtin import load_builtin_rules
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin, Rule, Surface
from test_shell_corpus import corpus

ENGINE_CASES = corpus.ENGINE_CASES


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
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    home = tmp_path_factory.mktemp("sandbox") / "home" / "u"
    project = home / "proj"
    for directory in (home / ".ssh", project / "src", project / ".git" / "hooks"):
        directory.mkdir(parents=True)
    files = {
        home / ".ssh" / "id_rsa": "KEY",
        home / ".bashrc": "",
        project / ".env": "SECRET=1",
        project / "README.md": "# readme\n",
        project / "a.txt": "a\n",
        project / "b.txt": "b\n",
        project / "src" / "a.py": "print(1)\n",
        project / "src" / "b.py": "print(2)\n",
        project / ".git" / "config": "[core]\n",
    }
    for path, text in files.items():
        path.write_text(text)
    return home, project


def permissive_policy(home: Path, project: Path) -> Policy:
    """Issue #7's policy: only these denies (and floors) stop a command."""
    base = str(project)
    rules = [_rule("bash", "*", "allow", base)]
    rules += [
        _rule("bash", pattern, "deny", base)
        for pattern in ("rm -rf *", "curl *", "sudo *", "git push * --force*")
    ]
    rules += [_rule("read", p, "deny", base) for p in ("~/.ssh/**", "**/.env*")]
    rules += [_rule("write", p, "deny", base) for p in ("/etc/**", "~/.bashrc")]
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    # Built in: Policy.from_loaded adds these to every policy (policy/builtin/rules/).
    rules += [r for f in load_builtin_rules(base_dir=base, env=env) for r in f.rules]
    return Policy(rules, project_root=base, default=Action.ALLOW, env=env)


def _id(case: object) -> str:
    command = repr(case.command)  # type: ignore[attr-defined]
    return command if len(command) <= 60 else command[:57] + "..."


def test_engine_corpus_covers_every_class() -> None:
    assert len(ENGINE_CASES) >= 40
    assert len({case.command for case in ENGINE_CASES}) == len(ENGINE_CASES)


@pytest.mark.parametrize("case", ENGINE_CASES, ids=_id)
def test_engine_corpus_case(sandbox: tuple[Path, Path], case: corpus.E) -> None:  # type: ignore[name-defined]
    home, project = sandbox
    decision = permissive_policy(home, project).decide(Surface.BASH, case.command, cwd=str(project))
    got = decision.action
    if case.expect == "blocked":
        assert got is not Action.ALLOW, (case.command, decision.reason)
    else:
        assert got is Action(case.expect), (case.command, decision.reason)
