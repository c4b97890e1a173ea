"""Conventions a user expects of a command (issue 12, part 4): --version, colour only on
a terminal and never with NO_COLOR, and every command's exit codes in its --help."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import askgate
from askgate.cli import main
from askgate.report import colour_enabled

ASKGATE = [sys.executable, "-m", "askgate.cli"]


def _run(tmp_path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "managed.toml"),
        "LANG": "C.UTF-8",
        **extra,
    }
    return subprocess.run(
        [*ASKGATE, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_version(tmp_path, capsys) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"askgate {askgate.__version__}\n"
    result = _run(tmp_path, "--version")
    assert (result.returncode, result.stdout) == (0, f"askgate {askgate.__version__}\n")


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["check"],
        ["explain"],
        ["config"],
        ["schema"],
        ["trust"],
        ["untrust"],
        ["log"],
        ["forward"],
        ["forward", "serve"],
        ["forward", "status"],
        ["hook"],
    ],
)
def test_every_command_documents_its_exit_codes_in_help(tmp_path, command) -> None:
    result = _run(tmp_path, *command, "--help")
    assert result.returncode == 0, result
    assert "exit codes:" in result.stdout
    for code in ("0", "2"):
        assert any(line.strip().startswith(code) for line in result.stdout.splitlines())


def test_colour_rules() -> None:
    assert colour_enabled({}, is_terminal=True)
    assert not colour_enabled({"NO_COLOR": "1"}, is_terminal=True)
    assert not colour_enabled({}, is_terminal=False)
    assert not colour_enabled({"FORCE_COLOR": "1"}, is_terminal=False)
    assert colour_enabled({"NO_COLOR": ""}, is_terminal=True)  # empty means unset


def test_explain_in_a_pipe_has_no_colour_even_with_force_color(tmp_path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('[bash]\n"git *" = "allow"\n"rm *" = "deny"\n')
    result = _run(
        tmp_path,
        "explain",
        "--config",
        str(policy),
        "bash",
        "git status && rm x",
        FORCE_COLOR="1",
        TERM="xterm-256color",
    )
    assert result.returncode == 0, result
    assert "WINNER" in result.stdout and "\x1b" not in result.stdout
