"""Claude Code hooks: `askgate hook claude-code` for PreToolUse and PermissionRequest.

Reads the hook's JSON from stdin, decides, prints the hook's JSON on stdout.

PreToolUse (every tool call):

* policy allow (or a yolo / infrastructure-read allow) -> ``permissionDecision: "allow"``
* policy deny -> ``"deny"`` with the reason (Claude shows it to the model)
* ask -> ``"ask"``: Claude Code shows its own permission prompt (in ``-p`` mode, where no
  prompt exists, Claude Code denies the call)
* any failure -> exit 2 with one line on stderr, nothing on stdout (exit 2 blocks the call;
  before 2.1.214 exit 2 with unparseable JSON on stdout did not)

PermissionRequest (only when Claude Code would show its own prompt):

* allow -> ``{"decision": {"behavior": "allow"}}``
* deny -> ``{"decision": {"behavior": "deny", "message": reason}}``
* ask -> no output, exit 0: Claude Code's own prompt shows (no approval server here)
* any failure, once the input is known to be a PermissionRequest -> a deny decision on
  stdout and exit 0, because Claude Code does not honour exit 2 for this event

This module imports only `os` and `sys` at the top: `main` first tries the resident daemon
through the relay (askgate.daemon.relay), and only the in-process path loads the policy
machinery. `respond` is the one decision function; the daemon calls it too, so every path
gives byte-identical answers and writes the same audit line.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `typing`: the relay path must stay this lean
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from contextlib import AbstractContextManager
    from typing import Any

    from askgate.policy.engine import Policy

    # (cwd, config_files, agent, env) -> Policy; the daemon passes a cached loader.
    PolicyLoader = Callable[[str, Sequence[str], str | None, Mapping[str, str]], Policy]

MAX_INPUT_BYTES = 10 * 1024 * 1024
MAX_REASON = 9_000  # Claude Code caps hook output strings at 10,000 characters
MAX_ERROR_LINE = 2_000
PRE_TOOL_USE = "PreToolUse"
PERMISSION_REQUEST = "PermissionRequest"
EVENTS = (PRE_TOOL_USE, PERMISSION_REQUEST)
BLOCK = 2


class HookError(Exception):
    """A reason to block the call; `event` is the hook event when it is known."""

    def __init__(self, message: str, event: str = PRE_TOOL_USE) -> None:
        super().__init__(message)
        self.event = event


class Reply:
    """What the hook process does: exit code, stdout bytes, one stderr line (or none)."""

    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, code: int, stdout: bytes = b"", stderr: str = "") -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reply) and (self.code, self.stdout, self.stderr) == (
            other.code,
            other.stdout,
            other.stderr,
        )

    def __repr__(self) -> str:
        return f"Reply({self.code}, {self.stdout!r}, {self.stderr!r})"


def one_line(text: str, limit: int = MAX_ERROR_LINE) -> str:
    return " ".join(text.split())[:limit]


def _dumps(body: Mapping[str, Any]) -> bytes:
    """Compact JSON, non-ASCII as UTF-8. msgspec writes exactly the bytes `json.dumps`
    would for any text without lone surrogates (tests/test_hook_claude_code.py checks every
    code point) and spares a one-shot process importing `json`; a lone surrogate (or a
    broken msgspec) takes the `json` path, which writes it as a `\\u` escape."""
    try:
        import msgspec

        return msgspec.json.encode(body) + b"\n"
    except Exception:
        pass
    import json

    return (
        json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "backslashreplace"
        )
        + b"\n"
    )


def pre_tool_use_output(
    decision: str, reason: str, updated_input: dict[str, Any] | None = None
) -> bytes:
    specific: dict[str, Any] = {
        "hookEventName": PRE_TOOL_USE,
        "permissionDecision": decision,
        "permissionDecisionReason": reason[:MAX_REASON],
    }
    if updated_input is not None:
        specific["updatedInput"] = updated_input
    return _dumps({"hookSpecificOutput": specific})


def permission_request_output(behavior: str, message: str | None = None) -> bytes:
    decision: dict[str, str] = {"behavior": behavior}
    if message is not None:
        decision["message"] = message[:MAX_REASON]
    return _dumps(
        {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": decision}}
    )


def failure(event: str, text: str) -> Reply:
    """Block: exit 2 for PreToolUse; a deny decision for PermissionRequest."""
    line = one_line(text)
    if event == PERMISSION_REQUEST:
        return Reply(0, permission_request_output("deny", line))
    return Reply(BLOCK, b"", line)


def sniff_event(data: bytes) -> str:
    """The hook event of `data` when it is a JSON object naming one, else PreToolUse (whose
    failure is exit 2 with nothing on stdout, the safe answer when nothing is known)."""
    import json

    try:
        event = json.loads(data).get("hook_event_name")
    except Exception:
        return PRE_TOOL_USE
    return PERMISSION_REQUEST if event == PERMISSION_REQUEST else PRE_TOOL_USE


# --- deciding (in-process, and inside the daemon) -----------------------------------------


class HookInput:
    """The fields of Claude Code's hook input that askgate reads (others are ignored).

    Checked by hand rather than by a msgspec Struct: resolving a Struct's annotations costs
    a one-shot hook process more than the whole check."""

    __slots__ = (
        "agent_id",
        "agent_type",
        "cwd",
        "hook_event_name",
        "permission_mode",
        "session_id",
        "tool_input",
        "tool_name",
        "tool_use_id",
    )

    def __init__(self, raw: dict[str, Any], event: str) -> None:
        self.hook_event_name = event
        self.tool_name = _field(raw, "tool_name", str, event)
        self.tool_input = _field(raw, "tool_input", dict, event)
        self.cwd = _field(raw, "cwd", str, event)
        self.session_id = _optional(raw, "session_id", event)
        self.tool_use_id = _optional(raw, "tool_use_id", event)
        self.agent_type = _optional(raw, "agent_type", event)
        self.agent_id = _optional(raw, "agent_id", event)
        self.permission_mode = _optional(raw, "permission_mode", event)


def _field(raw: dict[str, Any], key: str, kind: type, event: str) -> Any:
    if key not in raw:
        raise HookError(f"hook input is not a {event} object: missing `{key}`", event)
    value = raw[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise HookError(
            f"hook input is not a {event} object: `{key}` must be"
            f" {'an object' if kind is dict else 'a string'}, got {type(value).__name__}",
            event,
        )
    return value


def _optional(raw: dict[str, Any], key: str, event: str) -> str | None:
    value = raw.get(key)
    return None if value is None else _field(raw, key, str, event)


def parse_input(data: bytes, process_cwd: str | None = None) -> Any:
    """The validated hook input; HookError (naming the event when known) otherwise."""
    import msgspec

    if len(data) > MAX_INPUT_BYTES:
        raise HookError(f"hook input is larger than {MAX_INPUT_BYTES} bytes")
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise HookError(f"hook input is not JSON: {exc}") from None
    except RecursionError:
        raise HookError("hook input is JSON nested too deeply") from None
    if not isinstance(raw, dict):
        raise HookError("hook input is not a JSON object")
    event = raw.get("hook_event_name")
    if event not in EVENTS:
        raise HookError(
            f"askgate hook claude-code handles PreToolUse and PermissionRequest, got {event!r}"
        )
    hook = HookInput(raw, event)
    if not os.path.isabs(hook.cwd):
        # Relative to the hook process (what Claude Code would mean), never the daemon's.
        hook.cwd = os.path.normpath(os.path.join(process_cwd or os.getcwd(), hook.cwd))
    return hook


def load_policy(
    cwd: str, config_files: Sequence[str], agent: str | None, env: Mapping[str, str]
) -> Policy:
    from askgate.policy.engine import Policy

    return Policy.load(cwd, config_files=config_files, agent=agent, env=env)


def respond(
    data: bytes,
    *,
    config_files: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    process_cwd: str | None = None,
    policy_loader: PolicyLoader | None = None,
    lock: AbstractContextManager[Any] | None = None,
) -> Reply:
    """Decide one hook call. Never raises: every failure is the event's blocking reply.

    `config_files` must already be absolute (relative to the hook process, not to the
    cwd the agent reports: see `main`). `lock` (the daemon's) is held while the policy is
    loaded and consulted, and released before anything that may wait for a human."""
    try:
        return _respond(
            data,
            config_files,
            os.environ if env is None else env,
            process_cwd,
            policy_loader or load_policy,
            lock,
        )
    except HookError as exc:
        return failure(exc.event, f"askgate: blocked: {exc}")
    except BaseException as exc:  # fail closed, whatever it was
        return failure(sniff_event(data), f"askgate: blocked by an internal error: {exc!r}")


def _respond(
    data: bytes,
    config_files: Sequence[str],
    env: Mapping[str, str],
    process_cwd: str | None,
    policy_loader: PolicyLoader,
    lock: AbstractContextManager[Any] | None,
) -> Reply:
    hook = parse_input(data, process_cwd)
    event = hook.hook_event_name
    try:
        return _decide(hook, config_files, env, policy_loader, lock)
    except BaseException as exc:
        return failure(event, f"askgate: blocked by an internal error: {exc!r}")


def _decide(
    hook: Any,
    config_files: Sequence[str],
    env: Mapping[str, str],
    policy_loader: PolicyLoader,
    lock: AbstractContextManager[Any] | None,
) -> Reply:
    from contextlib import nullcontext

    from askgate.audit import AuditLog, default_log_path, delegated_record
    from askgate.gate import Gate, Pending
    from askgate.locations import review_log_disabled
    from askgate.outcome import ToolRequest

    event = hook.hook_event_name
    request = ToolRequest(
        tool=hook.tool_name,
        input=hook.tool_input,
        cwd=hook.cwd,
        agent=hook.agent_type,
        session=hook.session_id,
        request_id=hook.tool_use_id,
    )
    # "off" cannot silence the log while a managed policy file exists (askgate.locations).
    audit = None if review_log_disabled(env) else AuditLog(default_log_path(env))
    with lock if lock is not None else nullcontext():
        policy = policy_loader(hook.cwd, config_files, hook.agent_type, env)
        gate = Gate(policy, audit=audit, session=hook.session_id)
        result = gate.preflight(request)
    # An ask goes to the approval server when one is configured (user/managed file or env):
    # outside the lock, since that can wait for a human.
    if isinstance(result, Pending):  # (only an ask: the module costs a settled call ~5 ms)
        from askgate.prompters.server import resolve_with_server

        result = resolve_with_server(gate, result, env=env)
    if isinstance(result, Pending):
        # Claude Code asks its user itself; its answer never reaches us, so nothing is
        # recorded as an outcome here (the ask is logged as delegated).
        if audit is not None:
            audit.write(delegated_record(result, to="claude-code"))
        if event == PERMISSION_REQUEST:
            return Reply(0)  # no decision: Claude Code shows its own prompt
        reason = result.decision.reason
        if policy.errors and not result.decision.clamped:
            reason = f"a policy file failed to load ({policy.errors[0]}); {reason}"
        return Reply(0, pre_tool_use_output("ask", f"askgate: {reason}"))
    gate.publish(result, request)
    if event == PERMISSION_REQUEST:
        if result.allowed:
            return Reply(0, permission_request_output("allow"))
        return Reply(0, permission_request_output("deny", result.reason))
    if result.allowed:
        # --- kernel sandbox (askgate.sandbox.wrap, docs/sandbox.md): when [sandbox] bash is
        # not "off", an allowed shell command runs as `askgate sandbox -- <command>`.
        from askgate.sandbox.wrap import sandbox_rewrite

        rewrite = sandbox_rewrite(
            hook.tool_name,
            hook.tool_input,
            cwd=hook.cwd,
            agent=hook.agent_type,
            config_files=config_files,
            env=env,
            policy=policy,
        )
        if rewrite is not None and rewrite.ask_reason is not None:
            return Reply(0, pre_tool_use_output("ask", f"askgate: {rewrite.ask_reason}"))
        if rewrite is not None:
            updated = rewrite.updated_input
            return Reply(0, pre_tool_use_output("allow", f"askgate: {result.reason}", updated))
        # --- end kernel sandbox
        return Reply(0, pre_tool_use_output("allow", f"askgate: {result.reason}"))
    return Reply(0, pre_tool_use_output("deny", result.reason))


# --- the hook process ---------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """(absolute config files, error). A relative `--config` is relative to this process's
    cwd, like every command-line file argument, and never to the cwd the agent reports
    (a directory the agent can write)."""
    config_files: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--config" and args:
            value = args.pop(0)
        elif arg.startswith("--config="):
            value = arg.split("=", 1)[1]
        else:
            return [], f"askgate hook claude-code: unknown argument {arg!r}"
        config_files.append(os.path.abspath(value) if value else value)
    return config_files, None


def daemon_enabled(env: Mapping[str, str]) -> bool:
    return env.get("ASKGATE_DAEMON", "").lower() not in ("off", "0", "no", "false")


def one_line_logging() -> None:
    """askgate's log records (an internal error the gate caught and turned into a deny)
    as single stderr lines: Python's fallback handler would print a traceback. Installed
    when something first logs (askgate.lazylog): a call that logs nothing never imports
    `logging`."""
    from askgate.lazylog import when_logging_loads

    when_logging_loads(_install_one_line_handler)


def _install_one_line_handler() -> None:
    import logging

    class OneLine(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                sys.stderr.write(f"askgate: {one_line(record.getMessage())}\n")
            except Exception:  # stderr gone: the decision stands
                return

    logger = logging.getLogger("askgate")
    if not logger.handlers:
        logger.addHandler(OneLine(logging.WARNING))
        logger.propagate = False


def decide_in_process(data: bytes, config_files: Sequence[str], env: Mapping[str, str]) -> Reply:
    """No daemon: a plain policy load in this process."""
    one_line_logging()
    return respond(data, config_files=config_files, env=env)


def answer(data: bytes, config_files: Sequence[str], env: Mapping[str, str]) -> Reply:
    """Through the resident daemon when one answers, else in-process (starting a daemon for
    the next call unless ASKGATE_DAEMON=off)."""
    if not daemon_enabled(env):
        return decide_in_process(data, config_files, env)
    from askgate.daemon import relay

    relayed = relay.relay(data, config_files, env)
    if not isinstance(relayed, str):
        code, stdout, stderr = relayed
        return Reply(code, stdout, stderr.decode("utf-8", "replace"))
    reply = decide_in_process(data, config_files, env)
    if relayed == relay.NO_DAEMON:
        relay.start_detached(env)
    return reply


def main(argv: Sequence[str]) -> int:
    config_files, arg_error = parse_args(argv)
    try:
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    except BaseException as exc:
        reply = failure(PRE_TOOL_USE, f"askgate: blocked: cannot read the hook input: {exc!r}")
    else:
        if arg_error is not None:
            reply = failure(sniff_event(data), arg_error)
        else:
            reply = answer(data, config_files, os.environ)
    if reply.stdout:
        sys.stdout.buffer.write(reply.stdout)
        sys.stdout.buffer.flush()
    if reply.stderr:
        sys.stderr.write(reply.stderr + "\n")
        sys.stderr.flush()
    return reply.code
