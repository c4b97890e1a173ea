"""Round 2 of the approval server, asserted on what the agent finally did.

The agent here is the real `askgate hook claude-code` subprocess (PreToolUse, decided in-process,
`ASKGATE_SERVER` pointing at a real server on 127.0.0.1) followed by what Claude Code does with
its answer: the command runs (appending a line to a file) only when the hook said allow. So each
test counts executions, not replies.

* tenants: another person, added the default way, can neither read nor decide; sharing is a
  named group whose approver can;
* one approval is one execution: an agent cancelling its own wait cannot leave a second
  execution behind; a late approval runs only in the same cwd, session and agent, once; an
  Approve at the deadline is recorded as timeout;
* the budget: a server frozen (SIGSTOP) mid-wait cannot keep the hook past its budget.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from server_support import LiveServer, free_socket
from waits import wait_until

POLICY = 'default = "ask"\n'
LEDGER = "ran.txt"


@dataclass
class AgentCall:
    decision: str
    reason: str
    elapsed: float
    ran: bool


class Agent:
    """One Claude Code session's tool calls through the real hook, with the agent token."""

    def __init__(self, tmp_path: Path, server: str, token: str, *, budget: float) -> None:
        self.tmp_path = tmp_path
        self.server = server
        self.token = token
        self.budget = budget
        self.policy = tmp_path / "policy.toml"
        self.policy.write_text(POLICY)

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.tmp_path / "home"),
            "XDG_CONFIG_HOME": str(self.tmp_path / "cfg"),
            "XDG_STATE_HOME": str(self.tmp_path / "state"),
            "ASKGATE_MANAGED_POLICY": str(self.tmp_path / "no-managed.toml"),
            "ASKGATE_AUDIT_LOG": "off",
            "ASKGATE_DAEMON": "off",
            "ASKGATE_SERVER": self.server,
            "ASKGATE_TOKEN": self.token,
            "ASKGATE_APPROVAL_BUDGET": str(self.budget),
        }

    def call(self, cwd: Path, command: str, *, session: str = "sess-1") -> AgentCall:
        cwd.mkdir(parents=True, exist_ok=True)
        payload = {
            "session_id": session,
            "cwd": str(cwd),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": "toolu_1",
            "permission_mode": "default",
        }
        argv = [
            sys.executable,
            "-m",
            "askgate",
            "hook",
            "claude-code",
            "--config",
            str(self.policy),
        ]
        started = time.monotonic()
        proc = subprocess.run(
            argv,
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=self.env(),
            timeout=self.budget + 120,
        )
        elapsed = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        out = json.loads(proc.stdout)["hookSpecificOutput"]
        decision = out["permissionDecision"]
        ran = False
        if decision == "allow":  # what Claude Code does with the answer
            subprocess.run(["bash", "-c", command], cwd=cwd, check=True, timeout=60)
            ran = True
        return AgentCall(decision, str(out.get("permissionDecisionReason", "")), elapsed, ran)

    def call_in_background(self, cwd: Path, command: str, **kw: Any) -> _Background:
        return _Background(self, cwd, command, kw)


class _Background:
    def __init__(self, agent: Agent, cwd: Path, command: str, kw: dict[str, Any]) -> None:
        self.result: AgentCall | None = None
        self.thread = threading.Thread(
            target=lambda: setattr(self, "result", agent.call(cwd, command, **kw)), daemon=True
        )
        self.thread.start()

    def join(self) -> AgentCall:
        self.thread.join(300)
        assert self.result is not None, "the hook never answered"
        return self.result


def executions(cwd: Path) -> int:
    ledger = cwd / LEDGER
    return len(ledger.read_text().splitlines()) if ledger.exists() else 0


def pending_id(client: httpx.Client) -> str:
    """The id of the one approval the hook registered (polled: the hook is a subprocess)."""
    rows = wait_until(
        lambda: client.get("/v1/approvals", params={"pending": "true"}).json()["approvals"],
        "the hook to register its ask",
    )
    return str(rows[0]["id"])


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    db = f"sqlite+aiosqlite:///{tmp_path / 'server' / 'askgate.sqlite3'}"
    with LiveServer(tmp_path / "server", db) as server:
        yield server


COMMAND = f"echo once >> {LEDGER}"


# --- 1. each person is their own tenant ----------------------------------------------------


def test_bob_can_neither_read_nor_approve_alices_ask_and_it_does_not_run(
    live: LiveServer, tmp_path: Path
) -> None:
    live.add_user("alice")
    bob = live.client(live.add_user("bob"))
    alice_agent = live.agent_token("alice")
    agent = Agent(tmp_path, live.url, alice_agent, budget=3)
    waiting = agent.call_in_background(tmp_path / "proj", COMMAND)
    approval_id = pending_id(live.client(alice_agent))
    assert bob.get(f"/v1/approvals/{approval_id}").status_code == 404
    assert bob.get(f"/v1/approvals/{approval_id}?wait=1").status_code == 404
    decided = bob.post(f"/v1/approvals/{approval_id}/decide", json={"decision": "allow"})
    assert decided.status_code == 404
    assert bob.get("/v1/approvals").json()["approvals"] == []
    call = waiting.join()
    assert call.decision == "deny" and not call.ran
    assert executions(tmp_path / "proj") == 0


def test_a_named_groups_approver_approves_a_members_ask_and_it_runs_once(
    live: LiveServer, tmp_path: Path
) -> None:
    live.add_user("alice")
    bob = live.client(live.add_user("bob"))
    mallory = live.client(live.add_user("mallory"))
    store = live.ctx.store
    live.call(lambda: store.create_group("team"))
    live.call(lambda: store.file_in("alice", "team"))
    live.call(lambda: store.add_approver("team", "bob"))
    agent = Agent(tmp_path, live.url, live.agent_token("alice"), budget=60)
    waiting = agent.call_in_background(tmp_path / "proj", COMMAND)
    approval_id = pending_id(bob)
    assert mallory.get(f"/v1/approvals/{approval_id}").status_code == 404
    decided = bob.post(f"/v1/approvals/{approval_id}/decide", json={"decision": "allow"})
    assert decided.status_code == 200
    call = waiting.join()
    assert call.decision == "allow" and call.ran
    assert executions(tmp_path / "proj") == 1


# --- 2. one approval is one execution ------------------------------------------------------


def test_an_agent_cancelling_its_own_wait_leaves_no_second_execution(
    live: LiveServer, tmp_path: Path
) -> None:
    human = live.client(live.add_user("alice"))
    agent_token = live.agent_token("alice")
    agent = Agent(tmp_path, live.url, agent_token, budget=60)
    project = tmp_path / "proj"
    waiting = agent.call_in_background(project, COMMAND)
    approval_id = pending_id(human)
    # The agent, holding the hook's token, "cancels" the wait its own hook is still in.
    cancelled = live.client(agent_token).post(f"/v1/approvals/{approval_id}/abandon")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "pending"
    assert human.post(f"/v1/approvals/{approval_id}/decide", json={"decision": "allow"}).is_success
    first = waiting.join()
    assert first.ran
    # The next identical call finds no approval left over: it asks again, nobody answers.
    again = Agent(tmp_path, live.url, agent_token, budget=2).call(project, COMMAND)
    assert again.decision == "deny" and not again.ran
    assert executions(project) == 1


def test_a_late_approval_runs_once_and_only_in_the_cwd_session_and_agent_it_was_for(
    live: LiveServer, tmp_path: Path
) -> None:
    human = live.client(live.add_user("alice"))
    agent = Agent(tmp_path, live.url, live.agent_token("alice"), budget=2)
    project, elsewhere = tmp_path / "proj", tmp_path / "other"
    assert not agent.call(project, COMMAND).ran  # nobody answered in time
    [row] = human.get("/v1/approvals").json()["approvals"]
    assert human.post(f"/v1/approvals/{row['id']}/decide", json={"decision": "allow"}).is_success
    end = row["wait_until"]  # the server's deadline may trail the hook's by the transit time
    while time.time() < end:
        threading.Event().wait(end - time.time())
    late = human.get(f"/v1/approvals/{row['id']}").json()
    assert late["status"] == "timeout" and not late["consumed"]  # never reads as allow
    assert not agent.call(elsewhere, COMMAND).ran  # another working directory
    assert not agent.call(project, COMMAND, session="sess-2").ran  # another session
    assert agent.call(project, COMMAND).ran  # the call it was asked for, once
    assert not agent.call(project, COMMAND).ran
    assert executions(project) == 1 and executions(elsewhere) == 0


def test_an_approve_landing_at_the_deadline_is_recorded_as_timeout(live: LiveServer) -> None:
    human = live.client(live.add_user("alice"))
    agent = live.client(live.agent_token("alice"))
    body = {"tool": "Bash", "input": {"command": COMMAND}, "wait": 1}
    created = agent.post("/v1/approvals", json=body).json()
    end = created["wait_until"]
    while time.time() < end:  # wait for the clock (the deadline is a pure function of time)
        threading.Event().wait(end - time.time())
    decided = human.post(f"/v1/approvals/{created['id']}/decide", json={"decision": "allow"})
    assert decided.status_code == 200
    assert decided.json()["status"] == "timeout" and decided.json()["late"] == "allow"
    taken = agent.post(f"/v1/approvals/{created['id']}/consume")
    assert taken.status_code == 409 and taken.json()["error"] == "not-consumable"


# --- 4. the budget holds whatever the server does ------------------------------------------


def _serve(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    argv = [sys.executable, "-m", "askgate", "serve", "--port", "0", "--data-dir", str(data_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKGATE_")}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    assert "http://" in line, line
    return proc, "http://" + line.split("http://", 1)[1].split("/", 1)[0]


def _token(data_dir: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "askgate", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def test_a_server_frozen_mid_wait_cannot_keep_the_hook_past_its_budget(tmp_path: Path) -> None:
    data = tmp_path / "server"
    human = _token(data, "user", "add", "alice")
    hook_token = _token(data, "user", "token", "alice", "--agent")
    proc, url = _serve(data)
    budget = 4.0
    try:
        agent = Agent(tmp_path, url, hook_token, budget=budget)
        waiting = agent.call_in_background(tmp_path / "proj", COMMAND)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {human}"}) as client:
            pending_id(client)
        os.kill(proc.pid, signal.SIGSTOP)  # frozen mid-wait: the long-poll is parked on it
        call = waiting.join()
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(30)
    assert call.decision == "deny" and not call.ran
    assert executions(tmp_path / "proj") == 0
    # The hook's whole run: interpreter start, policy, then the budget; never the server's.
    assert call.elapsed < budget + 5.0, call.elapsed


def test_a_server_that_never_answers_the_create_cannot_stretch_the_budget(tmp_path: Path) -> None:
    # Accepts connections (the kernel's backlog) and never reads: like a frozen process.
    sock = free_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        call = Agent(tmp_path, url, "agt_x", budget=2).call(tmp_path / "proj", COMMAND)
    finally:
        sock.close()
    assert call.decision == "deny" and not call.ran
    assert call.elapsed < 2 + 5.0, call.elapsed
