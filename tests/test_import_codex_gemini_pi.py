"""`askgate import codex | gemini | pi`: the converted file decides as the agent does.

Codex is checked against the real `codex execpolicy check` of the pinned client; Gemini
against the policy files its pinned package ships; pi against the example configuration
of the pinned permission-system package (each skipped where the client is not installed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from askgate.importers import codex_rules, gemini_policy, pi_permissions
from askgate.importers.claude_code import render
from askgate.policy.engine import Policy

CLIENTS = Path.home() / ".cache" / "askgate" / "clients"
CODEX_BIN = (
    CLIENTS
    / "codex-0.171.0/node_modules/@openai/codex-linux-x64/vendor"
    / "x86_64-unknown-linux-musl/bin/codex"
)
GEMINI_POLICIES = CLIENTS / "gemini-0.61.0/node_modules/@google/gemini-cli/bundle/policies"
PI_EXAMPLE = (
    CLIENTS / "pi-1.6.0/node_modules/@gotgenes/pi-permission-system/config/config.example.json"
)

CODEX_RULES = """
prefix_rule(pattern = ["git", ["push", "fetch"]], decision = "prompt", justification = "remote")
prefix_rule(pattern = ["git"], decision = "allow")
prefix_rule(pattern = ["rm", "-rf"], decision = "forbidden", justification = "no")
prefix_rule(pattern = ["rm"], decision = "prompt")
prefix_rule(pattern = ["npm", "run"], decision = "allow")
prefix_rule(pattern = ["npm"], decision = "forbidden")
host_executable(name = "git", paths = ["/usr/bin/git"])
RULES = ["x"]
"""
CODEX_COMMANDS = [
    "git status",
    "git push origin main",
    "git fetch",
    "rm -rf build",
    "rm notes.txt",
    "npm run build",
    "npm install",
]
CODEX_TO_ASKGATE = {"allow": "allow", "prompt": "ask", "forbidden": "deny"}


def _policy(tmp_path: Path, text: str) -> tuple[Policy, str]:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    policy_file = tmp_path / "converted.toml"
    policy_file.write_text(text)
    env = {"HOME": str(tmp_path / "home"), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none")}
    policy = Policy.load(str(project), config_files=[str(policy_file)], env=env)
    assert not policy.errors, policy.errors
    return policy, str(project)


def test_codex_rules_decide_as_the_real_codex_execpolicy(tmp_path: Path) -> None:
    if not CODEX_BIN.is_file():
        pytest.skip("the pinned Codex client is not installed")
    rules = tmp_path / "default.rules"
    rules.write_text(CODEX_RULES)
    conversion = codex_rules.convert_files([str(rules)])
    policy, project = _policy(tmp_path, render(conversion))
    for command in CODEX_COMMANDS:
        done = subprocess.run(
            [str(CODEX_BIN), "execpolicy", "check", "--rules", str(rules), *command.split()],
            capture_output=True,
            text=True,
            timeout=60,
        )
        codex = json.loads(done.stdout)["decision"]
        ours = str(policy.decide("bash", command, cwd=project).action)
        assert ours == CODEX_TO_ASKGATE[codex], (command, codex, ours)
    skipped = {s.rule: s.reason for s in conversion.skipped}
    assert any("not a rule call" in why for why in skipped.values()), "RULES = … is listed"
    assert 'profiles = ["read-only"]' in render(conversion)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('prefix_rule(pattern = ["a*"], decision = "allow")', "glob character"),
        ('prefix_rule(pattern = PATTERNS, decision = "allow")', "not a literal"),
        ('prefix_rule(pattern = ["x"], decision = "maybe")', "unknown decision"),
        ("def f():\n    pass\n", "not a rule call"),
    ],
)
def test_codex_rules_askgate_cannot_express_are_listed(
    tmp_path: Path, text: str, reason: str
) -> None:
    rules = tmp_path / "x.rules"
    rules.write_text(text)
    conversion = codex_rules.convert_files([str(rules)])
    assert conversion.rules == [] and reason in conversion.skipped[0].reason


def test_gemini_priority_and_prefixes_decide_as_gemini(tmp_path: Path) -> None:
    policy_toml = tmp_path / "p.toml"
    policy_toml.write_text(
        """
[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git status", "git diff"]
decision = "allow"
priority = 100

[[rule]]
toolName = "run_shell_command"
commandPrefix = "git"
decision = "ask_user"
priority = 50

[[rule]]
toolName = "run_shell_command"
commandPrefix = "rm"
decision = "deny"
priority = 500
denyMessage = "no deleting"

[[rule]]
toolName = "run_shell_command"
commandPrefix = "rm -i"
decision = "allow"
priority = 10

[[rule]]
mcpName = "github"
toolName = "create_issue"
decision = "allow"
priority = 10

[[rule]]
toolName = "run_shell_command"
commandRegex = "curl .*"
decision = "deny"
"""
    )
    conversion = gemini_policy.convert_files([str(policy_toml)])
    policy, project = _policy(tmp_path, render(conversion))
    decide = lambda surface, value: str(policy.decide(surface, value, cwd=project).action)  # noqa: E731
    assert decide("bash", "git status --short") == "allow"
    assert decide("bash", "git commit -m x") == "ask"
    assert decide("bash", "rm -i notes.txt") == "deny", "priority 500 beats the nested allow"
    assert decide("mcp", "github:create_issue") == "allow"
    skipped = " ".join(s.reason for s in conversion.skipped)
    assert "commandRegex has no askgate equivalent" in skipped
    assert "decides every call it matches" in skipped


def test_the_policies_gemini_ships_convert_to_files_that_load(tmp_path: Path) -> None:
    if not GEMINI_POLICIES.is_dir():
        pytest.skip("the pinned Gemini CLI is not installed")
    files = sorted(str(p) for p in GEMINI_POLICIES.glob("*.toml"))
    conversion = gemini_policy.convert_files(files)
    policy, project = _policy(tmp_path, render(conversion))
    assert str(policy.decide("tool", "read_file", cwd=project).action) == "allow"


def test_pi_example_decides_as_pi(tmp_path: Path) -> None:
    if not PI_EXAMPLE.is_file():
        pytest.skip("the pinned pi permission system is not installed")
    conversion = pi_permissions.convert_files([str(PI_EXAMPLE)])
    policy, project = _policy(tmp_path, render(conversion))

    def decide(surface: str, value: str, tool: str | None = None) -> str:
        return str(policy.decide(surface, value, cwd=project, tool=tool).action)

    assert decide("bash", "git status") == "allow"  # the later, narrower rule
    assert decide("bash", "git push") == "ask"
    assert decide("bash", "npm install") == "deny"
    assert decide("read", f"{project}/.env", "read") == "deny"
    assert decide("read", f"{project}/config/.env.production", "read") == "deny"
    assert decide("read", f"{project}/.env.example", "read") == "allow"
    assert decide("write", f"{project}/src/a.py", "write") == "deny"
    assert decide("mcp", "github:create_issue") == "ask"


def test_pi_last_match_wins_and_legacy_sections(tmp_path: Path) -> None:
    legacy = tmp_path / "pi-permissions.jsonc"
    legacy.write_text(
        """{
  // legacy format, comments and trailing commas
  "defaultPolicy": {"tools": "ask", "bash": "ask", "mcp": "ask", "skills": "ask"},
  "tools": {"read": "allow",},
  "bash": {"git status": "allow", "git *": "deny"},
  "special": {"doom_loop": "deny", "external_directory": "ask"},
}"""
    )
    conversion = pi_permissions.convert_files([str(legacy)])
    policy, project = _policy(tmp_path, render(conversion))
    # pi: the later `git *` deny decides `git status` too.
    assert str(policy.decide("bash", "git status", cwd=project).action) == "deny"
    assert any("doom_loop" in s.rule for s in conversion.skipped)


def test_the_import_commands_run_and_list_what_they_left_out(tmp_path: Path) -> None:
    rules = tmp_path / "x.rules"
    rules.write_text('prefix_rule(pattern = ["ls"], decision = "allow")\nX = 1\n')
    done = subprocess.run(
        [sys.executable, "-m", "askgate", "import", "codex", str(rules)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and '"ls *" = "allow"' in done.stdout, done.stderr
    assert "not converted" in done.stderr and "selected profile read-only" in done.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rule]\n")
    failed = subprocess.run(
        [sys.executable, "-m", "askgate", "import", "gemini", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert failed.returncode == 2 and "not TOML" in failed.stderr
    assert "Traceback" not in failed.stderr


@pytest.mark.parametrize("agent", ["codex", "gemini", "pi"])
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"x" * (1024 * 1024 + 1), "larger than 1048576 bytes"),
        (b"\xff\xfe not text", "not"),  # UTF-8 (codex, gemini) or JSON with comments (pi)
        (None, "cannot read"),
    ],
)
def test_each_file_importer_refuses_a_bad_file_in_one_line(
    tmp_path: Path, agent: str, content: bytes | None, message: str
) -> None:
    """The one bounded reader the importers share: too large, not text, unreadable —
    exit 2, one line, nothing written."""
    path = tmp_path / "in.file"
    if content is not None:
        path.write_bytes(content)
    done = subprocess.run(
        [sys.executable, "-m", "askgate", "import", agent, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
