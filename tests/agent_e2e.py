"""The one end-to-end driver for the real agent CLIs (Claude Code, Codex, Gemini): a git
project, one run of the CLI in its own process group, and what askgate logged.

Each test module keeps only what is its agent's own: how the hook is registered, the CLI's
arguments and environment, and how the fake model server is scripted (tests/fake_*.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class AgentRun:
    returncode: int
    stdout: str
    stderr: str


def git_project(tmp_path: Path, name: str = "proj") -> Path:
    """A fresh project directory that askgate sees as a project root."""
    project = tmp_path / name
    project.mkdir()
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    else:  # askgate finds the project root by the .git entry alone
        (project / ".git").mkdir()
    return project


def run_agent(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float, name: str
) -> AgentRun:
    """Run the agent CLI to completion in its own process group: on a timeout the CLI,
    its shell and askgate's hook all go down together, and the test fails with its stderr."""
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"{name} did not finish in {timeout} s; stderr: {stderr[-2000:]}")
    return AgentRun(proc.returncode, stdout, stderr)


def read_review_log(path: Path) -> list[dict[str, Any]]:
    """askgate's review log (one JSON object a line), [] when nothing was written."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
