"""`askgate pi run` as a user runs it, against the protocol worker script."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from waits import SAFETY_TIMEOUT

WORKER = Path(__file__).with_name("pi_rpc_worker.py")


def askgate_pi(
    tmp_path: Path, *args: str, timeout: float = SAFETY_TIMEOUT
) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    return subprocess.run(
        [sys.executable, "-m", "askgate.cli", "pi", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def worker_command(*args: str) -> str:
    return shlex.join([sys.executable, str(WORKER), *args])


def test_json_summary_of_a_cancelled_dialog(tmp_path):
    side = tmp_path / "side"
    result = askgate_pi(
        tmp_path,
        "run",
        "--json",
        "--pi-command",
        worker_command("--dialog", "confirm", "--side-effect", str(side), "--line", "1.6"),
        "do it",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["ok"] is True
    assert summary["finalText"] == "All done\u2028with a line separator"
    assert summary["dialogs"] == "cancel"
    counters = summary["counters"]
    for key in (
        "uiRequestsDrained",
        "drainedByMethod",
        "dialogsCancelled",
        "dialogsBlocked",
        "dialogsAsked",
        "malformedFrames",
        "responsesMatched",
        "responsesUnmatched",
    ):
        assert key in counters
    assert counters["dialogsCancelled"] == 1
    assert not side.exists()


def test_progress_and_final_text_without_json(tmp_path):
    result = askgate_pi(
        tmp_path, "run", "--pi-command", worker_command("--text", "the answer"), "go"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "the answer"
    assert "▶ bash" in result.stderr
    assert "uiRequestsDrained=3" in result.stderr


def test_worker_failure_exits_non_zero_with_its_stderr(tmp_path):
    result = askgate_pi(tmp_path, "run", "--pi-command", worker_command("--crash"), "go")
    assert result.returncode == 1
    assert "exited with status 3" in result.stderr
    assert "worker crashed" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_pi_binary_is_one_line(tmp_path):
    result = askgate_pi(tmp_path, "run", "--pi-command", str(tmp_path / "nope"), "go")
    assert result.returncode == 1
    assert "cannot start" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_dialog_policy_falls_back_to_cancel(tmp_path):
    side = tmp_path / "side"
    result = askgate_pi(
        tmp_path,
        "run",
        "--json",
        "--dialogs",
        "confirm-all",
        "--pi-command",
        worker_command("--dialog", "confirm", "--side-effect", str(side)),
        "go",
    )
    assert result.returncode == 0
    assert "using cancel" in result.stderr
    assert json.loads(result.stdout)["dialogs"] == "cancel"
    assert not side.exists()


def test_ask_without_a_human_cancels(tmp_path):
    # No terminal, not a subagent: nobody can answer, so the dialog is cancelled.
    side = tmp_path / "side"
    result = subprocess.run(
        [
            "setsid",
            sys.executable,
            "-m",
            "askgate.cli",
            "pi",
            "run",
            "--json",
            "--dialogs",
            "ask",
            "--pi-command",
            worker_command("--dialog", "permission", "--side-effect", str(side)),
            "go",
        ],
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    counters = json.loads(result.stdout)["counters"]
    assert counters["dialogsCancelled"] == 1
    assert counters["dialogsAsked"] == 0  # nobody could be reached: nobody was asked
    assert not side.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--pi-command", "", "go"], "--pi-command is empty"),
        (["run", "--pi-command", "pi 'unbalanced", "go"], "bad --pi-command"),
        (["run"], "required"),
        (["run", "--prompt-timeout", "0", "go"], "must be positive"),
        (["run", "--cwd", "/no/such/dir", "go"], "not a directory"),
        (["run", "--stop-grace", "-1", "go"], "--stop-grace"),
        (["run", "--transport", "stdio", "--steer-stdin", "go"], "needs the rpc transport"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(tmp_path, args, message):
    result = askgate_pi(tmp_path, *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_help(tmp_path):
    result = askgate_pi(tmp_path, "run", "--help")
    assert result.returncode == 0
    assert "--dialogs" in result.stdout


class Terminal:
    """A pseudo-terminal that becomes the controlling terminal of the askgate process, so
    the terminal prompter (which opens /dev/tty) reaches the "human" typing here."""

    def __init__(self) -> None:
        import pty

        self.master, self.slave = pty.openpty()
        self.slave_name = os.ttyname(self.slave)
        self.seen = b""

    def preexec(self) -> None:  # runs in the child: new session, this tty as its terminal
        os.setsid()
        import fcntl
        import termios

        fcntl.ioctl(os.open(self.slave_name, os.O_RDWR), termios.TIOCSCTTY, 0)

    def wait_for(self, text: bytes, timeout: float = SAFETY_TIMEOUT) -> None:
        import select

        deadline = time.monotonic() + timeout
        while text not in self.seen:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"the terminal never showed {text!r}: {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                self.seen += os.read(self.master, 4096)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


@pytest.mark.parametrize(("typed", "ran", "value"), [("1\n", True, "Yes"), ("3\n", False, "No")])
def test_ask_reaches_the_human_at_the_terminal(tmp_path, typed, ran, value):
    side = tmp_path / "side"
    log = tmp_path / "in.jsonl"
    terminal = Terminal()
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "askgate.cli",
                "pi",
                "run",
                "--json",
                "--dialogs",
                "ask",
                "--pi-command",
                worker_command(
                    "--dialog", "permission", "--side-effect", str(side), "--log", str(log)
                ),
                "go",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=terminal.preexec,
            env={**os.environ, "HOME": str(tmp_path)},
        )
        terminal.wait_for(b"4) No")
        assert b"Permission Required" in terminal.seen
        terminal.type(typed)
        out, err = proc.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        terminal.close()
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["counters"]["dialogsAsked"] == 1
    assert side.exists() is ran
    answers = [json.loads(line) for line in log.read_text().splitlines()]
    assert [a.get("value") for a in answers if a["type"] == "extension_ui_response"] == [value]
