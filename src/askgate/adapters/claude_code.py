"""Claude Code PreToolUse command hook: `askgate hook claude-code`.

Reads the hook's JSON from stdin, decides, prints the hook's JSON on stdout:

* policy allow (or a yolo / infrastructure-read allow) -> ``permissionDecision: "allow"``
* policy deny -> ``"deny"`` with the reason (Claude shows it to the model)
* ask -> ``"ask"``: Claude Code shows its own permission prompt (in ``-p`` mode, where no
  prompt exists, Claude Code denies the call)

Any failure (unreadable input, wrong event, internal error) exits 2 with a one-line reason on
stderr: for PreToolUse, exit 2 blocks the call. Exit 1 or a crash would let the tool run, so
nothing here may raise past `main`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

MAX_INPUT_BYTES = 10 * 1024 * 1024
MAX_REASON = 9_000  # Claude Code caps hook output strings at 10,000 characters


class HookInput(msgspec.Struct, kw_only=True):
    hook_event_name: str
    tool_name: str
    tool_input: dict[str, Any]
    cwd: str
    session_id: str | None = None
    tool_use_id: str | None = None
    agent_type: str | None = None
    agent_id: str | None = None
    permission_mode: str | None = None


class HookError(Exception):
    """A reason to block the call (exit 2)."""


def parse_input(data: bytes) -> HookInput:
    if len(data) > MAX_INPUT_BYTES:
        raise HookError(f"hook input is larger than {MAX_INPUT_BYTES} bytes")
    try:
        hook = msgspec.json.decode(data, type=HookInput)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise HookError(f"hook input is not a PreToolUse JSON object: {exc}") from None
    except RecursionError:
        raise HookError("hook input is JSON nested too deeply") from None
    if hook.hook_event_name != "PreToolUse":
        raise HookError(
            f"askgate hook claude-code handles PreToolUse only, got {hook.hook_event_name!r}"
        )
    if not os.path.isabs(hook.cwd):
        hook.cwd = os.path.abspath(hook.cwd)
    return hook


def output(decision: str, reason: str) -> bytes:
    body = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason[:MAX_REASON],
        }
    }
    return msgspec.json.encode(body) + b"\n"


def run(
    data: bytes, *, config_files: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> bytes:
    """Decide one hook call; returns stdout bytes or raises HookError."""
    from askgate.audit import AuditLog, default_log_path
    from askgate.gate import Gate, Pending
    from askgate.outcome import ToolRequest
    from askgate.policy.engine import Policy
    from askgate.prompters.server import resolve_with_server

    hook = parse_input(data)
    env = os.environ if env is None else env
    policy = Policy.load(hook.cwd, config_files=config_files, agent=hook.agent_type, env=env)
    audit = None if env.get("ASKGATE_AUDIT_LOG") == "off" else AuditLog(default_log_path(env))
    gate = Gate(policy, audit=audit, session=hook.session_id)
    request = ToolRequest(
        tool=hook.tool_name,
        input=hook.tool_input,
        cwd=hook.cwd,
        agent=hook.agent_type,
        session=hook.session_id,
        request_id=hook.tool_use_id,
    )
    result = gate.preflight(request)
    # An ask goes to the approval server when one is configured (user/managed file or env).
    result = resolve_with_server(gate, result, env=env)
    if isinstance(result, Pending):
        # Claude Code asks its user itself; its answer never reaches us, so nothing is
        # recorded as an outcome here (the ask is logged as delegated).
        if audit is not None:
            from askgate.audit import delegated_record

            audit.write(delegated_record(result, to="claude-code"))
        reason = result.decision.reason
        if policy.errors and not result.decision.clamped:
            reason = f"a policy file failed to load ({policy.errors[0]}); {reason}"
        return output("ask", f"askgate: {reason}")
    gate.publish(result, request)
    if result.allowed:
        return output("allow", f"askgate: {result.reason}")
    return output("deny", result.reason)


def main(argv: Sequence[str]) -> int:
    config_files: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--config" and args:
            config_files.append(args.pop(0))
        elif arg.startswith("--config="):
            config_files.append(arg.split("=", 1)[1])
        else:
            print(f"askgate hook claude-code: unknown argument {arg!r}", file=sys.stderr)
            return 2
    try:
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        sys.stdout.buffer.write(run(data, config_files=config_files))
        sys.stdout.buffer.flush()
        return 0
    except HookError as exc:
        print(f"askgate: blocked: {exc}", file=sys.stderr)
        return 2
    except BaseException as exc:
        print(f"askgate: blocked by an internal error: {exc!r}"[:2000], file=sys.stderr)
        return 2
