"""askgate's own configuration and state cannot be written by an agent, whatever the policy."""

from __future__ import annotations

import pytest

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Surface


@pytest.fixture
def loaded(tmp_path):
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (home / ".config" / "askgate").mkdir(parents=True)
    # The most permissive user policy there is, even from the managed scope.
    (home / ".config" / "askgate" / "policy.toml").write_text(
        'default = "allow"\n[write]\n"/**" = "allow"\n[bash]\n"*" = "allow"\n'
    )
    managed = tmp_path / "managed.toml"
    managed.write_text('[write]\n"/**" = "allow"\n')
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "ASKGATE_MANAGED_POLICY": str(managed),
        "ASKGATE_FORWARDING_DIR": str(tmp_path / "fwd"),
        "ASKGATE_AUDIT_LOG": str(tmp_path / "review.jsonl"),
    }
    return Policy.load(str(project), env=env), project, home, tmp_path


@pytest.mark.parametrize(
    "target",
    [
        "{home}/.config/askgate/policy.toml",
        "{home}/.local/share/askgate/trusted.json",
        "{tmp}/fwd/sessions/parent/responses/1.json",
        "{tmp}/managed.toml",
        "{tmp}/review.jsonl",
        "{project}/.askgate/policy.toml",
    ],
)
def test_agents_cannot_write_askgate_state(loaded, target) -> None:
    policy, project, home, tmp = loaded
    path = target.format(home=home, tmp=tmp, project=project)
    assert policy.decide(Surface.WRITE, path, cwd=str(project)).action is Action.DENY
    command = policy.decide(Surface.BASH, f"echo x > {path}", cwd=str(project))
    assert command.action is Action.DENY
    # Reading stays as the policy says.
    assert policy.decide(Surface.READ, path, cwd=str(project)).action is Action.ALLOW


def test_everything_else_follows_the_policy(loaded) -> None:
    policy, project, _, _ = loaded
    assert policy.decide(Surface.WRITE, "src/main.py", cwd=str(project)).action is Action.ALLOW
