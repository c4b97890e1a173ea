"""ServerPrompter against a real approval server: approve, deny, budget end, late approval,
every failure a refusal; configuration never from a project file."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from askgate.approvals.canonical import input_digest
from askgate.gate import Gate
from askgate.outcome import Resolution, ToolRequest
from askgate.policy.engine import Policy
from askgate.prompters.base import PromptReply, PromptRequest, PromptState
from askgate.prompters.choose import default_prompter
from askgate.prompters.server import (
    DISABLED,
    INPUT_CHANGED,
    MISCONFIGURED,
    REJECTED,
    UNREACHABLE,
    MisconfiguredPrompter,
    ServerPrompter,
    configured_prompter,
    load_settings,
)
from server_support import AutoDecider, LiveServer, free_socket

COMMAND = {"command": "git push origin main"}
SERVER_T = {"ASKGATE_SERVER": "http://h:1", "ASKGATE_TOKEN": "t"}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    with LiveServer(tmp_path / "data", f"sqlite+aiosqlite:///{tmp_path / 'a.db'}") as server:
        yield server


def request(tool_input: dict[str, Any] | None = None, session: str = "s1") -> PromptRequest:
    return PromptRequest(
        request_id="r1",
        surface="bash",
        value="git push origin main",
        message="The agent wants to use Bash",
        agent="claude-code",
        session=session,
        tool="Bash",
        tool_input=COMMAND if tool_input is None else tool_input,
        cwd="/work/p",
        rule='bash "git push *" = ask (user)',
    )


def test_approved_by_a_human(live: LiveServer) -> None:
    token = live.add_user("alice")
    with AutoDecider(live, token, "allow") as human:
        reply = ServerPrompter(live.url, token, budget=20).prompt(request())
    assert reply.state is PromptState.APPROVED
    [approval_id] = human.seen
    row = live.call(lambda: live.ctx.store.get(approval_id))
    assert row is not None and row.input_sha256 == input_digest(COMMAND)
    assert row.cwd == "/work/p" and row.rule == 'bash "git push *" = ask (user)'


def test_denied_with_a_reason(live: LiveServer) -> None:
    token = live.add_user("alice")
    with AutoDecider(live, token, "deny", reason="not on Fridays"):
        reply = ServerPrompter(live.url, token, budget=20).prompt(request())
    assert reply.state is PromptState.DENIED_WITH_REASON
    assert reply.denial_reason == "not on Fridays"


def test_budget_end_is_timed_out_and_recorded_as_timeout(live: LiveServer) -> None:
    token = live.add_user("alice")
    with AutoDecider(live, token, None) as human:
        reply = ServerPrompter(live.url, token, budget=1.5).prompt(request())
    assert reply.state is PromptState.TIMED_OUT
    assert not reply.approved
    [approval_id] = human.seen
    row = live.call(lambda: live.ctx.store.get(approval_id))
    # the server knew the deadline: no abandon call is needed for the row to say so
    assert row is not None and row.status() == "timeout" and row.wait_until is not None


def test_a_late_approval_passes_the_identical_call_once(live: LiveServer) -> None:
    token = live.add_user("alice")
    prompter = ServerPrompter(live.url, token, budget=1.5)
    with AutoDecider(live, token, None) as human:
        assert prompter.prompt(request()).state is PromptState.TIMED_OUT
    [approval_id] = human.seen
    decided = live.client(token).post(
        f"/v1/approvals/{approval_id}/decide", json={"decision": "allow"}
    )
    # landed after the waiter's deadline: recorded as timeout, the Approve kept as late
    assert decided.json()["status"] == "timeout" and decided.json()["late"] == "allow"
    # another input, session, working directory or agent is not covered
    other = prompter.prompt(request({"command": "git push --force"}))
    assert other.state is PromptState.TIMED_OUT
    assert prompter.prompt(request(session="s2")).state is PromptState.TIMED_OUT
    elsewhere = msgspec.structs.replace(request(), cwd="/work/other")
    assert prompter.prompt(elsewhere).state is PromptState.TIMED_OUT
    by_other_agent = msgspec.structs.replace(request(), agent="codex")
    assert prompter.prompt(by_other_agent).state is PromptState.TIMED_OUT
    late = prompter.prompt(request())
    assert late.state is PromptState.APPROVED and late.detail == "late approval"
    assert prompter.prompt(request()).state is PromptState.TIMED_OUT  # consumed


def test_the_gate_reports_approval_timeout_and_unreachable(live: LiveServer, project, home) -> None:
    from conftest import policy_for

    token = live.add_user("alice")
    policy = policy_for(project, home, [("bash", "git push *", "ask")])
    call = ToolRequest(tool="Bash", input=COMMAND, cwd=str(project), session="s")
    with AutoDecider(live, token, "allow"):
        outcome = Gate(policy, prompter=ServerPrompter(live.url, token, budget=20)).decide(call)
    assert outcome.allowed and outcome.resolution is Resolution.USER_APPROVED
    with AutoDecider(live, token, None):
        outcome = Gate(policy, prompter=ServerPrompter(live.url, token, budget=1.5)).decide(call)
    assert not outcome.allowed and outcome.resolution is Resolution.TIMED_OUT
    closed = free_socket()
    dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    outcome = Gate(policy, prompter=ServerPrompter(dead_url, token, budget=1)).decide(call)
    assert not outcome.allowed
    assert outcome.resolution is Resolution.CONFIRMATION_UNAVAILABLE
    assert UNREACHABLE in outcome.reason


def test_disabled_and_rejected_token_are_refusals(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'b.db'}"
    with LiveServer(tmp_path / "d", db, approvals_enabled=False) as live:
        token = live.add_user("a")
        reply = ServerPrompter(live.url, token, budget=5).prompt(request())
        assert reply.state is PromptState.UNAVAILABLE and reply.detail == DISABLED
        bad = ServerPrompter(live.url, "agt_not_a_token", budget=5).prompt(request())
        assert bad.state is PromptState.UNAVAILABLE and bad.detail == REJECTED


class _LyingHandler(http.server.BaseHTTPRequestHandler):
    """A broken or hostile server: says "allow" for an input other than the one asked about,
    or fails with 500."""

    mode = "lie"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.mode == "fail":
            self.send_response(500)
            self.end_headers()
            return
        digest = input_digest(COMMAND if self.mode == "unconsumed" else {"command": "ls"})
        body = json.dumps(
            {
                "id": "appr-x",
                "status": "allow",
                "tool": "Bash",
                "input": COMMAND,
                "input_sha256": digest,
                "cwd": None,
                "session": None,
                "agent": None,
                "surface": None,
                "rule": None,
                "requested_at": 0.0,
                "expires_at": 2**40,
                "consumed": False,
            }
        ).encode()
        self.send_response(201)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("mode", "detail"),
    [("lie", INPUT_CHANGED), ("fail", UNREACHABLE), ("unconsumed", UNREACHABLE)],
)
def test_a_lying_or_failing_server_never_approves(mode: str, detail: str) -> None:
    handler = type("Handler", (_LyingHandler,), {"mode": mode})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        reply = ServerPrompter(url, "agt_x", budget=1).prompt(request())
    finally:
        server.shutdown()
        server.server_close()
    assert reply.state is PromptState.UNAVAILABLE
    assert not reply.approved
    assert reply.detail is not None and reply.detail.startswith(detail)


def test_an_input_without_canonical_form_is_refused_before_asking() -> None:
    reply = ServerPrompter("http://127.0.0.1:9", "t").prompt(request({"x": float("nan")}))
    assert reply.state is PromptState.UNAVAILABLE and "canonical" in (reply.detail or "")


# --- configuration ---------------------------------------------------------------------


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "managed.toml"),
        **extra,
    }


def _policy_file(path: Path, server: str, token_file: Path, budget: float = 30) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[approvals]\nserver = "{server}"\ntoken_file = "{token_file}"\nbudget = {budget}\n'
    )


def test_nothing_configured_means_no_server(tmp_path: Path) -> None:
    assert load_settings(_env(tmp_path)) is None
    assert configured_prompter(_env(tmp_path)) is None


def test_environment_configures_it(tmp_path: Path) -> None:
    env = _env(tmp_path, ASKGATE_SERVER="http://h:1/", ASKGATE_TOKEN="agt_t")
    settings = load_settings(env)
    assert settings is not None and settings.url == "http://h:1" and settings.token == "agt_t"


def test_user_file_configures_it_and_managed_wins_over_everything(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("agt_user\n")
    _policy_file(tmp_path / "cfg" / "askgate" / "policy.toml", "https://user.example", token, 12)
    settings = load_settings(_env(tmp_path))
    assert settings is not None and settings.url == "https://user.example"
    assert settings.token == "agt_user" and settings.budget == 12
    env = _env(tmp_path, ASKGATE_SERVER="https://env.example", ASKGATE_TOKEN="agt_env")
    settings = load_settings(env)
    assert settings is not None and settings.url == "https://env.example"
    _policy_file(tmp_path / "managed.toml", "https://managed.example", token, 40)
    settings = load_settings(env)
    assert settings is not None and settings.url == "https://managed.example"


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_file_never_configures_approvals(tmp_path: Path, trusted: bool) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    token = tmp_path / "token"
    token.write_text("agt_stolen")
    _policy_file(project / ".askgate" / "policy.toml", "https://attacker.example", token)
    env = _env(tmp_path)
    if trusted:
        from askgate.policy.trust import is_trusted, trust_project

        trust_project(str(project), env)
        assert is_trusted(str(project), env)
    # the project's policy still loads (its [approvals] table is accepted and ignored) ...
    policy = Policy.load(str(project), env=env)
    assert not policy.errors
    # ... but approvals go nowhere it says
    assert load_settings(env) is None
    prompter = default_prompter(session="s", env=env, tty_path=str(tmp_path / "no-tty"))
    assert not isinstance(prompter, ServerPrompter)


@pytest.mark.parametrize(
    ("extra", "files"),
    [
        ({"ASKGATE_SERVER": "http://h:1"}, {}),
        ({"ASKGATE_SERVER": "ftp://h", "ASKGATE_TOKEN": "t"}, {}),
        ({"ASKGATE_SERVER": "http://h:1", "ASKGATE_TOKEN_FILE": "/nonexistent/token"}, {}),
        (
            {"ASKGATE_SERVER": "http://h:1", "ASKGATE_TOKEN": "t", "ASKGATE_APPROVAL_BUDGET": "x"},
            {},
        ),
        ({}, {"managed.toml": '[approvals]\nserver = "https://m"\n'}),
        ({}, {"managed.toml": "[approvals\n"}),
    ],
    ids=["no-token", "bad-url", "token-file-missing", "bad-budget", "no-token-file", "broken-toml"],
)
def test_half_configured_approvals_refuse_every_ask(
    tmp_path: Path, extra: dict[str, str], files: dict[str, str]
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    prompter = configured_prompter(_env(tmp_path, **extra))
    assert isinstance(prompter, MisconfiguredPrompter)
    reply = prompter.prompt(request())
    assert isinstance(reply, PromptReply) and reply.state is PromptState.UNAVAILABLE
    assert reply.detail is not None and reply.detail.startswith(MISCONFIGURED)


def test_default_prompter_order_terminal_parent_server(tmp_path: Path) -> None:
    env = _env(tmp_path, ASKGATE_SERVER="http://127.0.0.1:9", ASKGATE_TOKEN="agt")
    no_tty = str(tmp_path / "no-tty")
    assert isinstance(default_prompter(session="s", env=env, tty_path=no_tty), ServerPrompter)
    child = {**env, "PI_SUBAGENT_CHILD": "1", "PI_SUBAGENT_PARENT_SESSION": "parent-1"}
    assert not isinstance(default_prompter(session="s", env=child, tty_path=no_tty), ServerPrompter)


def test_policy_file_validates_the_approvals_table(tmp_path: Path) -> None:
    from askgate.policy.config import load_policy

    bad = tmp_path / "bad.toml"
    bad.write_text("[approvals]\nserver = 5\n")
    policy = load_policy(str(tmp_path), config_files=[str(bad)], env=_env(tmp_path))
    assert policy.errors and "approvals" in str(policy.errors[0])
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('[approvals]\nsever = "https://x"\n')
    policy = load_policy(str(tmp_path), config_files=[str(unknown)], env=_env(tmp_path))
    assert policy.errors and "sever" in str(policy.errors[0])
