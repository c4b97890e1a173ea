"""askgate's self-protection is DENY, never ask, under every built-in profile (issue 20).

An ask is dropped by agent modes that skip prompts (Claude Code `bypassPermissions`,
Codex approvals `never`), so each of these must be a deny whatever the policy says:

- reads of askgate's secrets and control plane: `daemon.secret`, `daemon.control`, the
  whole state directory, the daemon's socket directory, the approval server's keys, the
  sandbox's run records and plans;
- writes to every file that registers askgate with Claude Code, Codex, Gemini CLI and pi,
  and to askgate's own configuration and state.

Each built-in profile is loaded by a user policy (`profiles = [...]`), then the most
permissive policy there is, then one that tries to loosen the floors by name (a user allow
of each protected path, yolo): every decision stays deny, through the file tools and the
shell alike. A user rule can still tighten (a deny beside the floors keeps its meaning).
The outcome end: the real `askgate hook claude-code` in `bypassPermissions` answers deny.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin, Surface
from askgate.policy.shipped import profile_names

PERMISSIVE = (
    'default = "allow"\nyolo = true\n[read]\n"/**" = "allow"\n'
    '[write]\n"/**" = "allow"\n[bash]\n"*" = "allow"\n'
)
POLICIES = {
    **{name: f'profiles = ["{name}"]\n' for name in profile_names()},
    "none": "",
    "permissive": PERMISSIVE,
    "permissive+profiles": f"profiles = {json.dumps(list(profile_names()))}\n{PERMISSIVE}",
}

SECRET_READS = (
    "{state}/daemon.secret",
    "{state}/daemon.control",
    "{state}/review.jsonl",
    "{state}/daemon.json",
    "{state}/run/askgate.sock",
    "{data}/server/keys.json",
    "{data}/server/server.db",
    "{data}/sandbox/runs/w-1/plan.json",
    "{data}/sandbox/placeholders.json",
    "{runtime}/askgate/askgate.sock",
)
PROTECTED_WRITES = (
    # Claude Code
    "{home}/.claude/settings.json",
    "{home}/.claude/settings.local.json",
    "{home}/claude-config/settings.json",
    "{project}/.claude/settings.json",
    "{project}/.claude/settings.local.json",
    "{project}/pkg/.claude/settings.json",
    # Codex
    "{home}/.codex/config.toml",
    "{home}/.codex/hooks.json",
    "{home}/codex-home/config.toml",
    "{home}/codex-home/hooks.json",
    "{project}/.codex/config.toml",
    "{project}/.codex/hooks.json",
    # Gemini CLI
    "{home}/.gemini/settings.json",
    "{project}/.gemini/settings.json",
    "{project}/.gemini/extensions/askgate/gemini-extension.json",
    # pi
    "{home}/pi-agent/settings.json",
    "{home}/pi-agent/extensions/askgate.ts",
    "{project}/.pi/settings.json",
    "{project}/.pi/extensions/askgate.ts",
    # askgate's own configuration and state
    "{home}/.config/askgate/policy.toml",
    "{data}/trusted.json",
    "{state}/daemon.control",
    "{state}/review.jsonl",
    "{runtime}/askgate/askgate.sock",
    "{project}/.askgate/policy.toml",
)


def _world(tmp_path: Path, policy_text: str) -> tuple[Policy, dict[str, str], Path]:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (home / ".config" / "askgate").mkdir(parents=True)
    (home / ".config" / "askgate" / "policy.toml").write_text(policy_text)
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed.toml"),
        "PI_CODING_AGENT_DIR": str(home / "pi-agent"),
        "CODEX_HOME": str(home / "codex-home"),
        "CLAUDE_CONFIG_DIR": str(home / "claude-config"),
    }
    places = {
        "home": str(home),
        "project": str(project),
        "state": str(home / ".local" / "state" / "askgate"),
        "data": str(home / ".local" / "share" / "askgate"),
        "runtime": str(tmp_path / "run"),
    }
    return Policy.load(str(project), env=env), places, project


def _decisions(policy: Policy, project: Path, surface: Surface, path: str) -> list[tuple]:
    tool = "Read" if surface is Surface.READ else "Write"
    found = [(tool, policy.decide(surface, path, cwd=str(project), tool=tool))]
    shell = (
        [f"cat {path}", f"base64 {path}", f"cp {path} /var/tmp/copy"]
        if surface is Surface.READ
        else [f"echo x > {path}", f"tee {path} </dev/null", f"rm -f {path}", f"mv x {path}"]
    )
    found += [
        (command, policy.decide(Surface.BASH, command, cwd=str(project))) for command in shell
    ]
    return found


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_reading_askgate_secrets_is_denied_under_every_profile(tmp_path: Path, name: str) -> None:
    policy, places, project = _world(tmp_path, POLICIES[name])
    for target in SECRET_READS:
        path = target.format(**places)
        for how, decided in _decisions(policy, project, Surface.READ, path):
            assert decided.action is Action.DENY, (name, how, decided.reason)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_writing_registration_files_and_state_is_denied_under_every_profile(
    tmp_path: Path, name: str
) -> None:
    policy, places, project = _world(tmp_path, POLICIES[name])
    for target in PROTECTED_WRITES:
        path = target.format(**places)
        for how, decided in _decisions(policy, project, Surface.WRITE, path):
            assert decided.action is Action.DENY, (name, how, decided.reason)


def _loosening_policy() -> str:
    # A user allow naming each protected path exactly, and each of its directories.
    reads = [
        '"~/.local/state/askgate/**" = "allow"',
        '"~/.local/state/askgate/daemon.secret" = "allow"',
        '"~/.local/state/askgate/daemon.control" = "allow"',
        '"~/.local/share/askgate/**" = "allow"',
    ]
    writes = [
        '"~/.claude/**" = "allow"',
        '"~/.claude/settings.json" = "allow"',
        '"**/.claude/settings.json" = "allow"',
        '"**/.codex/**" = "allow"',
        '"~/.codex/config.toml" = "allow"',
        '"**/.gemini/**" = "allow"',
        '"**/.pi/**" = "allow"',
        '"~/.config/askgate/**" = "allow"',
        '"~/.local/state/askgate/**" = "allow"',
    ]
    return (
        (
            f"{PERMISSIVE}\n[agent.claude-code.read]\n"
            + "\n".join(reads)
            + "\n[agent.claude-code.write]\n"
            + "\n".join(writes)
            + "\n"
        )
        .replace("[read]\n", "[read]\n" + "\n".join(reads) + "\n", 1)
        .replace("[write]\n", "[write]\n" + "\n".join(writes) + "\n", 1)
    )


def test_a_user_allow_cannot_loosen_a_floor(tmp_path: Path) -> None:
    policy, places, project = _world(tmp_path, _loosening_policy())
    for agent in (None, "claude-code"):
        for target in SECRET_READS:
            path = target.format(**places)
            decided = policy.decide(Surface.READ, path, cwd=str(project), agent=agent)
            assert decided.action is Action.DENY, (agent, path, decided.reason)
            assert decided.rule is not None and decided.rule.origin is Origin.BUILTIN
        for target in PROTECTED_WRITES:
            path = target.format(**places)
            decided = policy.decide(Surface.WRITE, path, cwd=str(project), agent=agent)
            assert decided.action is Action.DENY, (agent, path, decided.reason)


def test_a_user_rule_can_still_tighten(tmp_path: Path) -> None:
    text = PERMISSIVE.replace(
        "[read]\n", '[read]\n"~/.local/share/askgate/trusted.json" = "deny"\n', 1
    ).replace("[write]\n", '[write]\n"~/.claude/projects/**" = "deny"\n', 1)
    policy, places, project = _world(tmp_path, text)
    trusted = f"{places['data']}/trusted.json"
    assert policy.decide(Surface.READ, trusted, cwd=str(project)).action is Action.DENY
    transcript = f"{places['home']}/.claude/projects/x.jsonl"
    assert policy.decide(Surface.WRITE, transcript, cwd=str(project)).action is Action.DENY
    # Beside the floors, the permissive policy still holds.
    assert policy.decide(Surface.READ, "src/a.py", cwd=str(project)).action is Action.ALLOW


def _hook(tmp_path: Path, places: dict[str, str], tool: str, tool_input: dict) -> dict:
    payload = {
        "session_id": "s1",
        "cwd": places["project"],
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_1",
        "permission_mode": "bypassPermissions",
    }
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": places["home"],
        "XDG_RUNTIME_DIR": places["runtime"],
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed.toml"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "askgate.cli", "hook", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=120,
        cwd=places["project"],
    )
    assert proc.returncode in (0, 2), proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else {"exit": proc.returncode}


def test_claude_code_in_bypass_permissions_is_refused_the_secret_and_the_registration(
    tmp_path: Path,
) -> None:
    _, places, _ = _world(tmp_path, PERMISSIVE)
    secret = Path(places["state"]) / "daemon.control"
    secret.parent.mkdir(parents=True)
    secret.write_text("0" * 64)
    for tool, tool_input in (
        ("Read", {"file_path": str(secret)}),
        ("Bash", {"command": f"cat {secret}"}),
        ("Write", {"file_path": f"{places['project']}/.claude/settings.json", "content": "{}"}),
        ("Bash", {"command": f"echo '{{}}' > {places['home']}/.codex/hooks.json"}),
    ):
        answer = _hook(tmp_path, places, tool, tool_input)
        decision = answer.get("hookSpecificOutput", {}).get("permissionDecision")
        assert decision == "deny", (tool, tool_input, answer)
