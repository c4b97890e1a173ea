"""The scratch world of the bash red-team tests (rounds 3 to 5): a home with credentials,
a Python project in it (a git repository with one commit when git is installed), and
the policies the tests decide under — and a way to run a command in real bash there.

Policies (pick with `World(base, policies=…)`):
- `init-off`: what `askgate init --yes --sandbox off` writes for this project;
- `init-on`: the same with the sandbox required (`sandboxed-project`);
- `read-only`: the read-only profile alone;
- `permissive`: default allow with a few denies (PERMISSIVE);
- `example`: examples/policy.toml.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Surface
from askgate.profiles.detect import detect_profiles, starter_policy

BASH = shutil.which("bash")
GIT = shutil.which("git")
JQ = shutil.which("jq")
PERL = shutil.which("perl")
REPO = Path(__file__).resolve().parent.parent
TOOLS = str(Path(sys.executable).parent)  # pytest, ruff, mypy of this virtualenv

ENV_SECRET = "hunter2"
SSH_KEY = "PRIVATE-KEY"
AWS_KEY = "AWS-SECRET-VALUE"
DOCKER_TOKEN = "DOCKER-REGISTRY-TOKEN"

PERMISSIVE = """\
default = "allow"
[read]
"~/.ssh/**" = "deny"
"**/.env*" = "deny"
[write]
"~/.bashrc" = "deny"
[bash]
"rm -rf *" = "deny"
"""

UNSANDBOXED = ("init-off", "read-only", "permissive", "example")
ROUND3 = ("permissive", "init-off", "init-on", "example")


class World:
    """A scratch home with credentials and a Python project in it, and the policies."""

    def __init__(self, base: Path, policies: Iterable[str] = UNSANDBOXED) -> None:
        self.home = base / "home"
        self.project = self.home / "proj"
        for directory in (
            self.home / ".ssh", self.home / ".aws", self.home / ".docker", self.project / "src",
        ):  # fmt: skip
            directory.mkdir(parents=True, exist_ok=True)
        (self.home / ".ssh" / "id_rsa").write_text(SSH_KEY + "\n")
        (self.home / ".aws" / "credentials").write_text(
            "[default]\naws_secret_access_key=" + AWS_KEY + "\n"
        )
        (self.home / ".docker" / "config.json").write_text(
            '{"auths": {"r": {"auth": "' + DOCKER_TOKEN + '"}}}\n'
        )
        (self.home / ".bashrc").write_text("# rc\n")
        (self.project / ".env").write_text("SECRET=" + ENV_SECRET + "\n")
        (self.project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
        (self.project / "x.json").write_text('{"env": 1}\n')
        (self.project / "src" / "app.py").write_text("print('hi')\n")
        self.env = {
            "HOME": str(self.home),
            "PATH": TOOLS + ":/usr/local/bin:/usr/bin:/bin",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "ASKGATE_MANAGED_POLICY": str(base / "no-managed-policy.toml"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "a",
            "GIT_AUTHOR_EMAIL": "a@example.invalid",
            "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@example.invalid",
        }
        if GIT is not None and BASH is not None:
            self.bash("git init -q . && git commit -q --allow-empty -m init")
        (self.project / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
        chosen = [name for name, _ in detect_profiles(str(self.project))]
        texts = {
            "init-off": lambda: starter_policy(chosen),
            "init-on": lambda: starter_policy(
                ["sandboxed-project" if n == "project-write" else n for n in chosen],
                sandboxed=True,
            ),
            "read-only": lambda: starter_policy(["read-only"]),
            "permissive": lambda: PERMISSIVE,
        }
        self.policies: dict[str, Policy] = {}
        for name in policies:
            if name == "example":
                self.policies[name] = self.load(REPO / "examples" / "policy.toml")
                continue
            path = base / f"{name}.toml"
            path.write_text(texts[name]())
            self.policies[name] = self.load(path)
        for name, policy in self.policies.items():
            assert not policy.errors, (name, policy.errors)

    def load(self, path: Path) -> Policy:
        return Policy.load(str(self.project), config_files=[str(path)], env=self.env)

    def answers(self, command: str) -> dict[str, Action]:
        return {
            name: policy.decide(Surface.BASH, command, cwd=str(self.project)).action
            for name, policy in self.policies.items()
        }

    def not_allowed(self, command: str, policies: Iterable[str] | None = None) -> None:
        """Assert that no policy named (default: all of this world's) allows `command`."""
        got = self.answers(command)
        allowed = [name for name in policies or got if got[name] is Action.ALLOW]
        assert not allowed, (command, got)

    def bash(self, command: str, **extra_env: str) -> str:
        """Run the command in real bash in the project, with this world's HOME."""
        assert BASH is not None
        result = subprocess.run(
            [BASH, "--norc", "--noprofile", "-c", command],
            cwd=self.project,
            env={**self.env, "LC_ALL": "C", **extra_env},
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        return result.stdout + result.stderr
