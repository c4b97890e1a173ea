"""DESIGN.md's examples, end to end: real policy files, discovery, trust, the engine."""

from __future__ import annotations

import pytest

from askgate.policy.config import trust_project
from askgate.policy.engine import Policy
from askgate.policy.model import Action


@pytest.fixture
def world(tmp_path):
    """A home with user config, a git project, and a managed policy path."""
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (project / ".askgate").mkdir()
    (home / ".config" / "askgate").mkdir(parents=True)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "managed.toml"),
    }

    def write(scope: str, text: str) -> None:
        path = {
            "user": home / ".config" / "askgate" / "policy.toml",
            "project": project / ".askgate" / "policy.toml",
            "managed": tmp_path / "managed.toml",
        }[scope]
        path.write_text(text)

    def decide(surface: str, value: str, agent: str | None = None) -> Action:
        policy = Policy.load(str(project), agent=agent, env=env)
        assert not policy.errors, policy.errors
        return policy.decide(surface, value, cwd=str(project), agent=agent).action

    return write, decide, project, env


USER_POLICY = """
default = "ask"
[bash]
"git *" = "allow"
"git push *" = "deny"
"git push origin feature-* *" = "allow"
"* --force *" = "deny"
"rm *" = "deny"
"rm -rf ./build" = "allow"
"cd *" = "allow"
"ls *" = "allow"
"grep *" = "allow"
[read]
"**" = "allow"
".env*" = "deny"
".env.example" = "allow"
[write]
"src/**" = "allow"
"build/**" = "allow"
[agent.reviewer.write]
"**" = "deny"
"""

CASES = [
    # (surface, value, agent, expected, why)
    ("bash", "git status", None, "allow", "broad allow"),
    ("bash", "git push origin main", None, "deny", "exception nested inside 'git *'"),
    ("bash", "git push origin feature-x", None, "allow", "exception inside the exception"),
    ("bash", "git push origin feature-x --force", None, "deny", "cross-cutting deny stands"),
    ("bash", "rm -rf ./build", None, "allow", "narrow allow inside 'rm *'"),
    ("bash", "rm -rf ./src", None, "deny", "the rest of 'rm *'"),
    ("bash", "git status && git diff", None, "allow", "every unit allowed"),
    ("bash", "cd src && ls", None, "allow", "cd and ls"),
    ("bash", "ls | grep x", None, "allow", "pipeline"),
    ("bash", "git status && rm -rf /", None, "deny", "one denied unit"),
    ("bash", "make", None, "ask", "default"),
    ("read", ".env", None, "deny", ".env* deny"),
    ("read", ".env.example", None, "allow", ".env.example is narrower"),
    ("read", "src/main.py", None, "allow", "read **"),
    ("write", "src/main.py", None, "allow", "write src/**"),
    ("write", "src/main.py", "reviewer", "deny", "per-agent deny beats a user allow"),
    ("write", "README.md", None, "ask", "no write rule"),
    ("bash", "cat .env", None, "deny", "path deny applies inside bash"),
    ("bash", "grep secret .env.example", None, "allow", "read allow on a narrower path"),
    ("bash", "echo hi > src/x.txt", None, "allow", "redirect is a write under src/**"),
    ("bash", "echo hi > README.md", None, "ask", "redirect write outside the allow"),
]


@pytest.mark.parametrize(("surface", "value", "agent", "expected", "why"), CASES)
def test_design_examples(world, surface, value, agent, expected, why) -> None:
    write, decide, _, _ = world
    write("user", USER_POLICY.replace('"ls *" = "allow"', '"ls *" = "allow"\n"echo *" = "allow"'))
    assert decide(surface, value, agent) == Action(expected), why


def test_untrusted_project_only_tightens(world) -> None:
    write, decide, project, env = world
    write("user", '[bash]\n"git *" = "allow"\n')
    write("project", '[bash]\n"git push *" = "deny"\n"make *" = "allow"\n')
    assert decide("bash", "git push x") == Action.DENY  # project deny loads untrusted
    assert decide("bash", "make test") == Action.ASK  # project allow does not
    assert decide("bash", "git status") == Action.ALLOW
    trust_project(str(project), env=env)
    assert decide("bash", "make test") == Action.ALLOW
    write("project", '[bash]\n"git push *" = "deny"\n"make *" = "allow"\n"curl *" = "allow"\n')
    assert decide("bash", "make test") == Action.ASK  # editing the file revoked trust


def test_untrusted_ask_overrides_nothing(world) -> None:
    write, decide, _, _ = world
    write("user", '[bash]\n"rm *" = "deny"\n')
    write("project", '[bash]\n"rm -rf ./build" = "ask"\n')
    assert decide("bash", "rm -rf ./build") == Action.DENY


def test_managed_floor(world) -> None:
    write, decide, project, env = world
    write("managed", '[bash]\n"curl *" = "deny"\n')
    write("user", '[bash]\n"curl -s https://internal *" = "allow"\n')
    write("project", '[bash]\n"curl *" = "allow"\n')
    trust_project(str(project), env=env)
    assert decide("bash", "curl -s https://internal/x") == Action.DENY
    assert decide("bash", "curl x") == Action.DENY


def test_project_overrides_users_ask_with_narrower_rule(world) -> None:
    write, decide, project, env = world
    write("user", '[bash]\n"npm *" = "ask"\n')
    write("project", '[bash]\n"npm test *" = "allow"\n')
    trust_project(str(project), env=env)
    assert decide("bash", "npm test") == Action.ALLOW
    assert decide("bash", "npm install") == Action.ASK


def test_trusted_project_cannot_lift_users_deny(world) -> None:
    # Issue 22, principle 14: a user's deny is final over project files.
    write, decide, project, env = world
    write("user", '[bash]\n"npm *" = "deny"\n')
    write("project", '[bash]\n"npm test *" = "allow"\n')
    trust_project(str(project), env=env)
    assert decide("bash", "npm test") == Action.DENY


def test_higher_scope_cannot_be_lifted_by_lower_narrower(world) -> None:
    write, decide, project, env = world
    write("user", '[bash]\n"docker run *" = "allow"\n')
    write("project", '[bash]\n"docker *" = "ask"\n')
    trust_project(str(project), env=env)
    assert decide("bash", "docker run x") == Action.ASK


def test_broken_file_clamps_allows(world) -> None:
    write, _, project, env = world
    write("user", '[bash]\n"git *" = "allow"\n')
    write("project", '[bash]\n"git *" = "nope"\n')
    policy = Policy.load(str(project), env=env)
    assert policy.errors
    decision = policy.decide("bash", "git status", cwd=str(project))
    assert decision.action is Action.ASK and decision.clamped
