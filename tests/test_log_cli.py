"""`askgate log`: the real command reading a real review log written by a real Gate."""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from askgate.audit import AuditLog
from askgate.gate import Gate
from askgate.log_cli import parse_since
from askgate.outcome import ToolRequest
from askgate.prompters.base import PromptState
from conftest import ScriptedPrompter, policy_for
from unprivileged import run_as_nobody

ASKGATE = [sys.executable, "-m", "askgate.cli"]


def _env(tmp_path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LANG": "C.UTF-8",
    }
    env.update(extra)
    return env


def askgate_log(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ASKGATE, "log", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, **env),
        timeout=60,
        check=False,
    )


@pytest.fixture
def review_log(project, home, tmp_path):
    path = tmp_path / "review.jsonl"
    rules = [("bash", "git status", "allow"), ("bash", "rm *", "deny")]
    gate = Gate(
        policy_for(project, home, rules),
        prompter=ScriptedPrompter([PromptState.APPROVED]),
        audit=AuditLog(str(path)),
    )
    for command in ("git status", "rm -rf build", "make '[red]x[/]' \x1b[2J"):
        gate.decide(
            ToolRequest(tool="Bash", input={"command": command}, cwd=str(project), agent="explore")
        )
    gate.close()
    return path


def _one_error_line(result: subprocess.CompletedProcess[str], text: str) -> None:
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("askgate: error: "), result.stderr
    assert text in lines[0]
    assert "Traceback" not in result.stderr


def test_a_table_of_recent_decisions(tmp_path, review_log) -> None:
    result = askgate_log(tmp_path, "--file", str(review_log))
    assert result.returncode == 0, result
    out = result.stdout
    assert "git status" in out and "policy_allow" in out
    assert "rm -rf build" in out and "policy_deny" in out
    assert "user_approved" in out and "explore" in out
    # Hostile text is shown as typed, never as markup or a terminal sequence.
    assert "[red]x[/]" in out and "\x1b" not in out and "\\x1b[2J" in out
    assert result.stderr == ""


def test_the_default_path_is_the_review_log(tmp_path, review_log) -> None:
    result = askgate_log(tmp_path, ASKGATE_AUDIT_LOG=str(review_log))
    assert result.returncode == 0 and "rm -rf build" in result.stdout


def test_json_and_limit(tmp_path, review_log) -> None:
    result = askgate_log(tmp_path, "--file", str(review_log), "--json", "--limit", "2")
    assert result.returncode == 0, result
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["value"] for r in records] == ["rm -rf build", "make '[red]x[/]' \x1b[2J"]
    assert [r["resolution"] for r in records] == ["policy_deny", "user_approved"]
    every = askgate_log(tmp_path, "--file", str(review_log), "--json", "--limit", "0")
    assert len(every.stdout.splitlines()) == 3


def test_since_a_duration_or_a_date(tmp_path, review_log) -> None:
    recent = askgate_log(tmp_path, "--file", str(review_log), "--json", "--since", "7d")
    assert len(recent.stdout.splitlines()) == 3
    tomorrow = (dt.date.today() + dt.timedelta(days=2)).isoformat()
    future = askgate_log(tmp_path, "--file", str(review_log), "--since", tomorrow)
    assert future.returncode == 0 and future.stdout == ""
    assert "no decisions" in future.stderr


def test_parse_since() -> None:
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
    assert parse_since("7d", now=now) == now - dt.timedelta(days=7)
    assert parse_since("90s", now=now) == now - dt.timedelta(seconds=90)
    assert parse_since("2026-11-30T09:00:00+00:00") == dt.datetime(2026, 11, 30, 9, tzinfo=dt.UTC)
    assert parse_since("2026-11-30").tzinfo is not None  # local midnight


def test_bad_usage_is_one_line(tmp_path, review_log) -> None:
    _one_error_line(askgate_log(tmp_path, "--file", str(review_log), "--since", "soon"), "--since")
    _one_error_line(askgate_log(tmp_path, "--file", str(review_log), "--limit", "-1"), "--limit")
    _one_error_line(askgate_log(tmp_path, "--bogus"), "unrecognized")
    _one_error_line(askgate_log(tmp_path, "--file", ""), "--file is empty")


def test_a_missing_log_is_a_clear_error(tmp_path) -> None:
    _one_error_line(askgate_log(tmp_path, "--file", str(tmp_path / "nope.jsonl")), "no review log")
    _one_error_line(askgate_log(tmp_path), "no review log")  # default path, nothing yet


def test_a_directory_or_fifo_is_not_a_log(tmp_path) -> None:
    _one_error_line(askgate_log(tmp_path, "--file", str(tmp_path)), "is a directory")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _one_error_line(askgate_log(tmp_path, "--file", str(fifo)), "not a regular file")


def test_an_unreadable_log_is_a_clear_error(review_log, capsys) -> None:
    from askgate.log_cli import main as log_main

    data = review_log.read_bytes()

    def check(scratch: Path) -> None:  # root reads any file: checked as an ordinary user
        unreadable = scratch / "review.jsonl"
        unreadable.write_bytes(data)
        unreadable.chmod(0)
        code = log_main(["--file", str(unreadable)])
        out, err = capsys.readouterr()
        _one_error_line(subprocess.CompletedProcess([], code, out, err), "cannot read")

    run_as_nobody(check)


def test_corrupt_lines_are_skipped_counted_and_reported(tmp_path, review_log) -> None:
    good = review_log.read_bytes()
    review_log.write_bytes(b"{not json\n" + good + b'[1, 2]\n\xff\xfe\n{"timestamp": 7}\n')
    result = askgate_log(tmp_path, "--file", str(review_log))
    assert result.returncode == 0, result
    assert "rm -rf build" in result.stdout
    assert "skipped 4 corrupt line(s)" in result.stderr and "line 1" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_oversized_line_is_counted_not_loaded(tmp_path, review_log) -> None:
    good = review_log.read_bytes()
    review_log.write_bytes(good + b'{"timestamp": "' + b"x" * (5 * 1024 * 1024) + b'"}\n' + good)
    result = askgate_log(tmp_path, "--file", str(review_log), "--json", "--limit", "0")
    assert result.returncode == 0, result
    assert len(result.stdout.splitlines()) == 6
    assert "skipped 1 corrupt line(s)" in result.stderr and "line 4" in result.stderr


def test_an_entirely_corrupt_log_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b"hello\n\x00\x01\n")
    _one_error_line(askgate_log(tmp_path, "--file", str(path)), "is not a review log")


def test_an_empty_log_prints_nothing_and_succeeds(tmp_path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    result = askgate_log(tmp_path, "--file", str(path))
    assert result.returncode == 0 and result.stdout == "" and "no decisions" in result.stderr


# --------------------------------------------------------------- colour conventions


def _run_in_pty(args: list[str], env: dict[str, str]) -> bytes:
    """Run with stdout on a pseudo-terminal; return everything it printed."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(args, stdout=slave, stderr=slave, env=env)
    finally:
        os.close(slave)
    output = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(master)
        proc.wait(timeout=60)
    return output


def test_colour_on_a_terminal_unless_no_color(tmp_path, review_log) -> None:
    args = [*ASKGATE, "log", "--file", str(review_log)]
    coloured = _run_in_pty(args, _env(tmp_path, TERM="xterm-256color", COLUMNS="200"))
    assert b"\x1b[" in coloured  # the check below can fail
    plain = _run_in_pty(args, _env(tmp_path, TERM="xterm-256color", COLUMNS="200", NO_COLOR="1"))
    assert b"rm -rf build" in plain and b"\x1b[" not in plain


def test_no_colour_in_a_pipe_even_with_force_color(tmp_path, review_log) -> None:
    result = askgate_log(tmp_path, "--file", str(review_log), FORCE_COLOR="1", TERM="xterm")
    assert result.returncode == 0 and "\x1b" not in result.stdout
