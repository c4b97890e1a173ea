"""A small ACP client for tests: drives `askgate acp -- AGENT…` (a real subprocess) over
stdio, newline-delimited JSON-RPC 2.0, the way an editor does (Agent Client Protocol v1)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from waits import SAFETY_TIMEOUT, wait_until

AGENT_SCRIPT = Path(__file__).with_name("acp_test_agent.py")

# The approval server is built separately (askgate.prompters.server, factory from_env); this
# sitecustomize stands in for it in the proxy's process with a real Prompter whose answer
# comes from ASKGATE_TEST_SERVER: approve | deny | hang (never answers).
SERVER_STUB = """
import os, sys, threading, types
from askgate.prompters.base import PromptReply, PromptState

class _Prompter:
    def available(self):
        return True

    def prompt(self, request, timeout=None):
        mode = os.environ["ASKGATE_TEST_SERVER"]
        with open(os.environ["ASKGATE_TEST_SERVER_LOG"], "a") as log:
            log.write(request.value + "\\n")
        if mode == "hang":
            threading.Event().wait()
        return PromptReply(state=PromptState.APPROVED if mode == "approve" else PromptState.DENIED)

module = types.ModuleType("askgate.prompters.server")
module.from_env = lambda env: _Prompter()
module.configured_prompter = lambda env=None: _Prompter()
sys.modules["askgate.prompters.server"] = module
"""

Handler = Callable[[dict[str, Any]], dict[str, Any] | None]


class AcpClient:
    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        on_permission: Handler | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.on_permission = on_permission
        self.received: list[bytes] = []  # every line the client got, raw
        self.permission_requests: list[dict[str, Any]] = []
        self._responses: dict[Any, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._next = 0
        self.permission_seen = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.received.append(line)
            message = json.loads(line)
            if message.get("method") == "session/request_permission":
                self.permission_requests.append(message)
                self.permission_seen.set()
                answer = self.on_permission(message) if self.on_permission else None
                if answer is not None:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": answer})
            elif "method" not in message:
                self._box(message["id"]).put(message)

    def _box(self, request_id: Any) -> queue.Queue[dict[str, Any]]:
        with self._lock:
            return self._responses.setdefault(request_id, queue.Queue())

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def start(self, method: str, params: dict[str, Any]) -> int:
        with self._lock:
            self._next += 1
            request_id = self._next
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def wait(self, request_id: int, timeout: float = SAFETY_TIMEOUT) -> dict[str, Any]:
        try:
            return self._box(request_id).get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no response to request {request_id}: {self.stderr()}") from None

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = self.wait(self.start(method, params))
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result

    def updates(self) -> list[dict[str, Any]]:
        messages = [json.loads(line) for line in self.received]
        return [m["params"] for m in messages if m.get("method") == "session/update"]

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")[-3000:]

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=SAFETY_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("the proxy did not exit after its client closed") from None


def proxy_argv(policy: Path, agent: list[str] | None = None) -> list[str]:
    agent = agent or [sys.executable, str(AGENT_SCRIPT)]
    return [sys.executable, "-m", "askgate", "acp", "--config", str(policy), "--", *agent]


def proxy_env(tmp_path: Path, *, server: str | None = None) -> dict[str, str]:
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed.toml"),
        "ASKGATE_AUDIT_LOG": str(tmp_path / "review.jsonl"),
        "ACP_TEST_AGENT_LOG": str(tmp_path / "agent-sent.jsonl"),
    }
    if server is not None:
        stub = approval_stub_env(tmp_path, server)
        stub["PYTHONPATH"] = os.pathsep.join(
            filter(None, [stub["PYTHONPATH"], env.get("PYTHONPATH")])
        )
        env |= stub
    return env


def approval_stub_env(tmp_path: Path, server: str) -> dict[str, str]:
    """The environment that makes askgate's configured approval server SERVER_STUB, which
    answers `server` ("approve", "deny" or "hang") and logs each asked value to
    tmp_path/server-asked.log."""
    stub = tmp_path / "server-stub"
    stub.mkdir(exist_ok=True)
    (stub / "sitecustomize.py").write_text(SERVER_STUB)
    return {
        "PYTHONPATH": str(stub),
        "ASKGATE_TEST_SERVER": server,
        "ASKGATE_TEST_SERVER_LOG": str(tmp_path / "server-asked.log"),
    }


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    wait_until(predicate, what)
