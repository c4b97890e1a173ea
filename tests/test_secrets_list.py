"""The built-in secrets list (policy/builtin/rules/secrets.toml): reading a credential is
denied whatever the policy allows, by the file tools and inside shell commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.engine import Policy
from askgate.policy.model import Action

SECRETS = [
    "~/.ssh/id_ed25519",
    "~/.gnupg/private-keys-v1.d/k.key",
    "~/.aws/credentials",
    "~/.config/gcloud/application_default_credentials.json",
    "~/.azure/msal_token_cache.json",
    "~/.kube/config",
    "~/.config/gh/hosts.yml",
    "~/.config/glab-cli/config.yml",
    "~/.netrc",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials.toml",
    "~/.docker/config.json",
    "~/.bash_history",
    "~/.zsh_history",
    "~/.local/share/fish/fish_history",
    "~/.config/google-chrome/Default/Cookies",
    "~/.mozilla/firefox/x.default-release/cookies.sqlite",
    "PROJECT/.env",
    "PROJECT/web/.env.local",
    "PROJECT/.env.production",
]
NOT_SECRETS = [
    "~/.config/gh/config.yml",
    "~/.cargo/config.toml",
    "~/.bashrc",
    "PROJECT/.env.example",
    "PROJECT/.envrc",
    "PROJECT/src/env.py",
]
# A policy that allows everything it can: only the built-in floor stands in the way.
ALLOW_ALL = 'default = "allow"\n[read]\n"/**" = "allow"\n[bash]\n"*" = "allow"\n'


@pytest.fixture
def world(tmp_path: Path) -> tuple[Policy, Path, Path]:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    config = tmp_path / "p.toml"
    config.write_text(ALLOW_ALL)
    env = {"HOME": str(home), "ASKGATE_MANAGED_POLICY": str(tmp_path / "m.toml")}
    policy = Policy.load(str(project), config_files=[str(config)], env=env)
    assert not policy.errors
    return policy, home, project


def _path(spelling: str, home: Path, project: Path) -> str:
    return spelling.replace("~", str(home), 1).replace("PROJECT", str(project), 1)


@pytest.mark.parametrize("spelling", SECRETS)
def test_reading_a_credential_is_denied_even_when_the_policy_allows_everything(
    world: tuple[Policy, Path, Path], spelling: str
) -> None:
    policy, home, project = world
    path = _path(spelling, home, project)
    read = policy.decide("read", path, cwd=str(project))
    assert read.action is Action.DENY and "secrets.toml" in read.reason, read.reason
    shell = policy.decide("bash", f"cat '{path}' | base64", cwd=str(project))
    assert shell.action is Action.DENY, shell.reason


@pytest.mark.parametrize("spelling", NOT_SECRETS)
def test_ordinary_files_next_to_the_credentials_stay_readable(
    world: tuple[Policy, Path, Path], spelling: str
) -> None:
    policy, home, project = world
    decision = policy.decide("read", _path(spelling, home, project), cwd=str(project))
    assert decision.action is Action.ALLOW, decision.reason


def test_a_recursive_read_of_home_meets_the_secrets(world: tuple[Policy, Path, Path]) -> None:
    policy, _home, project = world
    assert policy.decide("bash", "grep -r token ~", cwd=str(project)).action is not Action.ALLOW
