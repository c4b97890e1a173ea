"""The one decision step every Python framework adapter stands on.

    guard = Guard.for_project("/path/to/project", client="langgraph")
    verdict = guard.decide_call("shell", {"command": "make test"}, call_id="c1")

`decide_call` maps a framework's tool call onto askgate's surfaces (a shell-like tool is a
`Bash` command, decided unit by unit by the bash analysis; file tools are `Read`/`Write` of
their path; anything else is its `tool` rule by name, or `mcp__server__tool` for MCP), asks
the policy, and returns `Allow`, `Deny(reason)` or `Ask(pending)`. An adapter then maps the
verdict onto its framework: continue, refuse with a message to the model, or pause for a
human — the framework's own pause (`ask_token` binds the human's answer to this exact call:
tool, canonical arguments, cwd, session) or askgate's prompter chain (`resolve`).

Fail closed: any error while mapping or deciding is a `Deny` that says so. Nothing here
imports a framework; each adapter module imports its own, only when used.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import msgspec

from askgate.gate import Gate
from askgate.outcome import Outcome, Pending, Resolution, ToolRequest
from askgate.policy.model import Action


class Allow(msgspec.Struct, frozen=True):
    outcome: Outcome | None = None


class Deny(msgspec.Struct, frozen=True):
    reason: str
    outcome: Outcome | None = None


class Ask(msgspec.Struct, frozen=True):
    """A call that needs a human. `token` binds an answer to this exact call."""

    pending: Pending
    token: str
    question: str


Verdict = Allow | Deny | Ask

# Tool names frameworks give their shell, file and patch tools (and common custom ones).
SHELL_NAMES = frozenset(
    {
        "shell",
        "local_shell",
        "bash",
        "terminal",
        "run_shell_command",
        "shell_command",
        "execute_command",
        "run_command",
        "exec",
        "python_repl_shell",
    }
)
SHELL_KEYS = ("command", "commands", "cmd", "script")
READ_NAMES = frozenset({"read_file", "read", "file_read", "open_file", "cat", "view_file"})
WRITE_NAMES = frozenset(
    {"write_file", "write", "file_write", "edit_file", "create_file", "append_file", "edit"}
)
PATH_KEYS = ("file_path", "path", "filename", "file", "target_file")


def canonical_args(args: Any) -> str:
    """One text per argument value (sorted keys, no whitespace): what a token binds."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _command_of(args: Mapping[str, Any]) -> str | None:
    for key in SHELL_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return " && ".join(value) if key == "commands" else " ".join(value)
    return None


def _path_of(args: Mapping[str, Any]) -> str | None:
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def to_request(
    tool: str,
    args: Any,
    *,
    cwd: str,
    agent: str | None = None,
    session: str | None = None,
    call_id: str | None = None,
    mcp_server: str | None = None,
) -> ToolRequest:
    """The askgate request for a framework's tool call (see the module docstring)."""
    if not isinstance(args, Mapping):
        args = {"input": args}
    name = tool.strip()
    lowered = name.lower()
    common: dict[str, Any] = {"cwd": cwd, "agent": agent, "session": session}
    if mcp_server is not None:
        return ToolRequest(tool=f"mcp__{mcp_server}__{name}", input=dict(args), **common)
    command = _command_of(args)
    looks_like_shell = lowered in SHELL_NAMES or any(
        word in lowered for word in ("shell", "bash", "terminal")
    )
    if looks_like_shell:
        if command is None:
            # A shell tool whose command askgate cannot find: decided as the raw text of
            # all its arguments, which the bash analysis treats as one (unknown) command.
            command = canonical_args(args)
        return ToolRequest(tool="Bash", input={"command": command}, **common)
    path = _path_of(args)
    if path is not None and lowered in READ_NAMES:
        return ToolRequest(tool="Read", input={"file_path": _absolute(path, cwd)}, **common)
    if path is not None and lowered in WRITE_NAMES:
        return ToolRequest(tool="Write", input={"file_path": _absolute(path, cwd)}, **common)
    return ToolRequest(tool=name, input=dict(args), **common)


def _absolute(path: str, cwd: str) -> str:
    expanded = os.path.expanduser(path)
    return expanded if os.path.isabs(expanded) else os.path.join(cwd, expanded)


class Guard:
    """One framework integration's view of a Gate: decide, then resolve or answer asks."""

    def __init__(
        self,
        gate: Gate,
        *,
        client: str,
        cwd: str | None = None,
        session: str | None = None,
        agent: str | None = None,
    ) -> None:
        self.gate = gate
        self.client = client
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.session = session
        self.agent = agent

    @classmethod
    def for_project(
        cls,
        cwd: str | None = None,
        *,
        client: str,
        session: str | None = None,
        agent: str | None = None,
    ) -> Guard:
        """A Guard on the discovered policy of `cwd`'s project, askgate's prompter chain
        (terminal, parent session, approval server) and the review log, whose lines name
        `client`."""
        from askgate.audit import AuditLog
        from askgate.locations import review_log_disabled, review_log_path
        from askgate.policy.engine import Policy
        from askgate.prompters.choose import default_prompter

        root = os.path.abspath(cwd or os.getcwd())
        audit = None if review_log_disabled() else AuditLog(review_log_path(), client=client)
        gate = Gate(Policy.load(root), prompter=default_prompter(session=session), audit=audit)
        return cls(gate, client=client, cwd=root, session=session, agent=agent)

    # -- deciding

    def request_for(
        self,
        tool: str,
        args: Any,
        call_id: str | None = None,
        *,
        session: str | None = None,
        mcp_server: str | None = None,
    ) -> ToolRequest:
        return to_request(
            tool,
            args,
            cwd=self.cwd,
            agent=self.agent or self.client,
            session=session or self.session,
            call_id=call_id,
            mcp_server=mcp_server,
        )

    def decide_call(
        self,
        tool: str,
        args: Any,
        call_id: str | None = None,
        session: str | None = None,
        *,
        mcp_server: str | None = None,
    ) -> Verdict:
        """Allow, Deny(reason) or Ask(pending) for one tool call; never raises."""
        try:
            request = self.request_for(tool, args, call_id, session=session, mcp_server=mcp_server)
            result = self.gate.preflight(request)
        except Exception as exc:  # fail closed
            return Deny(f"askgate could not decide {tool!r}: {type(exc).__name__}: {exc}")
        if isinstance(result, Pending):
            return Ask(result, self.ask_token(tool, args, session), _question(result))
        self._publish(result, request)
        if result.action is Action.ALLOW:
            return Allow(result)
        return Deny(result.reason, result)

    def check(self, tool: str, args: Any, call_id: str | None = None) -> Allow | Deny:
        """`decide_call`, with an ask resolved through the prompter chain (blocking)."""
        verdict = self.decide_call(tool, args, call_id)
        return self.resolve(verdict) if isinstance(verdict, Ask) else verdict

    def resolve(self, ask: Ask) -> Allow | Deny:
        """Ask a human through the gate's prompter chain; nobody reachable or nobody
        answering in time is a Deny."""
        try:
            outcome = self.gate.resolve(ask.pending)
        except Exception as exc:  # gate.resolve fails closed itself; belt and braces
            return Deny(f"askgate could not ask a human: {exc}")
        self._publish(outcome, ask.pending.request)
        if outcome.action is Action.ALLOW:
            return Allow(outcome)
        return Deny(outcome.reason, outcome)

    def answer(
        self,
        ask: Ask,
        *,
        approved: bool,
        token: str | None,
        reason: str | None = None,
    ) -> Allow | Deny:
        """A human's answer that came back through the framework's own pause. It counts
        only for the call it was given for (`token`); anything else is a Deny."""
        if token != ask.token:
            return Deny("askgate: the approval does not match this tool call (its input changed)")
        resolution = Resolution.USER_APPROVED if approved else Resolution.USER_DENIED
        action = Action.ALLOW if approved else Action.DENY
        text = "approved by the user" if approved else (reason or "denied by the user")
        outcome = Outcome(
            request_id=ask.pending.request_id,
            action=action,
            resolution=resolution,
            decision=ask.pending.decision,
            reason=text,
            denial_reason=None if approved else reason,
        )
        self._publish(outcome, ask.pending.request)
        return Allow(outcome) if approved else Deny(text, outcome)

    def ask_token(self, tool: str, args: Any, session: str | None = None) -> str:
        """The binding of a human's answer: tool, canonical arguments, cwd, session."""
        material = json.dumps(
            ["askgate-ask-v1", tool, canonical_args(args), self.cwd, session or self.session],
            separators=(",", ":"),
        )
        return hashlib.sha256(material.encode()).hexdigest()

    def _publish(self, outcome: Outcome, request: ToolRequest) -> None:
        try:
            self.gate.publish(outcome, request)
        except Exception:  # the decision stands; a broken log or subscriber must not change it
            return


def _question(pending: Pending) -> str:
    request = pending.request
    shown = request.input.get("command") or request.input.get("file_path") or ""
    detail = f": {shown}" if shown else ""
    return f"askgate: allow {request.tool}{detail}? ({pending.decision.reason})"
