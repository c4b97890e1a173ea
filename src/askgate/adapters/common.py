"""What every agent adapter shares: reading the agent's JSON, opening a gate, asking through
the approval server, and combining the verdicts of a call that touches several files.

An adapter is a thin translation (the agent's JSON -> `ToolRequest`, `Outcome` -> the agent's
JSON). Everything it cannot translate is a `HookError`, which each adapter turns into its
agent's "block" (exit 2 with a reason on stderr, plus the deny JSON where the agent reads
stdout even on failure). Nothing here decides: the gate does.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

import msgspec

if TYPE_CHECKING:
    from askgate.audit import AuditLog
    from askgate.gate import Gate, Pending
    from askgate.outcome import Outcome, ToolRequest
    from askgate.prompters.base import Prompter
    from askgate.sandbox.wrap import SandboxRewrite

MAX_INPUT_BYTES = 10 * 1024 * 1024
APPROVAL_SERVER_MODULE = "askgate.prompters.server"

T = TypeVar("T")


class HookError(Exception):
    """A reason to block the call: the input cannot be read or translated."""


class UsageError(Exception):
    """Bad command-line arguments for a hook."""


def read_input(stream: IO[bytes], limit: int = MAX_INPUT_BYTES) -> bytes:
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise HookError(f"hook input is larger than {limit} bytes")
    return data


def decode(data: bytes, kind: type[T], what: str) -> T:
    """The agent's JSON as `kind`, or a HookError that says what was wrong."""
    try:
        return msgspec.json.decode(data, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise HookError(f"hook input is not a {what} JSON object: {exc}") from None
    except RecursionError:
        raise HookError("hook input is JSON nested too deeply") from None


def absolute_cwd(cwd: str) -> str:
    return cwd if os.path.isabs(cwd) else os.path.abspath(cwd)


def parse_config_args(argv: Sequence[str], command: str) -> list[str]:
    """`--config FILE` (repeatable) is the only option a hook takes."""
    config_files: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--config" and args:
            config_files.append(args.pop(0))
        elif arg.startswith("--config=") and len(arg) > len("--config="):
            config_files.append(arg.split("=", 1)[1])
        else:
            raise UsageError(f"{command}: unknown argument {arg!r} (only --config FILE)")
    return config_files


def audit_log(env: Mapping[str, str], client: str) -> AuditLog | None:
    from askgate.audit import AuditLog, default_log_path
    from askgate.locations import review_log_disabled

    # "off" cannot silence the log while a managed policy file exists (askgate.locations).
    if review_log_disabled(env):
        return None
    return AuditLog(default_log_path(env), client=client)


def approval_prompter(env: Mapping[str, str], session: str | None = None) -> Prompter | None:
    """The approval server's prompter when one is configured and reachable, else None.

    The one place any adapter reaches the approval server (built separately). It asks, in
    order: the slot `askgate.prompters.choose._approval_server(env, session)` where the
    build has one, then the factory `askgate.prompters.server.from_env(env)` (or
    `ServerPrompter.from_env`). An absent module means "not configured"; one that is present
    but broken raises, so the caller fails closed instead of silently skipping the phone.
    """
    from askgate.prompters import choose

    prompter: Prompter | None = None
    slot = getattr(choose, "_approval_server", None)
    if slot is not None:
        prompter = slot(env, session)
    if prompter is None:
        factory = _server_factory()
        prompter = factory(env) if factory is not None else None
    if prompter is None or not prompter.available():
        return None
    return prompter


def _server_factory() -> Any:
    try:
        module = importlib.import_module(APPROVAL_SERVER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name == APPROVAL_SERVER_MODULE:
            return None
        raise
    # None: a build whose server prompter has another shape; the agent's own prompt asks.
    return getattr(module, "from_env", None) or getattr(
        getattr(module, "ServerPrompter", None), "from_env", None
    )


def open_gate(
    cwd: str,
    *,
    client: str,
    config_files: Sequence[str] = (),
    agent: str | None = None,
    session: str | None = None,
    env: Mapping[str, str] | None = None,
    prompter: Prompter | None = None,
    prompt_timeout: float | None = None,
) -> Gate:
    """A gate on the policy for `cwd`, loaded plainly from the policy files."""
    from askgate.gate import Gate
    from askgate.policy.engine import Policy

    env = os.environ if env is None else env
    policy = Policy.load(cwd, config_files=config_files, agent=agent, env=env)
    return Gate(
        policy,
        audit=audit_log(env, client),
        session=session,
        prompter=prompter,
        prompt_timeout=prompt_timeout,
    )


def sandboxed(
    gate: Gate,
    tool_name: str,
    tool_input: Mapping[str, Any],
    *,
    cwd: str,
    agent: str | None,
    config_files: Sequence[str],
    env: Mapping[str, str],
) -> SandboxRewrite | None:
    """The kernel-sandboxed form of an allowed shell call (docs/sandbox.md), a reason to
    refuse it, or None when the policy's [sandbox] is off or the tool is not a shell."""
    from askgate.sandbox.wrap import sandbox_rewrite

    return sandbox_rewrite(
        tool_name,
        tool_input,
        cwd=cwd,
        agent=agent,
        config_files=config_files,
        env=env,
        policy=gate.policy,
    )


def delegate(gate: Gate, pending: Pending, to: str) -> None:
    """Record an ask handed to the agent's own prompt (whose answer askgate never sees)."""
    if gate.audit is not None:
        from askgate.audit import delegated_record

        gate.audit.write(delegated_record(pending, to=to))


def ask_reason(gate: Gate, pending: Pending) -> str:
    reason = pending.decision.reason
    if gate.policy.errors and not pending.decision.clamped:
        reason = f"a policy file failed to load ({gate.policy.errors[0]}); {reason}"
    return f"askgate: {reason}"


def preflight_all(gate: Gate, requests: Sequence[ToolRequest]) -> Outcome | list[Pending]:
    """The strictest answer over the requests that make up one call (a patch that edits
    three files): any deny denies, else the asks are returned, else allow.

    Every settled outcome is published; asks are left to the caller to resolve or delegate.
    """
    from askgate.gate import Pending

    pending: list[Pending] = []
    allowed: Outcome | None = None
    for request in requests:
        result = gate.preflight(request)
        if isinstance(result, Pending):
            pending.append(result)
            continue
        gate.publish(result, request)
        if not result.allowed:
            return result
        allowed = allowed or result
    if pending:
        return pending
    if allowed is None:
        raise HookError("no request to decide")
    return allowed


def resolve_all(gate: Gate, pending: Sequence[Pending]) -> Outcome:
    """Ask the gate's prompter (the approval server) about each ask in turn; the first
    refusal ends it. Every outcome is published by the gate."""
    outcome: Outcome | None = None
    for item in pending:
        outcome = gate.decide(item.request)
        if not outcome.allowed:
            return outcome
    if outcome is None:
        raise HookError("no ask to resolve")
    return outcome


def string_field(tool_input: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
    return None
