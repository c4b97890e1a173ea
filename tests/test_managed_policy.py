"""The managed file is the administrator's floor: broken, it denies everything; and no
environment variable can replace or silence it once it exists.

The real managed path is `/etc/askgate/policy.toml`, which these tests never create (other
tests run beside them). They move it instead: `locations.SYSTEM_MANAGED_POLICY` is patched
in-process to a file under the test's tmp dir. That seam needs code running inside askgate,
which an agent's environment variables cannot reach.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askgate import locations
from askgate.adapters import claude_code
from askgate.policy.config import load_policy, managed_policy_path
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Surface

PERMISSIVE = 'default = "allow"\nyolo = true\n[write]\n"/**" = "allow"\n[bash]\n"*" = "allow"\n'


@pytest.fixture
def world(tmp_path: Path):
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (home / ".config" / "askgate").mkdir(parents=True)
    (home / ".config" / "askgate" / "policy.toml").write_text(PERMISSIVE)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }
    return tmp_path, project, home, env


@pytest.mark.parametrize(
    "breakage",
    ["not toml [[[", "default = 12\n", "[bash]\n'git *' = 'perhaps'\n", "directory"],
)
def test_a_broken_managed_file_denies_everything(world, breakage: str) -> None:
    tmp, project, _, env = world
    managed = tmp / "managed.toml"
    if breakage == "directory":
        managed.mkdir()
    else:
        managed.write_text(breakage)
    policy = Policy.load(str(project), env=env | {"ASKGATE_MANAGED_POLICY": str(managed)})
    for surface, value in [
        (Surface.BASH, "ls"),
        (Surface.WRITE, "src/a.py"),
        (Surface.READ, "README.md"),
        (Surface.TOOL, "Read"),
    ]:
        decision = policy.decide(surface, value, cwd=str(project))
        assert decision.action is Action.DENY, (surface, value, decision.reason)
        assert "managed policy file" in decision.reason
        assert str(managed) in decision.reason


def test_a_broken_user_file_still_clamps_to_ask_and_names_the_file(world) -> None:
    tmp, project, home, env = world
    (project / ".askgate").mkdir()
    broken = home / ".config" / "askgate" / "policy.toml"
    broken.write_text("default = 'allow'\n[bash]\n'ls' = 'yes please'\n")
    managed = tmp / "managed.toml"
    managed.write_text('[bash]\n"ls" = "allow"\n')
    policy = Policy.load(str(project), env=env | {"ASKGATE_MANAGED_POLICY": str(managed)})
    decision = policy.decide(Surface.BASH, "ls", cwd=str(project))
    assert decision.action is Action.ASK
    assert str(broken) in decision.reason


def test_managed_policy_variable_cannot_replace_an_existing_managed_file(
    world, monkeypatch
) -> None:
    tmp, project, _, env = world
    system = tmp / "etc-askgate-policy.toml"
    system.write_text('[bash]\n"ls" = "deny"\n')
    monkeypatch.setattr(locations, "SYSTEM_MANAGED_POLICY", str(system))
    decoy = tmp / "decoy.toml"
    decoy.write_text("")
    env = env | {"ASKGATE_MANAGED_POLICY": str(decoy)}
    assert managed_policy_path(env) == str(system)
    loaded = load_policy(str(project), env=env)
    assert str(system) in [f.path for f in loaded.files]
    assert str(decoy) not in [f.path for f in loaded.files]
    policy = Policy.from_loaded(loaded, env=env)
    assert policy.decide(Surface.BASH, "ls", cwd=str(project)).action is Action.DENY


def test_managed_policy_variable_works_while_no_managed_file_exists(world, monkeypatch) -> None:
    tmp, project, _, env = world
    monkeypatch.setattr(locations, "SYSTEM_MANAGED_POLICY", str(tmp / "absent.toml"))
    seam = tmp / "seam.toml"
    seam.write_text('[bash]\n"ls" = "deny"\n')
    policy = Policy.load(str(project), env=env | {"ASKGATE_MANAGED_POLICY": str(seam)})
    assert policy.decide(Surface.BASH, "ls", cwd=str(project)).action is Action.DENY


def _hook_input(project: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "s-1",
            "transcript_path": "/dev/null",
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
        }
    ).encode()


def test_audit_off_cannot_silence_the_log_while_a_managed_file_exists(world, monkeypatch) -> None:
    tmp, project, home, env = world
    system = tmp / "etc-askgate-policy.toml"
    system.write_text('[bash]\n"ls" = "allow"\n')
    monkeypatch.setattr(locations, "SYSTEM_MANAGED_POLICY", str(system))
    log = home / ".local" / "state" / "askgate" / "review.jsonl"
    claude_code.respond(_hook_input(project), env=env | {"ASKGATE_AUDIT_LOG": "off"})
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["value"] for r in records] == ["ls"]


def test_audit_off_silences_the_log_without_a_managed_file(world, monkeypatch) -> None:
    tmp, project, home, env = world
    monkeypatch.setattr(locations, "SYSTEM_MANAGED_POLICY", str(tmp / "absent.toml"))
    claude_code.respond(_hook_input(project), env=env | {"ASKGATE_AUDIT_LOG": "off"})
    assert not (home / ".local" / "state" / "askgate" / "review.jsonl").exists()
