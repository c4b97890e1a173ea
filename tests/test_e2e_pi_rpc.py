"""End to end: the real pi, both lines, driven over `--mode rpc` by askgate's runner,
offline against a fake OpenAI-compatible model (the Chat Completions shape of
tests/fake_model_api.py) that asks for a `bash` call writing a side-effect file. The file
is the proof of whether the tool ran.

* pi 0.73.1 (@mariozechner/pi-coding-agent, node 20 from PATH) and pi 1.6.0
  (@earendil-works/pi-coding-agent, node 22 from its client directory), each with a
  few-line extension that calls ctx.ui.confirm on every tool call;
* pi 1.6.0 with the real @gotgenes/pi-permission-system extension, bash set to ask.

Dialog policy cancel -> the tool does not run; ask with a human approving through a
prompter -> it runs; denying -> it does not; nobody answering within the budget -> it
does not, and the worker does not hang.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_e2e import pi_bash
from askgate.adapters.pi_rpc.runner import RunSummary, WorkerRun, worker_argv
from askgate.adapters.pi_rpc.ui_policy import DialogPolicy
from askgate.prompters.base import PromptReply, PromptRequest, PromptState
from clients import client_dir, require_client
from conftest import ScriptedPrompter
from fake_model_api import FakeModelAPI
from waits import SAFETY_TIMEOUT

CONFIRM_EXTENSION = """\
export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    const summary = `${event.toolName} ${JSON.stringify(event.input)}`;
    const ok = await ctx.ui.confirm("Allow tool call?", summary);
    if (!ok) return { block: true, reason: "Blocked by the test gate" };
    return undefined;
  });
}
"""
HERMETIC = "--offline --provider fake --no-extensions --no-skills --no-context-files"
PERMISSION_EXTENSION = "node_modules/@gotgenes/pi-permission-system"


class SilentPrompter:
    """A real prompter whose human never answers: it waits out the timeout."""

    def __init__(self) -> None:
        self.seen: list[PromptRequest] = []
        self._never = threading.Event()

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        self.seen.append(request)
        self._never.wait(timeout)
        return PromptReply(state=PromptState.TIMED_OUT, detail="nobody answered")


@dataclass
class Pi:
    """One real pi line, ready to run hermetically in tmp_path."""

    pi: Path
    env: dict[str, str]
    work: Path
    agent_dir: Path
    fake: FakeModelAPI
    side_effect: Path

    def command(self, *extra: str) -> str:
        return shlex.join([str(self.pi)]) + f" {HERMETIC} " + shlex.join(list(extra))

    def run(
        self,
        extension: str,
        dialogs: DialogPolicy,
        prompter: object,
        *,
        prompt_timeout: float = 60.0,
    ) -> RunSummary:
        argv = worker_argv(self.command("-e", extension), "fake-model")
        runner = WorkerRun(
            argv,
            dialogs=dialogs,
            prompter=prompter,  # type: ignore[arg-type]
            env=self.env,
            cwd=str(self.work),
            prompt_timeout=prompt_timeout,
            settle_timeout=120,
            command_timeout=60,
        )
        return asyncio.run(runner.run("Please run the command."))


def _pi(tmp_path: Path, line: str) -> Iterator[Pi]:
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "home" / "agent"),
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
        "PI_SKIP_VERSION_CHECK": "1",
    }
    for key in [k for k in env if k.startswith("PI_SUBAGENT") or k.startswith("PI_AGENT_ROUTER")]:
        del env[key]
    if line == "0.73":
        pi = require_client("pi", "0.73.1", "pi")
    else:
        pi = require_client("pi", "1.6.0", "pi")
        node = require_client("node", "22.23.5", "node")
        env["PATH"] = f"{node.resolve().parent}{os.pathsep}{env.get('PATH', '')}"
    agent_dir = tmp_path / "home" / "agent"
    agent_dir.mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "confirm.ts").write_text(CONFIRM_EXTENSION)
    side_effect = work / "side-effect.txt"  # inside the project: no external_directory ask
    fake = FakeModelAPI().start()
    try:
        fake.script(pi_bash(f"echo HELLO >> {side_effect}"), final_text="DONE")
        (agent_dir / "models.json").write_text(json.dumps(fake.pi_models_json()))
        yield Pi(pi, env, work, agent_dir, fake, side_effect)
    finally:
        fake.close()


@pytest.fixture(params=["0.73", "1.6"])
def pi_line(request, tmp_path) -> Iterator[Pi]:
    yield from _pi(tmp_path, request.param)


@pytest.fixture
def pi16(tmp_path) -> Iterator[Pi]:
    yield from _pi(tmp_path, "1.6")


def _with_permission_extension(pi: Pi) -> str:
    config = pi.agent_dir / "extensions" / "pi-permission-system" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        json.dumps({"permission": {"*": "ask", "read": "allow", "bash": {"*": "ask"}}})
    )
    return str(client_dir("pi", "1.6.0") / PERMISSION_EXTENSION)


# ---------------------------------------------------------------- confirm extension


def test_confirm_cancelled_by_default_the_tool_does_not_run(pi_line, tmp_path):
    summary = pi_line.run(str(tmp_path / "confirm.ts"), DialogPolicy.CANCEL, ScriptedPrompter([]))
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert not pi_line.side_effect.exists()
    assert summary.counters["dialogsCancelled"] == 1
    assert pi_line.fake.told() == ["Blocked by the test gate"]
    assert summary.final_text == "DONE"


def test_confirm_approved_by_the_human_runs_the_tool(pi_line, tmp_path):
    prompter = ScriptedPrompter([PromptState.APPROVED])
    summary = pi_line.run(str(tmp_path / "confirm.ts"), DialogPolicy.ASK, prompter)
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert pi_line.side_effect.read_text() == "HELLO\n"
    assert summary.counters["dialogsAsked"] == 1
    assert "echo HELLO" in prompter.seen[0].message


def test_confirm_denied_by_the_human_does_not_run(pi_line, tmp_path):
    prompter = ScriptedPrompter([PromptState.DENIED])
    summary = pi_line.run(str(tmp_path / "confirm.ts"), DialogPolicy.ASK, prompter)
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert not pi_line.side_effect.exists()
    assert pi_line.fake.told() == ["Blocked by the test gate"]


def test_confirm_unanswered_within_the_budget_does_not_run_nor_hang(pi_line, tmp_path):
    prompter = SilentPrompter()
    summary = pi_line.run(
        str(tmp_path / "confirm.ts"), DialogPolicy.ASK, prompter, prompt_timeout=1.0
    )
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert not pi_line.side_effect.exists()
    assert len(prompter.seen) == 1
    assert summary.counters["dialogsCancelled"] == 1


# ---------------------------------------------------------------- the real permission extension


def test_permission_extension_cancelled_the_tool_does_not_run(pi16):
    extension = _with_permission_extension(pi16)
    summary = pi16.run(extension, DialogPolicy.CANCEL, ScriptedPrompter([]))
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert not pi16.side_effect.exists()
    assert summary.counters["dialogsCancelled"] == 1
    assert summary.counters["uiRequestsDrained"] >= 1  # its setStatus frames
    assert "setStatus" in summary.counters["drainedByMethod"]


@pytest.mark.parametrize(
    ("reply", "ran", "told"),
    [
        (PromptReply(state=PromptState.APPROVED), True, "(no output)"),
        (PromptReply(state=PromptState.APPROVED_FOR_SESSION), True, "(no output)"),
        (PromptReply(state=PromptState.DENIED), False, "User denied bash command"),
        (
            PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="use make"),
            False,
            "Reason: use make",
        ),
    ],
)
def test_permission_extension_answers_what_the_human_chose(pi16, reply, ran, told):
    extension = _with_permission_extension(pi16)
    prompter = ScriptedPrompter([reply])
    summary = pi16.run(extension, DialogPolicy.ASK, prompter)
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert pi16.side_effect.exists() is ran
    (result,) = pi16.fake.told()
    assert told in result
    (seen,) = prompter.seen
    assert "echo HELLO" in seen.message
    assert seen.session_pattern == "echo *"


def test_permission_extension_unanswered_does_not_run_nor_hang(pi16):
    extension = _with_permission_extension(pi16)
    prompter = SilentPrompter()
    summary = pi16.run(extension, DialogPolicy.ASK, prompter, prompt_timeout=1.0)
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert not pi16.side_effect.exists()
    assert summary.counters["dialogsCancelled"] == 1


def test_askgate_pi_run_command_with_real_pi(pi16):
    extension = _with_permission_extension(pi16)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "askgate.cli",
            "pi",
            "run",
            "--json",
            "--model",
            "fake-model",
            "--cwd",
            str(pi16.work),
            "--pi-command",
            pi16.command("-e", extension),
            "Please run the command.",
        ],
        capture_output=True,
        text=True,
        env=pi16.env,
        timeout=SAFETY_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["ok"] is True
    assert summary["finalText"] == "DONE"
    assert summary["counters"]["dialogsCancelled"] == 1
    assert not pi16.side_effect.exists()


def test_askgate_pi_run_fails_when_the_model_is_unreachable(pi16):
    pi16.fake.close()  # the "model" is gone: pi reports an error message
    # pi retries a failed request with backoff (about 30 s by default): the outcome is the
    # same without it, only sooner.
    (pi16.agent_dir / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "askgate.cli",
            "pi",
            "run",
            "--json",
            "--model",
            "fake-model",
            "--cwd",
            str(pi16.work),
            "--pi-command",
            pi16.command(),
            "hello",
        ],
        capture_output=True,
        text=True,
        env=pi16.env,
        timeout=SAFETY_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1, result.stdout
    assert json.loads(result.stdout)["ok"] is False


# ---------------------------------------------------------------- seed 004's worker layer


def _stdio(pi: Pi, *extra: str) -> RunSummary:
    from askgate.adapters.pi_rpc.worker import Transport, WorkerOptions, run_worker

    options = WorkerOptions(
        pi_command=pi.command(*extra),
        model="fake-model",
        transport=Transport.STDIO,
        cwd=str(pi.work),
        env=pi.env,
        settle_timeout=120,
    )
    return asyncio.run(run_worker("Please run the command.", options))


def test_the_stdio_transport_runs_a_prompt_on_real_pi(pi_line):
    summary = _stdio(pi_line)
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert summary.transport == "stdio" and summary.final_text == "DONE"
    assert pi_line.side_effect.read_text() == "HELLO\n"  # no gate loaded: the tool ran
    assert summary.tools_started == 1


def test_the_stdio_transport_never_confirms_a_dialog_on_real_pi(pi_line, tmp_path):
    """JSON mode has no UI: the gate's confirm is a no-op, so the tool is blocked, and
    nothing in askgate could have said yes."""
    summary = _stdio(pi_line, "-e", str(tmp_path / "confirm.ts"))
    assert summary.ok, (summary.error, summary.stderr_tail)
    assert not pi_line.side_effect.exists()
    assert pi_line.fake.told() == ["Blocked by the test gate"]


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if text.encode() in fh.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def test_sigterm_stops_real_pi_in_order_and_a_steer_reaches_it(pi16, tmp_path):
    """A dialog left pending (`--dialogs block`) keeps real pi busy; a steer sent meanwhile
    is queued by pi; SIGTERM then runs the stop sequence: no pi process is left, the tool
    never ran."""
    extension = str(tmp_path / "confirm.ts")
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "askgate.cli", "pi", "run", "--dialogs", "block"),
            *("--steer-stdin", "--stop-grace", "5", "--model", "fake-model"),
            *("--cwd", str(pi16.work), "--pi-command", pi16.command("-e", extension)),
            "Please run the command.",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=pi16.env,
    )
    try:
        assert proc.stderr is not None and proc.stdin is not None
        seen = []
        for line in proc.stderr:  # progress: the dialog's line shows pi is waiting on it
            seen.append(line)
            if "? confirm" in line:
                break
        else:
            pytest.fail("no dialog line: " + "".join(seen))
        proc.stdin.write("never mind, stop\n")
        proc.stdin.flush()
        for line in proc.stderr:
            seen.append(line)
            if "steer" in line:
                break
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, "".join(seen) + rest
    assert any("steer 'never mind, stop': queued" in line for line in seen), "".join(seen)
    assert _processes_mentioning(extension) == []
    assert not pi16.side_effect.exists()
