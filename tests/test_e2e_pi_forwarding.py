"""Interop with the real pi permission extension (@gotgenes/pi-permission-system 20.7.3 on
pi 1.6.0, node 22), both directions of the forwarding file protocol (#8 item 12):

* a pi child (print mode: no UI, a subagent by its environment) forwards its bash ask to
  `askgate forward serve`, whose human answers on its input: approve, deny, deny with a
  reason, approve for the session; or nobody answers (the child is told what happened);
* askgate as the child of a pi parent running in `--mode rpc`: the parent shows its
  select dialog over RPC, askgate's dialog policy answers it with what a human chose,
  and the askgate child's gate records the parent's answer.

The model is the Chat Completions shape of tests/fake_model_api.py (an unreachable service,
faked by its contract).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_e2e import pi_bash
from askgate.adapters.pi_rpc.frames import ExtensionUIRequest, Frame, GetState
from askgate.adapters.pi_rpc.runner import WorkerRun
from askgate.adapters.pi_rpc.ui_policy import DialogPolicy, UiRequestPolicy
from askgate.forwarding.client import ForwardingPrompter
from askgate.gate import Gate
from askgate.outcome import Resolution, ToolRequest
from askgate.policy.model import Action
from askgate.prompters.base import PromptReply, PromptState
from askgate.prompters.choose import default_prompter
from clients import client_dir, require_client
from conftest import ScriptedPrompter, policy_for
from fake_model_api import FakeModelAPI
from waits import SAFETY_TIMEOUT

PARENT = "parent-1"
EXTENSION = "node_modules/@gotgenes/pi-permission-system"


@dataclass
class Setup:
    pi: Path
    env: dict[str, str]
    work: Path
    root: Path
    fake: FakeModelAPI
    side_effect: Path
    extension: str


@pytest.fixture
def setup(tmp_path) -> Iterator[Setup]:
    pi = require_client("pi", "1.6.0", "pi")
    node = require_client("node", "22.23.5", "node")
    home = tmp_path / "home"
    agent_dir = home / "agent"
    config = agent_dir / "extensions" / "pi-permission-system" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        json.dumps({"permission": {"*": "ask", "read": "allow", "bash": {"*": "ask"}}})
    )
    work = tmp_path / "work"
    work.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PI_SUBAGENT", "PI_AGENT_ROUTER", "PI_IS_SUBAGENT", "ASKGATE_"))
    }
    env.update(
        HOME=str(home),
        PI_CODING_AGENT_DIR=str(agent_dir),
        PI_OFFLINE="1",
        PI_TELEMETRY="0",
        PI_SKIP_VERSION_CHECK="1",
        PATH=f"{node.resolve().parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    fake = FakeModelAPI().start()
    side_effect = work / "side-effect.txt"
    fake.script(pi_bash(f"echo HELLO >> {side_effect}"), final_text="DONE")
    (agent_dir / "models.json").write_text(json.dumps(fake.pi_models_json()))
    try:
        yield Setup(
            pi=pi,
            env=env,
            work=work,
            root=agent_dir / "sessions" / "permission-forwarding",
            fake=fake,
            side_effect=side_effect,
            extension=str(client_dir("pi", "1.6.0") / EXTENSION),
        )
    finally:
        fake.close()


# ---------------------------------------------------------------- pi child -> askgate parent


class Serve:
    """`askgate forward serve` in a subprocess; its prompts are read from stderr."""

    def __init__(self, setup: Setup, prompt_timeout: float) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "askgate.cli",
                "forward",
                "serve",
                "--session",
                PARENT,
                "--root",
                str(setup.root),
                "--prompt-timeout",
                str(prompt_timeout),
            ],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=setup.env,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        self.proc.wait()  # its stderr ended with it: a waiter wakes to see it exited
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = SAFETY_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not any(text in line for line in self.lines):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"serve never printed {text!r}: {''.join(self.lines)}")
                self._changed.wait(remaining)
            return "".join(self.lines)

    def answer(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _pi_child(setup: Setup) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            str(setup.pi),
            "--offline",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-extensions",
            "--no-skills",
            "--no-context-files",
            "--no-session",
            "-e",
            setup.extension,
            "-p",
            "Please run the command.",
        ],
        cwd=setup.work,
        env={**setup.env, "PI_SUBAGENT_CHILD": "1", "PI_SUBAGENT_PARENT_SESSION": PARENT},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    ("answer", "ran", "told"),
    [
        ("1\n", True, "(no output)"),
        ("2\n", True, "(no output)"),
        ("3\n", False, "User denied bash command"),
        ("4\nuse make instead\n", False, "Reason: use make instead"),
    ],
    ids=["approve", "session", "deny", "deny-with-reason"],
)
def test_pi_child_forwards_to_askgate_forward_serve(setup, answer, ran, told):
    serve = Serve(setup, prompt_timeout=60)
    try:
        serve.wait_for("serving forwarded permission requests")
        child = _pi_child(setup)
        shown = serve.wait_for("4) No, and tell the agent why")
        assert "echo HELLO" in shown
        assert "2) Yes, for this session" in shown  # the child sent its session pattern
        serve.answer(answer)
        out, err = child.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        serve.stop()
    assert child.returncode == 0, err
    assert setup.side_effect.exists() is ran
    (result,) = setup.fake.told()
    assert told in result
    assert out.strip() == "DONE"


def test_pi_child_unanswered_is_told_nobody_answered_not_invalid(setup):
    serve = Serve(setup, prompt_timeout=1)
    try:
        serve.wait_for("serving forwarded permission requests")
        child = _pi_child(setup)
        serve.wait_for("4) No, and tell the agent why")
        _out, err = child.communicate(timeout=SAFETY_TIMEOUT)  # nobody types anything
    finally:
        serve.stop()
    assert child.returncode == 0, err
    assert not setup.side_effect.exists()
    (result,) = setup.fake.told()
    # pi accepted the response (a "timed_out" state would be rejected as invalid) and
    # passed on what happened.
    assert "nobody answered within 1 s" in result
    assert "invalid" not in result.lower()


# ---------------------------------------------------------------- askgate child -> pi parent


def _ask_through_pi_parent(
    setup: Setup, replies: list[PromptReply]
) -> tuple[object, list[ExtensionUIRequest], UiRequestPolicy, ScriptedPrompter]:
    """Start a pi parent in RPC mode; let an askgate child's gate ask it; answer the
    parent's dialogs through askgate's dialog policy with `replies`."""
    human = ScriptedPrompter(replies)
    policies: list[UiRequestPolicy] = []
    dialogs: list[ExtensionUIRequest] = []

    async def drive() -> object:
        argv = [
            str(setup.pi),
            "--offline",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-extensions",
            "--no-skills",
            "--no-context-files",
            "-e",
            setup.extension,
            "--mode",
            "rpc",
            "--no-session",
        ]

        def seen(frame: Frame) -> None:
            if isinstance(frame, ExtensionUIRequest) and frame.method in ("select", "input"):
                dialogs.append(frame)

        runner = WorkerRun(
            argv, dialogs=DialogPolicy.ASK, prompter=human, env=setup.env, on_frame=seen
        )
        policies.append(runner.policy)
        await runner.start()
        try:
            state = await runner.client.request(GetState(), timeout=SAFETY_TIMEOUT)
            session = state.data["sessionId"]
            child_env = {
                **setup.env,
                "PI_SUBAGENT_CHILD": "1",
                "PI_SUBAGENT_PARENT_SESSION": session,
            }
            prompter = default_prompter(session="askgate-child", env=child_env)
            assert isinstance(prompter, ForwardingPrompter)
            gate = Gate(
                policy_for(setup.work, setup.work, [("bash", "make *", "ask")]),
                prompter=prompter,
                prompt_timeout=60,
            )
            request = ToolRequest(
                tool="Bash",
                input={"command": "make deploy"},
                cwd=str(setup.work),
                agent="builder",
                session="askgate-child",
            )
            outcome = await asyncio.to_thread(gate.decide, request)
            return outcome, session
        finally:
            await runner.stop()

    outcome, session = asyncio.run(asyncio.wait_for(drive(), 180))
    return (outcome, session), dialogs, policies[0], human


@pytest.mark.parametrize(
    ("reply", "action", "resolution", "reason"),
    [
        (
            PromptReply(state=PromptState.APPROVED),
            Action.ALLOW,
            Resolution.USER_APPROVED,
            "approved by parent session",
        ),
        (
            PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason="not today"),
            Action.DENY,
            Resolution.USER_DENIED,
            "Reason: not today",
        ),
        (
            PromptReply(state=PromptState.APPROVED_FOR_SESSION),
            Action.ALLOW,
            Resolution.USER_APPROVED_FOR_SESSION,
            "approved for this session by parent session",
        ),
    ],
    ids=["approve", "deny-with-reason", "session"],
)
def test_askgate_child_of_a_pi_parent_in_rpc_mode(setup, reply, action, resolution, reason):
    (outcome, session), dialogs, policy, human = _ask_through_pi_parent(setup, [reply])
    assert outcome.action is action
    assert outcome.resolution is resolution
    assert reason in outcome.reason
    if action is Action.ALLOW:
        assert session in outcome.reason
    # The parent showed its own select (the human saw the child's ask through it).
    first = dialogs[0]
    assert first.method == "select"
    assert first.title.startswith("Permission Required (Subagent)")
    assert "make deploy" in human.seen[0].message
    assert policy.counters.dialogs_asked == 1
