"""What the framework adapter tests share: a project with a policy, tools with side effects
that prove whether they ran, and a Guard on a real Gate.

The tools: `shell(command)` runs the command in real bash in the project (so `touch ran`
leaves a file), `get_weather(city)` is harmless, `delete_db()` leaves `db-deleted` behind.
The policy: `echo *` and `touch *` allowed, `rm *` denied, `make *` asked, `get_weather`
allowed, `delete_db` denied, everything else asked.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from askgate.audit import AuditLog
from askgate.frameworks.core import Guard
from askgate.gate import Gate
from conftest import policy_for

RULES = [
    ("bash", "echo *", "allow"),
    ("bash", "touch *", "allow"),
    ("bash", "rm *", "deny", {"reason": "no deleting here"}),
    ("bash", "make *", "ask"),
    ("write", "**", "allow"),  # relative: inside the project
    ("tool", "get_weather", "allow"),
    ("tool", "delete_db", "deny", {"reason": "databases stay"}),
]


@dataclass
class World:
    project: Path
    guard: Guard
    log: Path

    def ran(self, name: str) -> bool:
        return (self.project / name).exists()

    def records(self) -> list[dict]:
        import json

        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def make_world(tmp_path: Path, client: str, prompter=None) -> World:
    project = tmp_path / "project"
    project.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    log = tmp_path / "review.jsonl"
    gate = Gate(
        policy_for(project, home, RULES), prompter=prompter, audit=AuditLog(str(log), client=client)
    )
    return World(project, Guard(gate, client=client, cwd=str(project), session="s1"), log)


def run_shell(project: Path, command: str) -> str:
    """The shell tool's body: real bash in the project."""
    done = subprocess.run(
        ["bash", "-c", command], cwd=project, capture_output=True, text=True, timeout=60
    )
    return done.stdout + done.stderr


def delete_db(project: Path) -> str:
    (project / "db-deleted").write_text("gone")
    return "deleted"


def require(module: str, extra: str) -> None:
    """The framework's real wheel must be installed (`askgate[EXTRA]`, in the test
    environment through the `frameworks` extra): missing is a failure in CI, a skip
    elsewhere."""
    import importlib
    import os

    try:
        importlib.import_module(module)
    except ImportError as exc:
        why = f"{module} is not installed (pip install askgate[{extra}]): {exc}"
        if os.environ.get("CI"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why, allow_module_level=True)
