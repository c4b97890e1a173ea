"""The Landlock scope helper the prepared wrapper execs bwrap through (scope_exec.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from askgate.sandbox import landlock
from askgate.sandbox.scope_exec import EXIT_FAILED, program

pytestmark = pytest.mark.skipif(
    program() is None or landlock.abi_version() < landlock.SCOPE_ABI,
    reason="no helper for this architecture, or Landlock ABI < 6",
)


@pytest.fixture
def helper(tmp_path: Path) -> str:
    code = program()
    assert code is not None
    path = tmp_path / "scope-exec"
    path.write_bytes(code)
    path.chmod(0o500)
    return str(path)


def test_it_execs_its_arguments_with_the_environment(helper: str) -> None:
    done = subprocess.run(
        [helper, "/usr/bin/env"], env={"A": "1", "B": "two"}, capture_output=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, b"A=1\nB=two\n")


def test_nothing_to_exec_is_exit_125(helper: str) -> None:
    assert subprocess.run([helper], check=False).returncode == EXIT_FAILED
    missing = subprocess.run([helper, "/nonexistent/program"], check=False)
    assert missing.returncode == EXIT_FAILED


def test_an_abstract_socket_made_outside_is_out_of_reach(helper: str) -> None:
    name = f"\0askgate-scope-exec-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(name)
        server.listen(1)
        probe = (
            "import socket\ns = socket.socket(socket.AF_UNIX)\n"
            f"try:\n    s.connect({name!r}); print('CONNECTED')\n"
            "except OSError as e: print('refused', e.errno)\n"
        )
        outside = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        inside = subprocess.run(
            [helper, sys.executable, "-c", probe], capture_output=True, text=True, check=False
        )
    assert outside.stdout.strip() == "CONNECTED"  # the probe itself works
    assert inside.stdout.strip().startswith("refused"), inside


def test_no_signal_reaches_a_process_outside(helper: str) -> None:
    done = subprocess.run(
        [helper, "/bin/sh", "-c", f"kill -0 {os.getpid()} && echo SIGNALLED"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "SIGNALLED" not in done.stdout and done.returncode != 0
