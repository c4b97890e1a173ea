"""askgate.session: the pattern "Yes, for this session" approves, and the approvals held."""

from __future__ import annotations

import pytest

from askgate.policy.model import Surface
from askgate.session import (
    BANNED_PREFIXES,
    SessionApprovals,
    suggest_bash_pattern,
    suggest_pattern,
)


@pytest.mark.parametrize(
    ("command", "pattern"),
    [
        ("git status --short", "git status *"),  # git's subcommand is part of the command
        ("/usr/bin/git status", "git status *"),  # the program by its name, not its path
        ("npm run build --watch", "npm run build *"),  # the longest known prefix wins
        ("make test", "make *"),
        ("ls", "ls"),  # nothing to widen: exactly what was asked
        ("git status", "git status *"),  # `git status` and its options
        ("git", "git"),
    ],
)
def test_bash_patterns_follow_the_command_arity(command: str, pattern: str) -> None:
    assert suggest_bash_pattern(command) == pattern
    assert suggest_pattern(Surface.BASH, command) == pattern


@pytest.mark.parametrize(
    "command",
    [
        "bash -c 'rm -rf /'",  # would approve arbitrary code
        "python3 x.py",
        "sudo make install",
        "/usr/bin/env make",
        "git -c core.pager=sh log",  # a banned two-word prefix
        "git --no-pager log",  # an option where the subcommand should be
        "git st* x",  # a wildcard the agent typed would widen the approval
        "ma?e test",
        "$CMD run",  # a dynamic command word
        "",
    ],
)
def test_no_session_pattern_for_dangerous_or_dynamic_commands(command: str) -> None:
    assert suggest_bash_pattern(command) is None


def test_every_banned_prefix_is_refused() -> None:
    for prefix in BANNED_PREFIXES:
        assert suggest_bash_pattern(f"{prefix} anything at all") is None, prefix


@pytest.mark.parametrize(
    ("surface", "value", "pattern"),
    [
        (Surface.READ, "/p/src/a.py", "/p/src/*"),  # the file's directory
        (Surface.WRITE, "/p/src/", "/p/src/*"),
        (Surface.READ, "/a.py", None),  # never the whole filesystem
        (Surface.WRITE, "a.py", None),
        (Surface.READ, "/p/s*/a.py", None),
        (Surface.MCP, "github:create_issue", "github:*"),  # the whole server
        (Surface.MCP, "github", None),
        (Surface.TOOL, "WebFetch", "WebFetch"),  # exactly the tool
        (Surface.TOOL, "Web*", None),
        (Surface.SKILL, "pdf", "pdf"),
    ],
)
def test_other_surfaces(surface: Surface, value: str, pattern: str | None) -> None:
    assert suggest_pattern(surface, value) == pattern


def test_an_approval_covers_what_its_pattern_matches_on_its_surface_only() -> None:
    approvals = SessionApprovals()
    approvals.approve(Surface.BASH, "git status *")
    assert approvals.covering(Surface.BASH, "git status --short") == "git status *"
    assert approvals.covering(Surface.BASH, "git push --force") is None
    assert approvals.covering(Surface.TOOL, "git status --short") is None


def test_approving_twice_keeps_one_pattern_and_clear_forgets_all() -> None:
    approvals = SessionApprovals()
    approvals.approve(Surface.READ, "/p/src/*")
    approvals.approve(Surface.READ, "/p/src/*")
    approvals.approve(Surface.MCP, "github:*")
    assert approvals.patterns() == [(Surface.READ, "/p/src/*"), (Surface.MCP, "github:*")]
    assert approvals.covering(Surface.READ, "/p/src/a.py") == "/p/src/*"
    approvals.clear()
    assert approvals.patterns() == []
    assert approvals.covering(Surface.READ, "/p/src/a.py") is None
