"""`askgate import claude-code`: for each kind of Claude Code rule, what Claude Code's
documentation says the rule decides and what askgate decides with the converted file agree
on examples (matching and not matching). Unconvertible rules are listed with a reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from askgate.importers.claude_code import convert_files, render
from askgate.policy.engine import Policy
from askgate.tools import target_for

# (Claude Code permissions, [(tool, tool input, what Claude Code decides)]); None = no rule
# of the file matches (Claude Code falls back to its mode; askgate to its default, ask).
CASES: dict[str, tuple[dict[str, Any], list[tuple[str, dict[str, Any], str | None]]]] = {
    "webfetch-domain": (
        {
            "allow": ["WebFetch(domain:github.com)", "WebFetch(domain:*.npmjs.org)"],
            "deny": ["WebFetch(domain:Evil.Example.)"],
        },
        [
            ("WebFetch", {"url": "https://github.com/a/b", "prompt": "p"}, "allow"),
            ("WebFetch", {"url": "http://GitHub.com:8080/x", "prompt": "p"}, "allow"),
            ("WebFetch", {"url": "https://api.github.com/x", "prompt": "p"}, None),  # exact
            ("WebFetch", {"url": "https://registry.npmjs.org/x", "prompt": "p"}, "allow"),
            ("WebFetch", {"url": "https://a.b.npmjs.org/x", "prompt": "p"}, "allow"),
            ("WebFetch", {"url": "https://npmjs.org/x", "prompt": "p"}, None),  # not the apex
            ("WebFetch", {"url": "https://github.com.evil.example/", "prompt": "p"}, None),
            ("WebFetch", {"url": "https://evil.example/", "prompt": "p"}, "deny"),
            ("WebFetch", {"url": "https://example.org/", "prompt": "p"}, None),
        ],
    ),
    "webfetch-whole-tool-deny-beats-domain-allow": (
        {"deny": ["WebFetch"], "allow": ["WebFetch(domain:github.com)"]},
        [("WebFetch", {"url": "https://github.com/", "prompt": "p"}, "deny")],
    ),
    "bash-whole-tool": (
        {"allow": ["Bash"]},
        [("Bash", {"command": "make deploy"}, "allow"), ("Bash", {"command": "ls"}, "allow")],
    ),
    "bash-legacy-prefix": (
        {"allow": ["Bash(npm run test:*)"]},
        [
            ("Bash", {"command": "npm run test"}, "allow"),
            ("Bash", {"command": "npm run test -- --watch"}, "allow"),
            ("Bash", {"command": "npm run build"}, None),
            ("Bash", {"command": "npm run test && rm -rf /"}, None),  # operators split
        ],
    ),
    "bash-exact": (
        {"allow": ["Bash(git status)"]},
        [
            ("Bash", {"command": "git status"}, "allow"),
            # Claude Code's own read-only commands ask nothing: the profile read-only.
            ("Bash", {"command": "git status --short"}, "allow"),
            ("Bash", {"command": "git push"}, None),
        ],
    ),
    "bash-wildcard-middle": (
        {"deny": ["Bash(git * main)"]},
        [
            ("Bash", {"command": "git push origin main"}, "deny"),
            ("Bash", {"command": "git checkout main"}, "deny"),
            ("Bash", {"command": "git push origin dev"}, None),
        ],
    ),
    "bash-deny-beats-nested-allow": (
        {"deny": ["Bash(git push:*)"], "allow": ["Bash(git push origin dev)", "Bash(git *)"]},
        [
            ("Bash", {"command": "git push origin dev"}, "deny"),  # deny always wins
            ("Bash", {"command": "git push"}, "deny"),
            ("Bash", {"command": "git log"}, "allow"),
        ],
    ),
    "bash-ask-beats-nested-allow": (
        {"ask": ["Bash(rm:*)"], "allow": ["Bash(rm -rf build)"]},
        [("Bash", {"command": "rm -rf build"}, "ask"), ("Bash", {"command": "rm x"}, "ask")],
    ),
    "read-relative": (
        {"deny": ["Read(./.env)"]},
        [
            ("Read", {"file_path": "{project}/.env"}, "deny"),
            ("Read", {"file_path": "{project}/src/app.py"}, None),
        ],
    ),
    "read-absolute-and-home": (
        {"deny": ["Read(//etc/shadow)", "Read(~/.ssh/**)"]},
        [
            ("Read", {"file_path": "/etc/shadow"}, "deny"),
            ("Read", {"file_path": "{home}/.ssh/id_rsa"}, "deny"),
            ("Read", {"file_path": "/etc/hostname"}, None),
        ],
    ),
    "read-project-root-slash": (
        {"allow": ["Read(/docs/**)"]},
        [
            ("Read", {"file_path": "{project}/docs/guide/intro.md"}, "allow"),
            ("Read", {"file_path": "/docs/x"}, None),
        ],
    ),
    "edit-glob": (
        {"allow": ["Edit(src/**)"]},
        [
            ("Edit", {"file_path": "{project}/src/a/b.py"}, "allow"),
            ("Write", {"file_path": "{project}/src/new.py"}, "allow"),  # Edit rules: all editors
            ("Edit", {"file_path": "{project}/README.md"}, None),
        ],
    ),
    "edit-whole-tool-deny": (
        {"deny": ["Edit"], "allow": ["Edit(src/**)"]},
        [
            ("Edit", {"file_path": "{project}/src/a.py"}, "deny"),
            ("Write", {"file_path": "/tmp/x"}, "deny"),
        ],
    ),
    "mcp-tool-and-server": (
        {"allow": ["mcp__github__create_issue"], "deny": ["mcp__jira"]},
        [
            ("mcp__github__create_issue", {}, "allow"),
            ("mcp__github__delete_repo", {}, None),
            ("mcp__jira__create", {}, "deny"),
        ],
    ),
    "other-whole-tool": (
        {"allow": ["WebSearch"], "deny": ["WebFetch"]},
        [
            ("WebSearch", {"query": "x"}, "allow"),
            ("WebFetch", {"url": "https://example.com"}, "deny"),
        ],
    ),
    "mode-dont-ask": (
        {"defaultMode": "dontAsk", "allow": ["Bash(ls:*)"]},
        [("Bash", {"command": "ls -la"}, "allow"), ("Bash", {"command": "make"}, "deny")],
    ),
    "mode-accept-edits": (
        {"defaultMode": "acceptEdits", "deny": ["Edit(secrets/**)"]},
        [
            ("Edit", {"file_path": "{project}/src/a.py"}, "allow"),
            ("Edit", {"file_path": "{project}/secrets/k"}, "deny"),
        ],
    ),
    "read-bare-name-any-depth": (
        {"deny": ["Read(.env)", "Read(id_rsa)"]},
        [
            ("Read", {"file_path": "{project}/.env"}, "deny"),
            ("Read", {"file_path": "{project}/services/api/.env"}, "deny"),
            ("Read", {"file_path": "{project}/deploy/keys/id_rsa"}, "deny"),
            ("Read", {"file_path": "{project}/.env.example"}, None),
        ],
    ),
    "deny-one-segment-directory-any-depth": (
        {"deny": ["Read(secrets/**)"]},
        [
            ("Read", {"file_path": "{project}/secrets/k"}, "deny"),
            ("Read", {"file_path": "{project}/app/secrets/k"}, "deny"),
            ("Read", {"file_path": "{project}/app/secretsx/k"}, None),
        ],
    ),
    "mode-bypass": (
        {"defaultMode": "bypassPermissions", "deny": ["Bash(rm:*)"]},
        [("Bash", {"command": "make"}, "allow"), ("Bash", {"command": "rm -rf x"}, "deny")],
    ),
}


def decide(policy: Policy, tool: str, tool_input: dict[str, Any], cwd: str) -> str:
    target = target_for(tool, tool_input, cwd)
    decision = policy.decide(target.surface, target.value, cwd=cwd, tool=tool)
    action = str(decision.action)
    if action == "ask" and policy.yolo and not decision.clamped:
        return "allow"  # what the gate makes of an ask under yolo
    return action


@pytest.mark.parametrize("name", list(CASES))
def test_converted_rules_decide_like_claude_code(tmp_path: Path, name: str) -> None:
    permissions, examples = CASES[name]
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": permissions}))
    conversion = convert_files([str(settings)])
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(render(conversion))
    env = {"HOME": str(home), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml")}
    policy = Policy.load(str(project), config_files=[str(policy_file)], env=env)
    assert not policy.errors, policy.errors
    for tool, raw_input, claude_says in examples:
        tool_input = {
            k: v.format(project=project, home=home) if isinstance(v, str) else v
            for k, v in raw_input.items()
        }
        expected = claude_says or "ask"  # nothing matches: askgate's default
        assert decide(policy, tool, tool_input, str(project)) == expected, (tool, tool_input)


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("WebFetch(domain:api.*.example.com)", "one label in Claude Code"),
        ("WebFetch(domain:localhost:3000)", "with a port or a path"),
        ("WebFetch(domain:exa mple.com)", "is not a host name"),
        ("WebFetch(https://example.com)", "other than domain:HOST"),
        ("Write(docs/**)", "ignores path rules on Write"),
        ("Bash(echo ?)", "'?' is a literal"),
        ("Task(reviewer)", "no surface for Task specifiers"),
        ("mcp__github__x(y)", "take no specifier"),
        ("Bad Rule!", "not of the form"),
    ],
)
def test_inexpressible_rules_are_listed_with_the_reason(
    tmp_path: Path, rule: str, reason: str
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": [rule]}}))
    conversion = convert_files([str(settings)])
    assert conversion.rules == []
    [skipped] = conversion.skipped
    assert skipped.rule == rule and reason in skipped.reason
    assert reason in render(conversion)


@pytest.mark.parametrize("mode", ["plan", "auto"])
def test_modes_without_an_equivalent_are_listed(tmp_path: Path, mode: str) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": {"defaultMode": mode}}))
    [skipped] = convert_files([str(settings)]).skipped
    assert skipped.rule == f"defaultMode: {mode}"


def test_additional_directories_become_extra_directories(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": {"additionalDirectories": ["/opt/shared"]}}))
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(render(convert_files([str(settings)])))
    env = {"HOME": str(tmp_path), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml")}
    policy = Policy.load(str(project), config_files=[str(policy_file)], env=env)
    assert "/opt/shared" in policy.extra_directories


def run_import(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "askgate", "import", "claude-code", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path / "home")},
        timeout=60,
    )


def test_command_writes_a_valid_file_and_reports_skips(tmp_path: Path) -> None:
    user = tmp_path / "user.json"
    user.write_text(json.dumps({"permissions": {"allow": ["Bash(git status)"]}}))
    local = tmp_path / "local.json"
    local.write_text(json.dumps({"permissions": {"deny": ["WebFetch(domain:a.*.com)"]}}))
    out = tmp_path / "policy.toml"
    done = run_import(tmp_path, str(user), str(local), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "not converted: deny WebFetch(domain:a.*.com)" in done.stderr
    checked = subprocess.run(
        [sys.executable, "-m", "askgate", "config", "validate", "--config", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    assert run_import(tmp_path, str(user), "-o", str(out)).returncode == 2  # exists
    assert run_import(tmp_path, str(user), "-o", str(out), "--force").returncode == 0


def test_default_files_are_found(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.local.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(make test)"]}})
    )
    done = run_import(tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"make test" = "allow"' in done.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{oops", "not valid JSON"),
        ("[]", "not a JSON object"),
        ('{"permissions": []}', "'permissions' is not a JSON object"),
        ('{"permissions": {"allow": "Bash"}}', "is not a JSON array"),
    ],
)
def test_bad_settings_are_one_line_errors(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    done = run_import(tmp_path, str(bad))
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_no_settings_anywhere_is_an_error(tmp_path: Path) -> None:
    done = run_import(tmp_path)
    assert done.returncode == 2 and "no Claude Code settings file found" in done.stderr


def test_bypass_permissions_in_a_project_settings_file_is_not_yolo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code ignores `defaultMode: bypassPermissions` in a project's settings: a
    cloned repository cannot switch its own prompts off. The import must not either."""
    project = tmp_path / "project"
    for name in ("settings.json", "settings.local.json"):
        settings = project / ".claude" / name
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions"}}))
        conversion = convert_files([str(settings)])
        assert not conversion.yolo and "yolo" not in render(conversion)
        assert "ignores bypassPermissions in a project" in conversion.skipped[0].reason
    user = tmp_path / "home" / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions"}}))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert convert_files([str(user)]).yolo, "the user's own file: yolo"


def test_the_import_selects_the_read_only_profile_and_says_so(tmp_path: Path) -> None:
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(make test)"]}}))
    done = run_import(tmp_path, str(settings))
    assert done.returncode == 0, done.stderr
    assert 'profiles = ["read-only"]' in done.stdout
    assert "selected profile read-only" in done.stderr
