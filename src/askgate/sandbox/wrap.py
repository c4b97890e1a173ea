"""Wrap an allowed shell command so that it runs inside `askgate sandbox`.

    wrap_command("ls -la ~") ==
        "/usr/local/bin/askgate sandbox -- 'ls -la ~'"

The command is one single-quoted word (each `'` written as `'"'"'`), so the agent's shell
hands askgate exactly the original bytes and the sandbox runs `bash -c ORIGINAL`: what
bash runs inside is byte for byte what the agent asked for (tested on the bash corpus).

`sandbox_rewrite` is what an agent hook calls after the policy allowed a tool call: it
returns the rewritten tool input (only for shell tools, only when `[sandbox] bash` is not
`off`), or a reason to ask instead (the plan is incomplete or refuses), or None. The
rewritten command is the prepared wrapper (`prepared.py`: bwrap started directly, no
Python on the success path) when bubblewrap works here, else the launcher form above.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from askgate.policy.engine import Policy

import msgspec

SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "run_shell_command", "exec_command"})


class SandboxRewrite(msgspec.Struct, frozen=True, kw_only=True):
    """Either the input to run instead, or why the call must be asked about."""

    updated_input: dict[str, Any] | None = None
    ask_reason: str | None = None


def default_launcher() -> list[str]:
    """How the agent's shell can start askgate: this `askgate` script, else `python -m`."""
    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script) == "askgate" and os.path.isfile(script):
        return [os.path.abspath(script)]
    return [sys.executable, "-m", "askgate"]


def wrap_command(
    command: str,
    *,
    launcher: Sequence[str] | None = None,
    agent: str | None = None,
    config_files: Sequence[str] = (),
) -> str:
    """`<launcher> sandbox [--agent A] [--config F]… -- '<command>'` for a POSIX shell.

    Raises ValueError for a command no shell word can carry (a NUL byte, invalid UTF-8).
    """
    if "\x00" in command:
        raise ValueError("the command contains a NUL byte")
    try:
        command.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the command is not valid UTF-8") from None
    words = [*(launcher or default_launcher()), "sandbox"]
    if agent:
        words += ["--agent", agent]
    for path in config_files:
        words += ["--config", os.path.abspath(path)]
    return " ".join(shlex.quote(word) for word in words) + " -- " + shlex.quote(command)


def sandbox_rewrite(
    tool_name: str,
    tool_input: Mapping[str, Any],
    *,
    cwd: str,
    agent: str | None = None,
    config_files: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    launcher: Sequence[str] | None = None,
    policy: Policy | None = None,
    prepared: bool = True,
) -> SandboxRewrite | None:
    """The sandboxed form of an allowed shell call, a reason to ask, or None (unchanged).
    `policy`: the policy the caller already loaded for this cwd and agent (else loaded).
    `prepared`: emit the prepared wrapper where it applies (else always the launcher)."""
    command = tool_input.get("command")
    if tool_name not in SHELL_TOOLS or not isinstance(command, str) or not command.strip():
        return None
    from askgate.policy.engine import Policy
    from askgate.sandbox.plan import build_plan

    if policy is None:
        policy = Policy.load(cwd, config_files=config_files, agent=agent, env=env)
    if policy.sandbox.bash == "off":
        return None
    if prepared:
        from askgate.sandbox.prepared import ensure_state_directory

        # Before the plan: the state directory is one of the paths the plan protects.
        ensure_state_directory(os.environ if env is None else env)
    plan = build_plan(policy, policy.sandbox, cwd=cwd, agent=agent)
    if plan.refusals:
        return SandboxRewrite(ask_reason=f"the sandbox would refuse: {plan.refusals[0]}")
    if plan.ask_reason is not None:
        return SandboxRewrite(ask_reason=plan.ask_reason)
    try:
        wrapped = wrap_command(command, launcher=launcher, agent=agent, config_files=config_files)
    except ValueError as error:
        return SandboxRewrite(ask_reason=f"cannot hand the command to the sandbox: {error}")
    if prepared:
        from askgate.sandbox.placeholders import SandboxSetupError
        from askgate.sandbox.prepared import prepare_wrapper

        try:
            fast = prepare_wrapper(
                plan,
                command,
                env=os.environ if env is None else env,
                launcher=launcher or default_launcher(),
                agent=agent,
                config_files=config_files,
            )
        except SandboxSetupError as error:
            return SandboxRewrite(ask_reason=f"the sandbox cannot be prepared: {error}")
        if fast is not None:
            wrapped = fast
    return SandboxRewrite(updated_input={**tool_input, "command": wrapped})
