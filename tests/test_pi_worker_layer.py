"""Seed 004's worker layer in `askgate pi run`: the two transports and their env names, the
dialog policy's env alias, the rpc → stdio fallback and its double-execution guard, typed
steering, and one stop sequence (stdin end → wait → SIGKILL, once) on every stop path.

Driven against tests/pi_rpc_worker.py (pi's documented rpc and JSON-mode protocols), whose
log shows what it received; the real pi runs in test_e2e_pi_rpc.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from askgate.adapters.pi_rpc.runner import StopRequest, WorkerRun
from askgate.adapters.pi_rpc.ui_policy import DialogPolicy
from askgate.adapters.pi_rpc.worker import (
    DIALOG_ANSWER_ENV,
    TRANSPORT_ENV,
    Transport,
    WorkerOptions,
    is_early_rpc_failure,
    resolve_dialogs,
    resolve_transport,
    run_worker,
)
from askgate.prompters.base import NoPrompter
from test_pi_rpc_cli import WORKER, worker_command
from waits import SAFETY_TIMEOUT, wait_until, wait_until_async

PI_RUN = [sys.executable, "-m", "askgate.cli", "pi", "run"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    for name in (TRANSPORT_ENV, DIALOG_ANSWER_ENV):
        env.pop(name, None)
    env.update(extra)
    return env


def _pi(tmp_path: Path, *args: str, env: dict[str, str] | None = None, stdin=subprocess.DEVNULL):
    return subprocess.run(
        [sys.executable, "-m", "askgate.cli", "pi", *args],
        capture_output=True,
        text=True,
        env=env or _env(tmp_path),
        timeout=120,
        stdin=stdin,
    )


def _log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ------------------------------------------------------------------ resolving settings


def test_flag_beats_the_environment_which_beats_the_default() -> None:
    env = {TRANSPORT_ENV: "stdio", DIALOG_ANSWER_ENV: "block"}
    assert resolve_transport(None, env).value == "stdio"
    assert resolve_transport("rpc", env).value == "rpc"
    assert resolve_transport(None, {}).value == "rpc"
    assert resolve_dialogs(None, env).value == "block"
    assert resolve_dialogs("cancel", env).value == "cancel"
    assert resolve_dialogs(None, {}).value == "cancel"
    assert resolve_dialogs(None, {DIALOG_ANSWER_ENV: " BLOCK "}).value == "block"


@pytest.mark.parametrize("bad", ["yes", "confirm", "approve", "auto", "1", "block;rm"])
def test_an_invalid_dialog_answer_fails_safe_to_cancel_with_one_warning(bad: str) -> None:
    choice = resolve_dialogs(None, {DIALOG_ANSWER_ENV: bad})
    assert choice.value == "cancel"
    assert choice.warning is not None and "\n" not in choice.warning
    assert DIALOG_ANSWER_ENV in choice.warning


def test_the_dialog_answer_env_block_leaves_the_dialog_pending(tmp_path: Path) -> None:
    """The measured gap: with `block` set in the environment dialogs were still cancelled."""
    log = tmp_path / "in.jsonl"
    command = worker_command("--dialog", "confirm", "--log", str(log), "--ignore-eof")
    env = _env(tmp_path, **{DIALOG_ANSWER_ENV: "block"})
    proc = subprocess.Popen(
        [*PI_RUN, "--json", "--stop-grace", "0.2", "--pi-command", command, "go"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    try:
        # The dialog was opened (the worker now waits for an answer that never comes).
        wait_until(lambda: _log(log)[:1] != [], "the prompt to reach the worker", process=proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    summary = json.loads(out)
    assert summary["dialogs"] == "block"
    assert summary["counters"]["dialogsBlocked"] == 1
    assert summary["counters"]["dialogsCancelled"] == 0
    assert [f for f in _log(log) if f["type"] == "extension_ui_response"] == []
    assert proc.returncode == 128 + signal.SIGTERM


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--dialogs", "bogus"], {}),
        ([], {DIALOG_ANSWER_ENV: "bogus"}),
    ],
)
def test_an_unknown_dialog_policy_prints_exactly_one_warning_and_cancels(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    side = tmp_path / "side"
    command = worker_command("--dialog", "confirm", "--side-effect", str(side))
    result = _pi(
        tmp_path, "run", "--json", *args, "--pi-command", command, "go", env=_env(tmp_path, **env)
    )
    warnings = [line for line in result.stderr.splitlines() if "bogus" in line]
    assert len(warnings) == 1, result.stderr
    assert json.loads(result.stdout)["dialogs"] == "cancel"
    assert not side.exists()  # cancelled: the tool did not run


# ------------------------------------------------------------------ transports


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_stdio_transport_sends_the_prompt_on_stdin_to_json_mode(tmp_path: Path, how) -> None:
    log, side = tmp_path / "in.jsonl", tmp_path / "side"
    command = worker_command("--log", str(log), "--side-effect", str(side), "--text", "DONE")
    args = ["--transport", "stdio"] if how == "flag" else []
    env = _env(tmp_path, **({TRANSPORT_ENV: "stdio"} if how == "env" else {}))
    prompt = "@not-a-file -n begins like an option"
    result = _pi(tmp_path, "run", "--json", *args, "--pi-command", command, prompt, env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["transport"], summary["finalText"], summary["ok"]) == ("stdio", "DONE", True)
    assert _log(log) == [{"type": "stdin", "text": prompt}]  # read from stdin, whole
    assert side.read_text() == "ran\n"


def test_the_stdio_transport_has_no_dialogs_so_nothing_is_confirmed(tmp_path: Path) -> None:
    side = tmp_path / "side"
    command = worker_command("--dialog", "confirm", "--side-effect", str(side))
    result = _pi(
        tmp_path,
        "run",
        "--json",
        "--transport",
        "stdio",
        "--dialogs",
        "ask",
        "--pi-command",
        command,
        "go",
    )
    assert "stdio transport has no dialogs" in result.stderr
    assert not side.exists()  # pi without a UI: the gate's dialog is a no-op, it blocks


def test_an_unknown_transport_warns_once_and_uses_rpc(tmp_path: Path) -> None:
    command = worker_command("--text", "OK")
    env = _env(tmp_path, **{TRANSPORT_ENV: "carrier-pigeon"})
    result = _pi(tmp_path, "run", "--json", "--pi-command", command, "go", env=env)
    assert [line for line in result.stderr.splitlines() if "carrier-pigeon" in line] != []
    assert len([line for line in result.stderr.splitlines() if "carrier-pigeon" in line]) == 1
    assert json.loads(result.stdout)["transport"] == "rpc"


# ------------------------------------------------------------------ fallback


def test_an_early_rpc_failure_is_retried_once_on_stdio(tmp_path: Path) -> None:
    log = tmp_path / "in.jsonl"
    command = worker_command("--crash-rpc", "--log", str(log), "--text", "FROM STDIO")
    result = _pi(tmp_path, "run", "--json", "--pi-command", command, "go")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["transport"], summary["fallbackFrom"]) == ("stdio", "rpc")
    assert "exited with status 3" in summary["fallbackReason"]
    assert summary["finalText"] == "FROM STDIO"
    assert len([line for line in result.stderr.splitlines() if "retrying once" in line]) == 1
    assert [f["type"] for f in _log(log)] == ["prompt", "stdin"]  # one rpc try, one stdio


def test_a_failure_after_a_tool_started_is_never_retried(tmp_path: Path) -> None:
    """The double-execution guard: the tool may have run; running the prompt again could
    run it twice."""
    log, side = tmp_path / "in.jsonl", tmp_path / "side"
    command = worker_command("--crash-after-tool", "--log", str(log), "--side-effect", str(side))
    result = _pi(tmp_path, "run", "--json", "--pi-command", command, "go")
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    assert summary["transport"] == "rpc" and summary["fallbackFrom"] is None
    assert summary["toolsStarted"] == 1
    assert [f["type"] for f in _log(log)] == ["prompt"]  # no stdio run


def test_no_fallback_keeps_the_rpc_failure(tmp_path: Path) -> None:
    log = tmp_path / "in.jsonl"
    command = worker_command("--crash-rpc", "--log", str(log))
    result = _pi(tmp_path, "run", "--json", "--no-fallback", "--pi-command", command, "go")
    assert result.returncode == 1
    assert [f["type"] for f in _log(log)] == ["prompt"]


@pytest.mark.parametrize(
    ("fields", "retried"),
    [
        ({}, True),
        ({"final_text": "partial"}, False),
        ({"aborted": True}, False),
        ({"tools_started": 1}, False),
        ({"error": None}, False),
        ({"transport": "stdio"}, False),
    ],
)
def test_only_an_early_failure_counts(fields: dict, retried: bool) -> None:
    from askgate.adapters.pi_rpc.runner import RunSummary

    base = {"ok": False, "final_text": "", "error": "worker exited", "transport": "rpc"}
    assert is_early_rpc_failure(RunSummary(**{**base, **fields})) is retried


# ------------------------------------------------------------------ steering


def test_steer_is_a_typed_command_with_a_typed_answer(tmp_path: Path) -> None:
    log = tmp_path / "in.jsonl"

    async def go() -> tuple[object, object]:
        run = WorkerRun(
            [sys.executable, str(WORKER), "--hang", "--log", str(log), "--mode", "rpc"],
            dialogs=DialogPolicy.CANCEL,
            prompter=NoPrompter(),
            stop_grace=0.5,
        )
        stop = StopRequest()
        task = asyncio.ensure_future(run.run("start", stop))
        await wait_until_async(
            lambda: any(f.get("type") == "prompt" for f in _log(log)), "the prompt"
        )
        answer = await run.steer("look in src/ instead")
        stop.request("test done")
        return answer, await task

    answer, summary = asyncio.run(go())
    assert answer.ok and answer.disposition == "queued"  # type: ignore[attr-defined]
    steers = [f for f in _log(log) if f["type"] == "steer"]
    assert [s["message"] for s in steers] == ["look in src/ instead"]
    assert summary.aborted and summary.error == "stopped: test done"  # type: ignore[attr-defined]


def test_steer_lines_on_stdin_reach_the_running_agent(tmp_path: Path) -> None:
    log = tmp_path / "in.jsonl"
    command = worker_command("--hang", "--log", str(log))
    proc = subprocess.Popen(
        [*PI_RUN, "--steer-stdin", "--stop-grace", "1", "--pi-command", command, "go"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    try:
        wait_until(
            lambda: any(f["type"] == "prompt" for f in _log(log)), "the prompt", process=proc
        )
        assert proc.stdin is not None
        proc.stdin.write("stop and run the linter\n")
        proc.stdin.flush()
        wait_until(lambda: any(f["type"] == "steer" for f in _log(log)), "the steer", process=proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "steer 'stop and run the linter': queued" in err
    assert proc.returncode == 128 + signal.SIGINT


# ------------------------------------------------------------------ stopping


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_every_signal_runs_the_stop_sequence_once(tmp_path: Path, signum: int) -> None:
    """The measured gap: SIGTERM killed `askgate pi run` in ~1 ms with no stop sequence, and
    a worker that ignores the end of its input was left running."""
    log, pid_file = tmp_path / "in.jsonl", tmp_path / "worker.pid"
    command = worker_command(
        "--hang", "--ignore-eof", "--ignore-term", "--log", str(log), "--pid-file", str(pid_file)
    )
    proc = subprocess.Popen(
        [*PI_RUN, "--json", "--stop-grace", "0.5", "--pi-command", command, "go"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_until(
            lambda: any(f["type"] == "prompt" for f in _log(log)), "the prompt", process=proc
        )
        worker_pid = int(pid_file.read_text())
        proc.send_signal(signum)
        proc.send_signal(signum)  # a second signal does not start a second sequence
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum
    summary = json.loads(out)
    assert summary["aborted"] is True and signal.Signals(signum).name in summary["error"]
    assert summary["exitStatus"] == -signal.SIGKILL  # it ignored stdin end and SIGTERM
    assert [f["type"] for f in _log(log)] == ["prompt", "stdin-eof"]  # stdin ended first, once
    assert not _pid_alive(worker_pid)


DRIVER = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n" + textwrap.dedent(
    """
    import ctypes, os, subprocess
    from waits import wait_until
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come to us
    log = sys.argv[1]
    parent = os.fork()
    if parent == 0:  # the parent of askgate: starts it, waits until it runs, then dies
        askgate = subprocess.Popen(
            sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        wait_until(
            lambda: os.path.exists(log) and '"prompt"' in open(log).read(),
            "the prompt to reach the worker",
            process=askgate,
        )
        os._exit(0)
    os.waitpid(parent, 0)
    while True:  # askgate, orphaned, is reaped here
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        print(pid, os.waitstatus_to_exitcode(status), flush=True)
    """
)


def test_the_death_of_askgates_parent_stops_the_worker(tmp_path: Path) -> None:
    log, pid_file = tmp_path / "in.jsonl", tmp_path / "worker.pid"
    command = worker_command(
        "--hang", "--ignore-eof", "--ignore-term", "--log", str(log), "--pid-file", str(pid_file)
    )
    argv = [sys.executable, "-m", "askgate.cli", "pi", "run", "--stop-grace", "0.5"]
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, str(log), *argv, "--pi-command", command, "go"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=SAFETY_TIMEOUT,  # the driver's own wait has the same bound: a hang only
    )
    # askgate (and, reaped too, its worker) ended; askgate with the parent-death status.
    codes = [int(line.split()[1]) for line in result.stdout.splitlines()]
    assert 128 + signal.SIGHUP in codes, (result.stdout, result.stderr)
    assert [f["type"] for f in _log(log)] == ["prompt", "stdin-eof"]
    assert not _pid_alive(int(pid_file.read_text()))


def test_an_exception_in_the_run_still_stops_the_worker(tmp_path: Path) -> None:
    log = tmp_path / "in.jsonl"

    async def go() -> None:
        run = WorkerRun(
            [sys.executable, str(WORKER), "--hang", "--ignore-eof", "--log", str(log)],
            dialogs=DialogPolicy.CANCEL,
            prompter=NoPrompter(),
            stop_grace=0.5,
        )

        async def broken(message: str) -> None:
            await run.client.request({"type": "prompt", "message": message})
            raise RuntimeError("a bug in the host")

        run._converse = broken  # type: ignore[method-assign]
        await run.run("go")

    with pytest.raises(RuntimeError, match="a bug in the host"):
        asyncio.run(go())
    assert [f["type"] for f in _log(log)] == ["prompt", "stdin-eof"]


def test_run_worker_is_the_typed_api(tmp_path: Path) -> None:
    options = WorkerOptions(pi_command=worker_command("--text", "API"), transport=Transport.STDIO)
    summary = asyncio.run(run_worker("go", options))
    assert summary.ok and summary.final_text == "API" and summary.transport == "stdio"
