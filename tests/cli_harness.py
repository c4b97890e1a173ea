"""Running the real `askgate` command for tests: an isolated environment per test, runs
started side by side, and the assertions every CLI test shares.

Every run gets its own HOME, XDG_CONFIG_HOME, XDG_DATA_HOME, managed-policy path and review
log under the test's tmp_path, and a strict UTF-8 stdout (as on a typical desktop locale).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ASKGATE = [sys.executable, "-m", "askgate.cli"]
ACTIONS = {"allow", "deny", "ask"}

EVERYDAY = """\
default = "ask"

[bash]
"git status *" = "allow"
"git diff *" = "allow"
"git *" = "ask"
"ls *" = "allow"
"grep *" = "allow"
"cd *" = "allow"
"echo *" = "allow"
"rm *" = "ask"
"rm -rf /*" = { action = "deny", reason = "recursive delete of an absolute path" }
"* --force *" = "deny"
"git push *" = "allow"

[tool]
"Read" = "allow"
"""

Arg = str | bytes


@dataclass
class Result:
    args: Sequence[Arg]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def __str__(self) -> str:
        return f"{self.args!r} -> {self.returncode}\nstdout: {self.stdout}\nstderr: {self.stderr}"


@dataclass
class Call:
    args: Sequence[Arg]
    stdin: bytes | None = None
    env: dict[str, str] = field(default_factory=dict)


class Cli:
    """Runs `python -m askgate.cli` in an environment isolated under `tmp`."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.config_home = tmp / "xdg-config"
        self.data_home = tmp / "xdg-data"
        self.managed = tmp / "managed" / "policy.toml"  # absent unless a test writes it
        for directory in (self.home, self.config_home, self.data_home, self.managed.parent):
            directory.mkdir(parents=True)
        self.user_file = self.config_home / "askgate" / "policy.toml"
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("ASKGATE_") and k not in ("COLUMNS", "LINES")
        }
        self.env = {
            **base,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config_home),
            "XDG_DATA_HOME": str(self.data_home),
            "ASKGATE_MANAGED_POLICY": str(self.managed),
            "ASKGATE_AUDIT_LOG": str(tmp / "review.jsonl"),
            "PYTHONIOENCODING": "utf-8:strict",
        }

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    def project(self, name: str = "proj", policy: str | None = None) -> Path:
        root = self.tmp / name
        (root / ".git").mkdir(parents=True)
        (root / "src").mkdir()
        if policy is not None:
            (root / ".askgate").mkdir()
            (root / ".askgate" / "policy.toml").write_text(policy)
        return root

    def run(self, *args: Arg, stdin: bytes | None = None, env: dict[str, str] | None = None):
        return self._run(Call(args, stdin, env or {}))

    def run_many(self, calls: Sequence[Call]) -> list[Result]:
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            return list(pool.map(self._run, calls))

    def _run(self, call: Call) -> Result:
        proc = subprocess.run(
            [*ASKGATE, *call.args],
            input=call.stdin if call.stdin is not None else b"",
            capture_output=True,
            env={**self.env, **call.env},
            cwd=self.tmp,
            timeout=60,
        )
        # Output must be valid UTF-8 whatever the input was: decoding strictly checks it.
        return Result(call.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def assert_rule_shape(rule: Any) -> None:
    assert rule is None or isinstance(rule, dict)
    if rule is not None:
        assert {"surface", "pattern", "action", "origin"} <= rule.keys()
        assert rule["action"] in ACTIONS


def assert_check_shape(out: dict[str, Any], *, bash: bool) -> None:
    assert out["action"] in ACTIONS
    assert isinstance(out["reason"], str) and out["reason"]
    assert_rule_shape(out["rule"])
    if not bash:
        assert "units" not in out
        return
    assert isinstance(out["units"], list)
    for unit in out["units"]:
        assert isinstance(unit["command"], str)
        assert unit["action"] in ACTIONS
        assert_rule_shape(unit["rule"])


def assert_clean_error(result: Result, *needles: str) -> None:
    """Exit 2, exactly one `askgate: error:` line on stderr, no traceback, no answer."""
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result
    assert lines[0].startswith("askgate: error: "), result
    assert len(lines[0]) <= 700, result
    assert "allow" not in result.stdout, result
    for needle in needles:
        assert needle in lines[0], (needle, result)


def assert_ask(result: Result) -> dict[str, Any]:
    assert result.returncode == 0, result
    assert "Traceback" not in result.stderr, result
    out = result.json()
    assert out["action"] == "ask", result
    return out
