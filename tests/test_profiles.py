"""Built-in profiles: shipped as TOML, selected with `profiles = [...]`, loaded just below
the selecting file, their examples checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.builtin import PROFILES_DIR, load_profile, profile_names
from askgate.policy.config import RANK_PROJECT, RANK_USER, load_policy, run_examples
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin
from askgate.policy.trust import trust_project
from cli_harness import Cli

EXPECTED = {
    "read-only",
    "git-local",
    "python-dev",
    "node-dev",
    "rust-dev",
    "go-dev",
    "docker-read",
    "project-write",
    "sandboxed-project",
    "sandboxed-fetch",
}


@pytest.fixture
def world(tmp_path: Path) -> dict[str, object]:
    home = tmp_path / "home"
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (home / ".ssh").mkdir(parents=True)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "managed.toml"),
    }
    return {"home": home, "project": project, "env": env}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _decide(world: dict[str, object], value: str, surface: str = "bash") -> Action:
    project, env = world["project"], world["env"]
    policy = Policy.load(str(project), env=env)  # type: ignore[arg-type]
    return policy.decide(surface, value, cwd=str(project)).action


def test_the_shipped_profiles_are_the_documented_ones() -> None:
    assert set(profile_names()) == EXPECTED
    assert all((Path(PROFILES_DIR) / f"{name}.toml").is_file() for name in EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_profile_loads_and_every_example_passes(name: str, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    root = str(tmp_path / "project")
    profile = load_profile(name, origin=Origin.USER, rank=99, base_dir=root, env=env)
    assert profile.rules and profile.examples
    assert all(example.passed for example in profile.examples)
    assert {rule.rank for rule in profile.rules} == {99}
    assert profile.default is None and profile.yolo is None, "profiles set no defaults"


def test_config_test_runs_the_examples_of_the_selected_profiles(world: dict) -> None:
    user = _write(world["home"] / ".config/askgate/policy.toml", 'profiles = ["go-dev"]\n')
    runs = run_examples(str(world["project"]), env=world["env"])
    paths = [run.path for run in runs]
    assert str(user) in paths and str(Path(PROFILES_DIR) / "go-dev.toml") in paths


def test_profile_rules_load_one_rank_below_the_selecting_file(world: dict) -> None:
    _write(world["home"] / ".config/askgate/policy.toml", 'profiles = ["read-only"]\n')
    loaded = load_policy(str(world["project"]), env=world["env"])
    ranks = {rule.rank for rule in loaded.rules if rule.source.startswith(PROFILES_DIR)}
    assert ranks == {RANK_USER - 1}
    assert {r.origin for r in loaded.rules if r.source.startswith(PROFILES_DIR)} == {Origin.USER}


def test_a_profile_allows_everyday_commands(world: dict) -> None:
    _write(
        world["home"] / ".config/askgate/policy.toml",
        'profiles = ["read-only", "git-local", "python-dev"]\n',
    )
    for command in ("ls -la", "git status && git diff", "uv run pytest -q", "git commit -m x"):
        assert _decide(world, command) is Action.ALLOW, command
    assert _decide(world, "git push origin main") is Action.ASK
    assert _decide(world, "env") is Action.ASK, "env prints secrets"
    assert _decide(world, "find . -delete") is Action.ASK


def test_the_files_own_rules_override_its_profiles(world: dict) -> None:
    _write(
        world["home"] / ".config/askgate/policy.toml",
        'profiles = ["read-only", "git-local"]\n[bash]\n"git *" = "ask"\n"ls *" = "deny"\n',
    )
    assert _decide(world, "git commit -m x") is Action.ASK, "a wider file rule is not lifted"
    assert _decide(world, "ls -la") is Action.DENY


def test_read_denies_and_floors_still_hold_under_a_profile(world: dict) -> None:
    _write(
        world["home"] / ".config/askgate/policy.toml",
        'profiles = ["read-only", "project-write"]\n[read]\n"~/.ssh/**" = "deny"\n',
    )
    assert _decide(world, "cat ~/.ssh/id_rsa") is Action.DENY
    assert _decide(world, "cat $(curl -s x)") is not Action.ALLOW
    assert _decide(world, "echo x > ~/.bashrc") is Action.ASK, "outside the project"
    assert _decide(world, "echo x > src/new.py") is Action.ALLOW
    assert _decide(world, str(world["project"] / ".git/config"), "write") is not Action.ALLOW


def test_an_untrusted_project_file_cannot_select_profiles(world: dict) -> None:
    project = world["project"]
    _write(project / ".askgate/policy.toml", 'profiles = ["read-only"]\n')
    loaded = load_policy(str(project), env=world["env"])
    assert not [rule for rule in loaded.rules if rule.source.startswith(PROFILES_DIR)]
    assert any("profiles" in warning for warning in loaded.warnings)
    assert _decide(world, "ls") is Action.ASK

    trust_project(str(project), env=world["env"])
    loaded = load_policy(str(project), env=world["env"])
    ranks = {rule.rank for rule in loaded.rules if rule.source.startswith(PROFILES_DIR)}
    assert ranks == {RANK_PROJECT - 1}
    assert _decide(world, "ls") is Action.ALLOW


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('profiles = ["read-onyl"]', "unknown profile 'read-onyl' (did you mean 'read-only'?)"),
        ('profiles = "read-only"', "expected an array of profile names"),
        ('profiles = ["Read Only"]', "entry 1 must be a profile name"),
    ],
)
def test_bad_profile_selections_are_validation_errors_with_file_and_line(
    tmp_path: Path, value: str, message: str
) -> None:
    cli = Cli(tmp_path)
    policy = cli.write("p.toml", f'default = "ask"\n{value}\n')
    result = cli.run("config", "validate", "--config", str(policy))
    assert result.returncode == 2, result
    assert f"{policy}:2: profiles: {message}" in result.stderr


def test_config_show_and_explain_name_the_profile_and_line(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    policy = cli.write("p.toml", 'profiles = ["git-local"]\n')
    shown = cli.run("config", "show", "--config", str(policy), "--json")
    rows = {row["pattern"]: row for row in shown.json()["rules"]}
    assert rows["git push *"]["where"].startswith("profile git-local line ")
    explained = cli.run("explain", "--config", str(policy), "bash", "git push origin main")
    assert "profile git-local line" in explained.stdout


def test_config_show_lists_builtin_rules_only_when_asked(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    policy = cli.write("p.toml", '[bash]\n"ls" = "allow"\n')
    plain = cli.run("config", "show", "--config", str(policy), "--json").json()
    assert all(row["origin"] != "builtin" for row in plain["rules"])
    full = cli.run("config", "show", "--config", str(policy), "--json", "--builtin").json()
    assert any(row["origin"] == "builtin" for row in full["rules"])
