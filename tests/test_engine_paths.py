"""Path decisions with real symlinks: an allow needs link and target, a deny needs either."""

from __future__ import annotations

import os

import pytest

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Surface
from conftest import make_rule


@pytest.fixture
def layout(tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    os.symlink(outside / "secret.txt", project / "src" / "link.txt")
    (project / "src" / "real.txt").write_text("y")
    return project, outside


def policy(project, rules, **kw) -> Policy:
    built = [make_rule(s, p, a, base_dir=str(project)) for s, p, a in rules]
    return Policy(built, project_root=str(project), env={"HOME": str(project.parent)}, **kw)


def test_allow_needs_link_and_target(layout) -> None:
    project, outside = layout
    pol = policy(project, [("read", "src/**", "allow")])
    assert pol.decide(Surface.READ, "src/real.txt", cwd=str(project)).action is Action.ALLOW
    # The link's target is outside src/**: the allow does not hold for it.
    assert pol.decide(Surface.READ, "src/link.txt", cwd=str(project)).action is Action.ASK
    both = policy(
        project,
        [
            ("read", "src/**", "allow"),
            ("read", f"{outside}/**", "allow"),
            ("external_directory", f"{outside}/**", "allow"),
        ],
    )
    assert both.decide(Surface.READ, "src/link.txt", cwd=str(project)).action is Action.ALLOW


def test_deny_needs_either(layout) -> None:
    project, outside = layout
    pol = policy(project, [("read", "**", "allow"), ("read", f"{outside}/**", "deny")])
    assert pol.decide(Surface.READ, "src/link.txt", cwd=str(project)).action is Action.DENY
    # The same holds inside a shell command.
    assert pol.decide(Surface.BASH, "cat src/link.txt", cwd=str(project)).action is Action.DENY


def test_external_directory_and_safe_devices(layout) -> None:
    project, outside = layout
    pol = policy(
        project,
        [("bash", "cat *", "allow"), ("bash", "echo *", "allow"), ("write", "**", "allow")],
    )
    assert pol.decide(Surface.BASH, "cat src/real.txt", cwd=str(project)).action is Action.ALLOW
    # Outside the project: external_directory falls back to the default (ask).
    out = pol.decide(Surface.BASH, f"cat {outside}/secret.txt", cwd=str(project))
    assert out.action is Action.ASK
    assert any(c.surface is Surface.EXTERNAL_DIRECTORY for u in out.units for c in u.checks)
    assert pol.decide(Surface.BASH, "echo x > /dev/null", cwd=str(project)).action is Action.ALLOW


def test_dotdot_and_home_forms_are_normalised(layout) -> None:
    project, _ = layout
    pol = policy(project, [("read", "**", "allow"), ("read", "~/.ssh/**", "deny")])
    home = project.parent
    (home / ".ssh").mkdir()
    for spelling in ("~/.ssh/id_rsa", "$HOME/.ssh/id_rsa", "src/../../.ssh/id_rsa"):
        decision = pol.decide(Surface.READ, spelling, cwd=str(project))
        assert decision.action is Action.DENY, spelling
        command = pol.decide(Surface.BASH, f"cat {spelling}", cwd=str(project))
        assert command.action is Action.DENY, spelling
