"""The one decision step of every hook, in-process and inside the daemon: the same bytes out.

    adapter.parse -> policy + gate preflight -> (asks: approval server, the agent's own
    prompt, or refused) -> (allowed shell calls: the kernel sandbox) -> adapter.render

`respond` never raises: any error, at any step, is the adapter's `failure` for the event
(when known), and if even that fails, exit 2 with one line. The review log's fields (the
`client`, delegated asks) are written here, for every agent alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from askgate.hookrt.contract import (
    Adapter,
    HookCall,
    HookError,
    Verdict,
    sniff_event,
)
from askgate.hookrt.reply import BLOCK, Reply, one_line

if TYPE_CHECKING:
    from askgate.audit import AuditLog
    from askgate.gate import Gate, Pending
    from askgate.outcome import Outcome, ToolRequest
    from askgate.policy.engine import Policy
    from askgate.prompters.base import Prompter

    # (cwd, config_files, agent, env) -> Policy; the daemon passes its cached loader.
    PolicyLoader = Callable[[str, Sequence[str], str | None, Mapping[str, str]], Policy]


def load_policy(
    cwd: str, config_files: Sequence[str], agent: str | None, env: Mapping[str, str]
) -> Policy:
    """A plain load from the policy files (no daemon: nothing is kept between calls)."""
    from askgate.policy.engine import Policy

    return Policy.load(cwd, config_files=config_files, agent=agent, env=env)


def respond(
    adapter: Adapter,
    data: bytes,
    *,
    config_files: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    process_cwd: str | None = None,
    policy_loader: PolicyLoader | None = None,
    lock: AbstractContextManager[Any] | None = None,
) -> Reply:
    """Decide one hook call for `adapter`. Never raises.

    `config_files` must already be absolute (relative to the hook process, never to the cwd
    the agent reports). `lock` (the daemon's) is held while the policy is loaded and
    consulted, and released before anything that may wait for a human."""
    try:
        call = adapter.parse(data, process_cwd)
    except HookError as exc:
        return fail(adapter, exc.event, f"askgate: blocked: {exc}")
    except BaseException as exc:  # fail closed, whatever it was
        return fail(adapter, sniff_event(data), f"askgate: blocked by an internal error: {exc!r}")
    try:
        return _decide(
            adapter,
            call,
            config_files,
            os.environ if env is None else env,
            policy_loader or load_policy,
            lock,
        )
    except HookError as exc:
        return fail(adapter, call.event, f"askgate: blocked: {exc}")
    except BaseException as exc:
        return fail(adapter, call.event, f"askgate: blocked by an internal error: {exc!r}")


def fail(adapter: Adapter, event: str | None, text: str) -> Reply:
    """The adapter's block for `event`; exit 2 with one line if even that fails."""
    try:
        return adapter.failure(event, text)
    except BaseException:
        return Reply(BLOCK, b"", one_line(text) or "askgate: blocked")


def audit_log(env: Mapping[str, str], client: str) -> AuditLog | None:
    from askgate.audit import AuditLog, default_log_path
    from askgate.locations import review_log_disabled

    # "off" cannot silence the log while a managed policy file exists (askgate.locations).
    if review_log_disabled(env):
        return None
    return AuditLog(default_log_path(env), client=client)


def _decide(
    adapter: Adapter,
    call: HookCall,
    config_files: Sequence[str],
    env: Mapping[str, str],
    policy_loader: PolicyLoader,
    lock: AbstractContextManager[Any] | None,
) -> Reply:
    from askgate.gate import Gate

    audit = audit_log(env, adapter.client)
    with lock if lock is not None else nullcontext():
        policy = policy_loader(call.cwd, config_files, call.agent, env)
        gate = Gate(policy, audit=audit, session=call.session)
        result = preflight_all(gate, call.requests)
    if isinstance(result, list):
        broken = [p for p in result if p.decision.clamped or policy.errors]
        route = adapter.ask_route(call, bool(broken))
        if route == "refuse":
            # Nobody can be asked from here (no prompter): the gate resolves the ask as
            # confirmation_unavailable, a deny; silence would hand the call to the agent.
            refused = resolve_all(gate, broken or result)
            why = f"{refused.reason} ({ask_reason(gate, (broken or result)[0])})"
            return adapter.render(call, Verdict(action="deny", reason=why))
        prompter = approval_prompter(env, call.session) if route == "server" else None
        if prompter is None:
            for pending in result:
                delegate(gate, pending, to=adapter.name)
            reason = ask_reason(gate, result[0])
            return adapter.render(call, Verdict(action="ask", reason=reason, origin="delegated"))
        asker = Gate(
            policy,
            audit=audit,
            session=call.session,
            prompter=prompter,
            prompt_timeout=adapter.prompt_budget,
        )
        outcome = resolve_all(asker, result)
    else:
        outcome = result
    if not outcome.allowed:
        return adapter.render(call, Verdict(action="deny", reason=outcome.reason))
    allowed = f"askgate: {outcome.reason}"
    if adapter.sandboxes(call):
        from askgate.sandbox.wrap import sandbox_rewrite

        rewrite = sandbox_rewrite(
            call.tool_name,
            call.tool_input,
            cwd=call.cwd,
            agent=call.agent,
            config_files=config_files,
            env=env,
            policy=policy,
        )
        if rewrite is not None and (rewrite.ask_reason is not None or not rewrite.updated_input):
            why = f"askgate: {rewrite.ask_reason or 'the sandbox cannot run it'}"
            return adapter.render(call, Verdict(action="ask", reason=why, origin="sandbox"))
        if rewrite is not None:
            verdict = Verdict(
                action="allow",
                reason=allowed,
                origin="sandbox",
                updated_input=rewrite.updated_input,
            )
            return adapter.render(call, verdict)
    return adapter.render(call, Verdict(action="allow", reason=allowed))


# --- the gate's side, shared with the ACP proxy's decision step ---------------------------


def approval_prompter(env: Mapping[str, str], session: str | None = None) -> Prompter | None:
    """The approval server's prompter when one is configured (user/managed policy file or
    the environment) and usable, else None. A configured but broken server is a prompter
    that refuses (askgate.prompters.server), so the call fails closed."""
    from askgate.prompters import choose

    prompter = choose._approval_server(env, session)
    if prompter is None or not prompter.available():
        return None
    return prompter


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

    Every settled outcome is published; asks are left to the caller."""
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
    """Ask `gate`'s prompter about each ask in turn (no second policy lookup); the first
    refusal ends it. Every outcome is published."""
    outcome: Outcome | None = None
    for item in pending:
        outcome = gate.resolve(item)
        gate.publish(outcome, item.request)
        if not outcome.allowed:
            return outcome
    if outcome is None:
        raise HookError("no ask to resolve")
    return outcome
