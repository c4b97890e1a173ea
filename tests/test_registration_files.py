"""The files that register askgate with an agent are built-in deny for writes.

An agent allowed to write anywhere (the most permissive policy there is, even in the
managed scope, even yolo) must still not unhook its gate: every write to such a file is
denied, through a file tool and through the shell alike. An ask would not do: agent modes
that drop asks (Claude Code `bypassPermissions`, Codex approvals `never`) let it through.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin, Surface


@pytest.fixture
def world(tmp_path: Path):
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (home / ".config" / "askgate").mkdir(parents=True)
    (home / ".config" / "askgate" / "policy.toml").write_text(
        'default = "allow"\n[write]\n"/**" = "allow"\n[bash]\n"*" = "allow"\n'
    )
    managed = tmp_path / "managed.toml"
    managed.write_text('[write]\n"/**" = "allow"\n')
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "ASKGATE_MANAGED_POLICY": str(managed),
        "PI_CODING_AGENT_DIR": str(home / "pi-agent"),
        "CODEX_HOME": str(home / "codex-home"),
        "CLAUDE_CONFIG_DIR": str(home / "claude-config"),
        "PI_PERMISSION_SYSTEM_CONFIG_PATH": str(home / "elsewhere" / "pps.json"),
    }
    return Policy.load(str(project), env=env), project, home


TARGETS = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    "sub/dir/.claude/settings.json",
    "{home}/.claude/settings.json",
    "{home}/.claude/settings.local.json",
    "{home}/claude-config/settings.json",
    "{home}/claude-config/settings.local.json",
    "{home}/.codex/config.toml",
    "{home}/.codex/hooks.json",
    "{home}/codex-home/config.toml",
    "{home}/codex-home/hooks.json",
    ".codex/config.toml",
    ".codex/hooks.json",
    "{home}/.gemini/settings.json",
    ".gemini/settings.json",
    ".gemini/extensions/askgate/gemini-extension.json",
    "{home}/pi-agent/settings.json",
    "{home}/pi-agent/extensions/pi-permission-system/config.json",
    "{home}/pi-agent/extensions/askgate.ts",
    ".pi/settings.json",
    ".pi/extensions/pi-permission-system/config.json",
    "{home}/elsewhere/pps.json",
]


@pytest.mark.parametrize("target", TARGETS)
def test_an_agent_rewriting_its_registration_file_is_denied(world, target: str) -> None:
    policy, project, home = world
    path = target.format(home=home)
    tool = policy.decide(Surface.WRITE, path, cwd=str(project), tool="Write")
    assert tool.action is Action.DENY, tool.reason
    assert tool.rule is not None and tool.rule.origin is Origin.BUILTIN
    shell = policy.decide(Surface.BASH, f"echo x > {path}", cwd=str(project))
    assert shell.action is Action.DENY, shell.reason
    # Reading them is the policy's business, as before.
    assert policy.decide(Surface.READ, path, cwd=str(project)).action is Action.ALLOW


def test_yolo_and_a_user_allow_cannot_lift_the_floor(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (home / ".config" / "askgate").mkdir(parents=True)
    (home / ".config" / "askgate" / "policy.toml").write_text(
        'yolo = true\ndefault = "allow"\n[write]\n"/**" = "allow"\n'
        '"**/.claude/settings.json" = "allow"\n"~/.codex/config.toml" = "allow"\n'
    )
    env = {"HOME": str(home), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml")}
    policy = Policy.load(str(project), env=env)
    for path in (".claude/settings.json", f"{home}/.codex/config.toml"):
        decided = policy.decide(Surface.WRITE, path, cwd=str(project), tool="Write")
        assert decided.action is Action.DENY, decided.reason


def test_yolo_and_a_deny_keep_their_meaning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (home / ".config" / "askgate").mkdir(parents=True)
    (home / ".config" / "askgate" / "policy.toml").write_text(
        '[write]\n"/**" = "allow"\n"**/.claude/settings.json" = "deny"\n'
    )
    env = {"HOME": str(home), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml")}
    policy = Policy.load(str(project), env=env)
    denied = policy.decide(Surface.WRITE, ".claude/settings.json", cwd=str(project))
    assert denied.action is Action.DENY  # a deny from a policy file is still final


def test_ordinary_files_beside_them_follow_the_policy(world) -> None:
    policy, project, home = world
    for path in (f"{home}/.claude/projects/x.jsonl", "src/a.py", ".claude/notes.md"):
        assert policy.decide(Surface.WRITE, path, cwd=str(project)).action is Action.ALLOW
    # Agent commands steer the next session: a persistence ask (not a deny, not an allow).
    steering = policy.decide(Surface.WRITE, ".claude/commands/x.md", cwd=str(project))
    assert steering.action is Action.ASK


def test_askgate_secrets_are_not_readable_by_an_agent(world) -> None:
    policy, project, home = world
    state = home / ".local" / "state" / "askgate"
    data = home / ".local" / "share" / "askgate"
    for path in (
        state / "daemon.secret",
        state / "daemon.control",
        data / "server" / "keys.json",
        data / "sandbox" / "runs" / "w-1" / "plan.json",
    ):
        tool = policy.decide(Surface.READ, str(path), cwd=str(project), tool="Read")
        assert tool.action is Action.DENY, (path, tool.reason)
        shell = policy.decide(Surface.BASH, f"cat {path}", cwd=str(project))
        assert shell.action is Action.DENY, (path, shell.reason)
    # The whole state directory (review log included) is the control plane: hidden in
    # every sandbox, and a read deny floor here (test_self_protection_floors.py).
    review = state / "review.jsonl"
    assert policy.decide(Surface.READ, str(review), cwd=str(project)).action is Action.DENY
