"""The resident decider: identical answers through every path, never stale, fails closed.

Real sockets throughout: the daemon listens on a Unix socket in a private tmp directory and
on 127.0.0.1 (port 0); the relay and an HTTP client talk to it as the hook and Claude Code
would.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from askgate.adapters.claude_code import respond
from askgate.daemon import paths, protocol, relay
from askgate.daemon.server import Daemon, http_body
from data_modules import bash_corpus_commands
from unprivileged import run_as_nobody
from waits import SAFETY_TIMEOUT, wait_until

POLICY = """
default = "ask"
[bash]
"git *" = "allow"
"git push *" = "ask"
"echo *" = "allow"
"ls *" = "allow"
"cat *" = "allow"
"rm *" = { action = "deny", reason = "no deleting" }
"curl *" = "deny"
[read]
"**" = "allow"
"~/.ssh/**" = "deny"
"""


CORPUS = bash_corpus_commands()


def base_env(tmp_path: Path) -> dict[str, str]:
    run = tmp_path / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    config = tmp_path / "config" / "askgate"
    config.mkdir(parents=True, exist_ok=True)
    if not (config / "policy.toml").exists():
        (config / "policy.toml").write_text(POLICY)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "ASKGATE_RUNTIME_DIR": str(run),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "managed.toml"),
        "ASKGATE_AUDIT_LOG": "off",
        "ASKGATE_DAEMON": "on",
    }


class Running:
    def __init__(self, daemon: Daemon, thread: threading.Thread) -> None:
        self.daemon = daemon
        self.thread = thread

    def stop(self) -> None:
        self.daemon.stopping.set()
        self.thread.join(timeout=SAFETY_TIMEOUT)
        assert not self.thread.is_alive()


def start_daemon(env: dict[str, str], **kwargs: Any) -> Running:
    daemon = Daemon(env, port=0, **kwargs)
    daemon.bind()
    thread = threading.Thread(target=daemon.serve_forever, daemon=True)
    thread.start()
    return Running(daemon, thread)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return base_env(tmp_path)


@pytest.fixture
def running(env: dict[str, str]) -> Iterator[Running]:
    r = start_daemon(env)
    try:
        yield r
    finally:
        r.stop()


def payload(cwd: Path | str, command: str, event: str = "PreToolUse", **extra: Any) -> bytes:
    body: dict[str, Any] = {
        "session_id": "s1",
        "cwd": str(cwd),
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": command},
        **extra,
    }
    if event == "PreToolUse":
        body.setdefault("tool_use_id", "toolu_1")
    return json.dumps(body).encode()


def http_post(daemon: Daemon, body: bytes, secret: str | None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=SAFETY_TIMEOUT)
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers["X-Askgate-Secret"] = secret
    try:
        conn.request("POST", "/hook/claude-code", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def audit_lines(path: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        record.pop("timestamp")
        if record["request_id"] != "toolu_1":  # PermissionRequest input has no id: generated
            record["request_id"] = "generated"
    return records


# --- identical answers ------------------------------------------------------------------


def test_every_path_answers_the_corpus_identically(tmp_path: Path, env: dict[str, str]) -> None:
    """In-process, relay and HTTP give byte-identical answers and the same audit lines on
    every command of the bash corpus (PreToolUse and PermissionRequest). The daemon writes
    its own review log (never one a request names); the in-process call writes another."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    daemon_log, inproc_log = tmp_path / "daemon.jsonl", tmp_path / "inproc.jsonl"
    daemon_env = {**env, "ASKGATE_AUDIT_LOG": str(daemon_log)}
    running = start_daemon(daemon_env)
    try:
        inproc_env = {**env, "ASKGATE_AUDIT_LOG": str(inproc_log)}
        decisions: set[bytes] = set()
        decided = 0
        for index, command in enumerate(CORPUS):
            event = "PermissionRequest" if index % 5 == 4 else "PreToolUse"
            data = payload(project, command, event)
            local = respond(data, env=inproc_env)
            via_relay = relay.relay(data, [], daemon_env)
            status, via_http = http_post(running.daemon, data, running.daemon.secret)
            assert via_relay == (local.code, local.stdout, local.stderr.encode()), command
            assert status == 200
            assert via_http == http_body(local, data), command
            decisions.add(local.stdout[:90])
            decided += local.code == 0  # unreadable input blocks before any audit line
        inproc, daemon = audit_lines(inproc_log), audit_lines(daemon_log)
        assert daemon[0::2] == inproc  # the relayed calls
        assert daemon[1::2] == inproc  # the http calls
        assert len(inproc) == decided >= len(CORPUS) - 5
        assert len(decisions) >= 4  # allow, deny, ask and PermissionRequest answers all seen
    finally:
        running.stop()


def agent_payload(agent: str, cwd: Path, command: str, index: int) -> bytes:
    """The hook JSON `agent` sends for a shell call (Codex: PreToolUse and PermissionRequest;
    Gemini: BeforeTool of its shell tool)."""
    if agent == "codex":
        event = "PermissionRequest" if index % 3 == 2 else "PreToolUse"
        body: dict[str, Any] = {
            "session_id": "s1",
            "turn_id": "t1",
            "cwd": str(cwd),
            "hook_event_name": event,
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": f"call_{index}",
        }
    else:
        body = {
            "session_id": "s1",
            "cwd": str(cwd),
            "hook_event_name": "BeforeTool",
            "tool_name": "run_shell_command",
            "tool_input": {"command": command},
        }
    return json.dumps(body).encode()


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_codex_and_gemini_relay_with_the_same_answers(
    tmp_path: Path, env: dict[str, str], agent: str
) -> None:
    """The codex and gemini hooks relay to the daemon too (`agent=`), with byte-identical
    answers and the same review-log lines as in-process, on the whole bash corpus."""
    from askgate.adapters import registry
    from askgate.hookrt.decide import respond as decide

    adapter = registry.adapter(agent)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    daemon_log, inproc_log = tmp_path / "daemon.jsonl", tmp_path / "inproc.jsonl"
    daemon_env = {**env, "ASKGATE_AUDIT_LOG": str(daemon_log)}
    running = start_daemon(daemon_env)
    try:
        inproc_env = {**env, "ASKGATE_AUDIT_LOG": str(inproc_log)}
        outputs: set[bytes] = set()
        for index, command in enumerate(CORPUS):
            data = agent_payload(agent, project, command, index)
            local = decide(adapter, data, env=inproc_env)
            via_relay = relay.relay(data, [], daemon_env, agent)
            assert via_relay == (local.code, local.stdout, local.stderr.encode()), command
            outputs.add(local.stdout[:60])
        assert running.daemon.requests == len(CORPUS)
        assert audit_lines(daemon_log) == audit_lines(inproc_log)
        assert {r["client"] for r in audit_lines(inproc_log)} == {agent}
        assert len(outputs) >= 3
    finally:
        running.stop()


def test_an_unknown_agent_gets_no_answer_from_the_daemon(
    tmp_path: Path, env: dict[str, str], running: Running
) -> None:
    assert relay.relay(payload(tmp_path, "rm -rf x"), [], env, "no-such-agent") == relay.FAILED
    assert running.daemon.requests == 0


def test_policy_is_compiled_once_and_reused(tmp_path: Path, running: Running) -> None:
    env = base_env(tmp_path)
    for _ in range(5):
        relay.relay(payload(tmp_path, "git status"), [], env)
    assert running.daemon.cache.loads == 1


# --- never stale ------------------------------------------------------------------------


def _decision(reply: Any) -> str:
    assert isinstance(reply, tuple), reply
    code, stdout, _ = reply
    assert code == 0, reply
    return json.loads(stdout)["hookSpecificOutput"]["permissionDecision"]


def test_an_edited_policy_file_applies_to_the_next_call(
    tmp_path: Path, env: dict[str, str], running: Running
) -> None:
    policy = Path(env["XDG_CONFIG_HOME"]) / "askgate" / "policy.toml"
    data = payload(tmp_path, "make x")
    assert _decision(relay.relay(data, [], env)) == "ask"
    stat_before = policy.stat()
    # Same size, written within the same clock tick: stat alone could miss it.
    text = POLICY.replace('"curl *" = "deny"', '"make *" = "deny"')
    assert len(text) == len(POLICY)
    policy.write_text(text)
    os.utime(policy, ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))
    assert _decision(relay.relay(data, [], env)) == "deny"


def test_managed_file_and_project_file_are_revalidated(
    tmp_path: Path, env: dict[str, str], running: Running
) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    data = payload(project, "git status")
    assert _decision(relay.relay(data, [], env)) == "allow"
    Path(env["ASKGATE_MANAGED_POLICY"]).write_text('[bash]\n"git *" = "deny"\n')
    assert _decision(relay.relay(data, [], env)) == "deny"
    Path(env["ASKGATE_MANAGED_POLICY"]).unlink()
    assert _decision(relay.relay(data, [], env)) == "allow"
    (project / ".askgate").mkdir()
    (project / ".askgate" / "policy.toml").write_text('[bash]\n"git status" = "ask"\n')
    assert _decision(relay.relay(data, [], env)) == "ask"


def test_trusting_a_project_applies_to_the_next_call(
    tmp_path: Path, env: dict[str, str], running: Running
) -> None:
    from askgate.policy.trust import trust_project

    project = tmp_path / "proj"
    (project / ".askgate").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / ".askgate" / "policy.toml").write_text('[bash]\n"make *" = "allow"\n')
    data = payload(project, "make build")
    assert _decision(relay.relay(data, [], env)) == "ask"  # untrusted: its allow is ignored
    trust_project(str(project), env)
    assert _decision(relay.relay(data, [], env)) == "allow"


def test_config_files_from_the_relay_are_used(
    tmp_path: Path, env: dict[str, str], running: Running
) -> None:
    config = tmp_path / "only.toml"
    config.write_text('[bash]\n"make *" = "allow"\n')
    assert _decision(relay.relay(payload(tmp_path, "make"), [str(config)], env)) == "allow"
    assert _decision(relay.relay(payload(tmp_path, "make"), [], env)) == "ask"


# --- HTTP authentication ----------------------------------------------------------------


@pytest.mark.parametrize("secret", [None, "", "wrong-secret", "x" * 43])
def test_http_without_the_right_secret_is_401(tmp_path: Path, running: Running, secret) -> None:
    status, body = http_post(running.daemon, payload(tmp_path, "git status"), secret)
    assert status == 401
    assert b"permissionDecision" not in body


def test_http_errors_become_deny_decisions(tmp_path: Path, running: Running) -> None:
    """An http hook cannot block by exit code: bad input is answered with a deny."""
    status, body = http_post(running.daemon, b"not json", running.daemon.secret)
    assert status == 200
    out = json.loads(body)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    bad_pr = json.dumps(
        {"hook_event_name": "PermissionRequest", "cwd": str(tmp_path), "tool_input": {}}
    ).encode()
    status, body = http_post(running.daemon, bad_pr, running.daemon.secret)
    assert json.loads(body)["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_http_keep_alive_serves_several_requests(tmp_path: Path, running: Running) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", running.daemon.port, timeout=SAFETY_TIMEOUT)
    try:
        for command, want in (("git status", "allow"), ("rm -rf x", "deny")):
            conn.request(
                "POST",
                "/hook/claude-code",
                body=payload(tmp_path, command),
                headers={"X-Askgate-Secret": running.daemon.secret},
            )
            response = conn.getresponse()
            out = json.loads(response.read())["hookSpecificOutput"]
            assert out["permissionDecision"] == want
    finally:
        conn.close()


def raw_http(daemon: Daemon, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=SAFETY_TIMEOUT) as conn:
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := conn.recv(65536):
            out += chunk
    return out


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"garbage\r\n\r\n",
        b"POST /hook/claude-code HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 20000 + b"\r\n\r\n",
        b"POST /hook/claude-code HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n",
        b"POST /hook/claude-code HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc",
    ],
    ids=["not-http", "head-too-large", "bad-length", "short-body"],
)
def test_malformed_http_is_400_and_never_a_decision(running: Running, request_bytes: bytes) -> None:
    answer = raw_http(running.daemon, request_bytes)
    assert b"permissionDecision" not in answer
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400")


def test_http_chunked_and_http10_requests_are_answered(tmp_path: Path, running: Running) -> None:
    """h11 speaks the whole of HTTP/1.1 framing: a chunked body and an HTTP/1.0 request
    get the same decision as Claude Code's own Content-Length form."""
    body = payload(tmp_path, "rm -rf x")
    secret = running.daemon.secret.encode()
    chunked = (
        b"POST /hook/claude-code HTTP/1.1\r\nHost: x\r\nX-Askgate-Secret: "
        + secret
        + b"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        + b"%x\r\n" % len(body)
        + body
        + b"\r\n0\r\n\r\n"
    )
    http10 = (
        b"POST /hook/claude-code HTTP/1.0\r\nX-Askgate-Secret: "
        + secret
        + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
        + body
    )
    for request_bytes in (chunked, http10):
        answer = raw_http(running.daemon, request_bytes)
        head, _, reply = answer.partition(b"\r\n\r\n")
        assert head.split(b" ")[1] == b"200", answer
        assert json.loads(reply)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_secret_file_is_private_and_stable(env: dict[str, str]) -> None:
    from askgate.daemon.server import load_or_create_secret

    first = load_or_create_secret(env)
    path = Path(paths.secret_path(env))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_secret(env) == first
    path.chmod(0o644)
    with pytest.raises(PermissionError):
        load_or_create_secret(env)


# --- the Unix socket --------------------------------------------------------------------


def test_socket_and_directory_are_private(env: dict[str, str], running: Running) -> None:
    sock = Path(paths.socket_path(env))
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700


def test_a_shared_runtime_directory_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    env = {**base_env(tmp_path), "ASKGATE_RUNTIME_DIR": str(shared)}
    with pytest.raises(paths.UnsafeDirectory):
        Daemon(env, port=0).bind()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root (to be another user than the daemon)")
def test_another_user_gets_no_answer(tmp_path: Path) -> None:
    """SO_PEERCRED: even with the socket opened up, a peer of another uid is dropped."""
    import tempfile

    outer = tempfile.mkdtemp(prefix="askgate-peercred-", dir="/tmp")  # reachable by nobody
    try:
        run = Path(outer) / "run"
        run.mkdir(mode=0o700)
        env = {**base_env(tmp_path), "ASKGATE_RUNTIME_DIR": str(run)}
        running = start_daemon(env)
        try:
            sock = paths.socket_path(env)
            os.chmod(outer, 0o755)
            os.chmod(run, 0o755)
            os.chmod(sock, 0o666)
            frame = protocol.encode_request(b"ping", [])

            def check(_scratch: Path) -> None:  # as nobody, in a forked child
                peer = socket.socket(socket.AF_UNIX)
                peer.settimeout(20)
                peer.connect(sock)
                try:
                    peer.sendall(frame)
                    peer.shutdown(socket.SHUT_WR)
                    answer = peer.recv(100)
                except (BrokenPipeError, ConnectionResetError):
                    answer = b""  # dropped: no answer either
                finally:
                    peer.close()
                assert answer == b"", answer

            run_as_nobody(check)
            assert not isinstance(relay.exchange(sock, frame, 10.0), str)  # we still get answers
        finally:
            running.stop()
    finally:
        shutil.rmtree(outer, ignore_errors=True)


# --- fallbacks ----------------------------------------------------------------------------


def test_no_daemon_is_reported(env: dict[str, str]) -> None:
    assert relay.relay(payload("/", "git status"), [], env) == relay.NO_DAEMON


def test_a_dead_daemons_socket_is_no_daemon(env: dict[str, str]) -> None:
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(paths.socket_path(env))
    dead.close()  # the file stays, nothing listens
    assert relay.relay(payload("/", "git status"), [], env) == relay.NO_DAEMON


def _fake_listener(env: dict[str, str], answer: bytes | None) -> tuple[socket.socket, Any]:
    """A socket at the daemon's path that answers `answer`, or hangs (None)."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(paths.socket_path(env))
    server.listen(4)
    release = threading.Event()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                if answer is None:
                    release.wait(30)
                else:
                    conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    return server, release


@pytest.mark.parametrize(
    "answer",
    [
        None,
        b"garbage\n",
        b"AG1 0 5 0\nabc",  # short
        b"AG1 1 0 0\n",  # an exit code the hook never uses
        b"AG1 0 2 0\n{}" + b"x",  # trailing bytes
    ],
    ids=["hung", "garbage", "short", "exit-1", "trailing"],
)
def test_a_misbehaving_daemon_falls_back_in_process(
    tmp_path: Path, env: dict[str, str], answer: bytes | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay never trusts a bad answer: the hook decides in-process (same answer as
    without any daemon)."""
    from askgate.hooks.runner import answer as hook_answer

    # The in-process path installs one-line logging: undo it.
    logger = logging.getLogger("askgate")
    monkeypatch.setattr(logger, "handlers", list(logger.handlers))
    monkeypatch.setattr(logger, "propagate", logger.propagate)

    env = {**env, "ASKGATE_RELAY_TIMEOUT": "0.5"}
    server, release = _fake_listener(env, answer)
    try:
        data = payload(tmp_path, "rm -rf x")
        assert isinstance(relay.relay(data, [], env), str)
        reply = hook_answer("claude-code", data, [], env)
        assert reply == respond(data, env=env)
        assert _decision((reply.code, reply.stdout, reply.stderr)) == "deny"
    finally:
        release.set()
        server.close()


def test_version_mismatch_falls_back_and_retires_the_daemon(
    tmp_path: Path, env: dict[str, str], running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relay, "version", lambda: b"0.0.0-other")
    assert relay.relay(payload(tmp_path, "git status"), [], env) == relay.FAILED
    running.thread.join(timeout=SAFETY_TIMEOUT)
    assert not running.thread.is_alive()


def test_idle_daemon_exits(env: dict[str, str]) -> None:
    r = start_daemon(env, idle_exit_s=0.2)
    r.thread.join(timeout=SAFETY_TIMEOUT)
    assert not r.thread.is_alive()
    assert not os.path.exists(paths.socket_path(env))


def test_second_daemon_does_not_take_over(env: dict[str, str], running: Running) -> None:
    from askgate.daemon.server import AlreadyRunning

    with pytest.raises(AlreadyRunning):
        Daemon(env, port=0).bind()
    assert relay.exchange(paths.socket_path(env), protocol.encode_request(b"ping", []), 10.0)


# --- the real command hook and the CLI ---------------------------------------------------


def hook_process(env: dict[str, str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "askgate", "hook", "claude-code"],
        input=data,
        capture_output=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
    )


def daemon_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "askgate", "daemon", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
    )


@pytest.fixture
def cli_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {
        **base_env(tmp_path),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
        "ASKGATE_DAEMON_PORT": "0",
    }
    try:
        yield env
    finally:
        daemon_cli(env, "stop")


def test_the_command_hook_starts_a_daemon_and_then_uses_it(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    log = tmp_path / "review.jsonl"
    env = {**cli_env, "ASKGATE_AUDIT_LOG": str(log)}
    data = payload(tmp_path, "rm -rf x")
    first = hook_process(env, data)  # no daemon: in-process, and one is started
    assert first.returncode == 0, first.stderr
    wait_until(lambda: daemon_cli(env, "status").returncode == 0, "the daemon to answer")
    second = hook_process(env, data)  # through the relay
    assert second.stdout == first.stdout and second.returncode == 0
    status = daemon_cli(env, "status").stdout
    assert ", 1 requests" in status
    assert "idle exit 1800" in status  # started for the hook: goes away when unused
    records = audit_lines(log)
    assert len(records) == 2 and records[0] == records[1]


def test_daemon_off_starts_nothing(tmp_path: Path, cli_env: dict[str, str]) -> None:
    env = {**cli_env, "ASKGATE_DAEMON": "off"}
    proc = hook_process(env, payload(tmp_path, "git status"))
    assert proc.returncode == 0
    assert os.listdir(env["ASKGATE_RUNTIME_DIR"]) == []


def test_killed_daemon_still_decides(tmp_path: Path, cli_env: dict[str, str]) -> None:
    assert daemon_cli(cli_env, "start").returncode == 0
    state = json.loads((Path(cli_env["ASKGATE_RUNTIME_DIR"]) / "daemon.json").read_text())
    os.kill(state["pid"], 9)
    wait_until(lambda: daemon_cli(cli_env, "status").returncode == 3, "the daemon gone")
    proc = hook_process(cli_env, payload(tmp_path, "rm -rf x"))
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # The hook started a fresh daemon for the next call; stop it (it would outlive the test).
    wait_until(lambda: daemon_cli(cli_env, "status").returncode == 0, "the daemon back")
    assert daemon_cli(cli_env, "stop").returncode == 0
    assert daemon_cli(cli_env, "status").returncode == 3


def test_daemon_cli_start_status_stop(cli_env: dict[str, str]) -> None:
    assert daemon_cli(cli_env, "status").returncode == 3
    started = daemon_cli(cli_env, "start")
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("running: pid ")
    assert "idle exit never" in started.stdout  # an http hook cannot restart it
    assert daemon_cli(cli_env, "start").returncode == 0  # idempotent
    assert daemon_cli(cli_env, "status").returncode == 0
    stopped = daemon_cli(cli_env, "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert daemon_cli(cli_env, "status").returncode == 3
    assert daemon_cli(cli_env, "stop").returncode == 0


def test_daemon_cli_bad_usage(cli_env: dict[str, str]) -> None:
    for args in ((), ("frobnicate",), ("start", "--port", "x")):
        proc = daemon_cli(cli_env, *args)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr


def test_agents_may_not_write_the_daemons_socket_or_secret(env: dict[str, str]) -> None:
    """A fake daemon bound at the socket path would answer every hook: the runtime
    directory and the secret are askgate state, denied to agents like the trust store."""
    from askgate.policy.engine import Policy

    env = {k: v for k, v in env.items() if k != "ASKGATE_RUNTIME_DIR"}  # a test seam only
    env["XDG_RUNTIME_DIR"] = str(Path(env["HOME"]).parent / "xdg-run")
    policy = Policy.load("/", env=env)
    sock = paths.socket_path(env)
    assert sock.startswith(env["XDG_RUNTIME_DIR"] + "/askgate/")
    for surface, value in (
        ("write", sock),
        ("write", paths.secret_path(env)),
        ("bash", f"rm -f {sock}"),
    ):
        assert str(policy.decide(surface, value, cwd="/").action) == "deny", value


def test_a_taken_port_leaves_the_relay_working(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Auto-started without a port, a daemon whose http port is taken still serves the
    relay; asked for that port explicitly, it refuses to start."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        monkeypatch.setenv("ASKGATE_DAEMON_PORT", str(port))
        daemon = Daemon(env, port=None)
        daemon.bind()
        thread = threading.Thread(target=daemon.serve_forever, daemon=True)
        thread.start()
        try:
            assert daemon.http is False and str(port) in daemon.http_error
            assert _decision(relay.relay(payload("/", "rm -rf x"), [], env)) == "deny"
        finally:
            daemon.stopping.set()
            thread.join(timeout=SAFETY_TIMEOUT)
        strict = Daemon(env, port=port, http_required=True)
        try:
            with pytest.raises(OSError):
                strict.bind()
        finally:
            strict.close()


def test_the_relay_imports_almost_nothing(tmp_path: Path, running: Running) -> None:
    """With a daemon answering, the hook process loads no msgspec, policy or parser."""
    script = (
        "import io, json, sys\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))\n"
        "from askgate.entry import main\n"
        "code = main(['hook', 'claude-code'])\n"
        "heavy = ('msgspec', 'askgate.policy.engine', 'tree_sitter', 'typing', 'socket')\n"
        "loaded = sorted(m for m in heavy if m in sys.modules)\n"
        "print(json.dumps({'code': code, 'loaded': loaded}), file=sys.stderr)\n"
    )
    # Exactly the daemon's environment: whatever else the caller's holds (CI exports
    # ASKGATE_TEST_DATABASE_URL, a pinned name) would have the daemon refuse the call.
    env = dict(running.daemon.env)
    ready = relay.exchange(paths.socket_path(env), protocol.encode_request(b"ping", []), 30.0)
    assert isinstance(ready, tuple) and ready[0] == 0  # listening: the real readiness signal
    proc = subprocess.run(
        [sys.executable, "-c", script, payload(tmp_path, "rm -rf x").decode()],
        capture_output=True,
        env=env,
        timeout=SAFETY_TIMEOUT,
    )
    assert (running.daemon.refused, running.daemon.last_refusal) == (0, "")
    report = json.loads(proc.stderr.decode().strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": []}
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert running.daemon.requests == 1


def test_connections_held_open_do_not_starve_the_next_call(running: Running) -> None:
    """Each connection is served by the thread that accepted it; more connections held
    open (an ask waiting for a human, a stalled client) than there are idle threads still
    leave the next call an answer: the pool grows."""
    from askgate.daemon.server import IDLE_ACCEPTORS

    sock_path = paths.socket_path(running.daemon.env)
    held = []
    try:
        for _ in range(IDLE_ACCEPTORS + 2):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(sock_path)
            conn.sendall(b"AG1 ping")  # half a header: its thread waits for the rest
            held.append(conn)
        answer = relay.exchange(sock_path, protocol.encode_request(b"ping", []), 30.0)
        assert isinstance(answer, tuple) and answer[0] == 0 and b"pid=" in answer[1]
    finally:
        for conn in held:
            conn.close()


def test_a_hook_with_another_pinned_variable_is_refused_visibly(
    tmp_path: Path, running: Running
) -> None:
    """The relay's silent fallback (CI: ASKGATE_TEST_DATABASE_URL set for the hook, not the
    daemon): still decided, in-process, and `askgate daemon status` says why."""
    env = {**running.daemon.env, "ASKGATE_TEST_DATABASE_URL": "postgresql://elsewhere"}
    proc = hook_process(env, payload(tmp_path, "rm -rf x"))
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert running.daemon.requests == 0  # not decided with the daemon's environment
    assert running.daemon.refused == 1
    assert "ASKGATE_TEST_DATABASE_URL" in running.daemon.last_refusal
    status = daemon_cli(running.daemon.env, "status")
    assert "1 hook calls were refused" in status.stdout
    assert "ASKGATE_TEST_DATABASE_URL differs" in status.stdout


# --- the daemon as a confused deputy (issue 20, class 3) ---------------------------------


def control_request(op: bytes, env: dict[str, str], token: bytes | None) -> Any:
    fields = [] if token is None else [b"control=" + token]
    return relay.exchange(paths.socket_path(env), protocol.encode_request(op, fields), 30.0)


@pytest.mark.parametrize(
    "token", [None, b"", b"0" * 64, b"x"], ids=["missing", "empty", "wrong", "short"]
)
def test_stop_without_the_control_token_is_refused(
    tmp_path: Path, env: dict[str, str], running: Running, token: bytes | None
) -> None:
    answer = control_request(b"stop", env, token)
    assert isinstance(answer, tuple) and answer[0] == 2
    assert b"control token" in answer[2] and answer[2].count(b"\n") == 0
    assert not running.daemon.stopping.is_set()
    assert _decision(relay.relay(payload(tmp_path, "rm -rf x"), [], env)) == "deny"


def test_stop_with_the_control_token_stops(env: dict[str, str], running: Running) -> None:
    token_file = Path(paths.control_path(env))
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    token = token_file.read_text().strip()
    assert len(token) == 64 and int(token, 16) >= 0
    answer = control_request(b"stop", env, token.encode())
    assert isinstance(answer, tuple) and answer[0] == 0
    running.thread.join(timeout=SAFETY_TIMEOUT)
    assert not running.thread.is_alive()
    assert not token_file.exists()  # a stopped daemon's token is gone with it


def test_sweep_without_the_control_token_changes_nothing(
    tmp_path: Path, env: dict[str, str], running: Running
) -> None:
    """A forged sweep cannot make the daemon remove a live run's placeholders."""
    runs = Path(env["XDG_DATA_HOME"]) / "askgate" / "sandbox" / "runs"
    runs.mkdir(parents=True)
    record = runs / "w-forged"
    record.mkdir()
    (record / "record").write_text("{}")
    before = sorted(p.name for p in record.iterdir())
    for token in (None, b"0" * 64):
        answer = control_request(b"sweep", env, token)
        assert isinstance(answer, tuple) and answer[0] == 2
    assert sorted(p.name for p in record.iterdir()) == before


@pytest.mark.parametrize(
    "name",
    ["ASKGATE_AUDIT_LOG", "XDG_STATE_HOME", "XDG_DATA_HOME", "ASKGATE_MANAGED_POLICY", "HOME"],
)
def test_a_forged_request_environment_writes_nothing_and_decides_nothing(
    tmp_path: Path, env: dict[str, str], name: str
) -> None:
    """`ASKGATE_AUDIT_LOG=~/.bashrc` (or a state/data directory, or a managed file the
    agent controls) in a relayed request: the daemon does not use it. It refuses the call,
    so the hook decides in its own process; the named file is not written."""
    bashrc = tmp_path / "victim" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("# the user's shell setup\n")
    daemon_log = tmp_path / "daemon.jsonl"
    daemon_env = {**env, "ASKGATE_AUDIT_LOG": str(daemon_log)}
    Path(env["ASKGATE_MANAGED_POLICY"]).write_text('[bash]\n"git push *" = "deny"\n')
    running = start_daemon(daemon_env)
    try:
        forged = {**daemon_env, name: str(bashrc if name == "ASKGATE_AUDIT_LOG" else bashrc.parent)}
        data = payload(tmp_path, "git push origin main")
        assert relay.relay(data, [], forged) == relay.FAILED
        assert bashrc.read_text() == "# the user's shell setup\n"
        assert sorted(p.name for p in bashrc.parent.iterdir()) == [".bashrc"]
        assert not daemon_log.exists()  # refused before deciding: no decision was made
        assert running.daemon.requests == 0
        # The daemon still decides honest requests, with the managed floor.
        assert _decision(relay.relay(data, [], daemon_env)) == "deny"
    finally:
        running.stop()


def test_the_relay_sends_only_the_listed_environment(tmp_path: Path) -> None:
    from askgate.daemon import request_env

    env = {
        "HOME": "/h",
        "ASKGATE_AUDIT_LOG": "/l",
        "AWS_SECRET_ACCESS_KEY": "k",
        "GITHUB_TOKEN": "t",
        "PATH": "/bin",
        "XDG_SESSION_ID": "3",
    }
    fields = relay.request_fields([], env)
    sent = {f.split(b"=", 2)[1] for f in fields if f.startswith(b"env=")}
    assert sent == {b"HOME", b"ASKGATE_AUDIT_LOG"}
    assert request_env.DECISION_INPUTS == ()
    assert b"agent=claude-code" in fields
