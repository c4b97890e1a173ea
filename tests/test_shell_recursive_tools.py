"""Recursive readers among the tools (issue #7, principle 8): Glob/Grep (Claude Code) and
grep/find/ls (pi) read a directory with everything below it, and Glob's `pattern` can
name a directory of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.tools import target_for


def _rule(surface: str, pattern: str, action: str, base: str) -> Rule:
    return Rule(
        surface=Surface(surface),
        pattern=pattern,
        action=Action(action),
        origin=Origin.USER,
        rank=100,
        base_dir=base,
    )


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Policy, Path, Path]:
    home = tmp_path / "home"
    project = home / "proj"
    (home / ".ssh").mkdir(parents=True)
    (project / "src").mkdir(parents=True)
    rules = [
        _rule("read", "/**", "allow", str(project)),
        _rule("read", "~/.ssh/**", "deny", str(project)),
        _rule("read", "**/.env*", "deny", str(project)),
        _rule("external_directory", "/**", "allow", str(project)),
    ]
    policy = Policy(rules, project_root=str(project), default=Action.ALLOW,
                    env={"HOME": str(home)})  # fmt: skip
    return policy, home, project


def _decide(policy: Policy, tool: str, tool_input: dict[str, str], cwd: Path) -> Action:
    target = target_for(tool, tool_input, str(cwd))
    return policy.decide(target.surface, target.value, cwd=str(cwd), tool=tool).action


@pytest.mark.parametrize("tool", ["Glob", "Grep", "grep", "find"])
def test_a_search_of_the_home_directory_asks(setup, tool: str) -> None:
    policy, home, project = setup
    action = _decide(policy, tool, {"path": str(home), "pattern": "**/id_rsa"}, project)
    assert action is Action.ASK


def test_a_project_search_is_allowed_despite_an_anywhere_pattern(setup) -> None:
    policy, _, project = setup
    assert _decide(policy, "Grep", {"pattern": "TODO"}, project) is Action.ALLOW
    assert _decide(policy, "Glob", {"pattern": "**/*.py"}, project) is Action.ALLOW


def test_a_glob_pattern_naming_another_directory_is_that_directory(setup) -> None:
    policy, home, project = setup
    assert _decide(policy, "Glob", {"pattern": "~/.ssh/*"}, project) is Action.DENY
    assert _decide(policy, "Glob", {"pattern": f"{home}/*"}, project) is Action.ASK
    assert _decide(policy, "Glob", {"pattern": "../*", "path": str(project)}, project) in (
        Action.ASK,
        Action.DENY,
    )


def test_a_single_file_read_or_a_listing_is_not_recursive(setup) -> None:
    policy, home, project = setup
    assert _decide(policy, "ls", {"path": str(home)}, project) is Action.ALLOW
    assert _decide(policy, "Read", {"file_path": str(home / "notes.txt")}, project) is (
        Action.ALLOW
    )
