"""`askgate hook AGENT …`: the hook routing table and the fail-closed runner.

The package is the hook process, the top of the hook runtime: `entrypoints` (one function
per agent), `runner` (relay to the daemon, else decide here). Below it: askgate.daemon,
askgate.adapters, askgate.hookrt.

Both the console entry (`askgate.entry`, which routes a hook before the full CLI loads)
and the full CLI (`askgate.cli`) run hooks through here, so neither imports the other
for it. Imported on every tool call: the standard library's `sys` only.

For a hook, nothing may escape as a traceback or an exit code other than 0 and 2: every
agent treats exit 1 (an uncaught exception, an import error of a half-upgraded install) as
a non-blocking error and runs the tool. So `run_hook` catches everything, `BaseException`
included (a module that calls `sys.exit(0)` at import would otherwise "succeed" silently),
and turns it into exit 2 with one line on stderr.
"""

from __future__ import annotations

import sys

# agent -> "module:function"; the function takes the arguments after the agent name.
HOOKS: dict[str, str] = {
    "claude-code": "askgate.hooks.entrypoints:claude_code",
    "codex": "askgate.hooks.entrypoints:codex",
    "gemini": "askgate.hooks.entrypoints:gemini",
}
# Agents that read a verdict on stdout even from a failed hook, and fail open without one:
# what to print when the adapter itself cannot be loaded.
HOOK_FAILURE_STDOUT: dict[str, bytes] = {
    "gemini": b'{"decision":"deny","reason":"askgate: blocked: the hook could not load"}\n',
}

BLOCK = 2  # the exit code that blocks the tool call in every agent that honours one
MAX_ERROR_LINE = 600


def _one_line(text: str) -> str:
    text = " ".join(text.split())  # no newline may split the reason into a traceback look-alike
    return text[:MAX_ERROR_LINE]


def _blocked(text: str, agent: str | None = None) -> int:
    try:
        sys.stderr.write(_one_line(text) + "\n")
        sys.stderr.flush()
    except BaseException:  # stderr gone: the exit code alone still blocks
        pass
    if agent in HOOK_FAILURE_STDOUT:  # an agent that fails open without a verdict
        try:
            sys.stdout.buffer.write(HOOK_FAILURE_STDOUT[agent])
            sys.stdout.buffer.flush()
        except BaseException:
            pass
    return BLOCK


HOOK_HELP = """\
usage: askgate hook AGENT [--config FILE]... < the agent's hook JSON on stdin

Decide one tool call for AGENT's hook (claude-code | codex | gemini): prints the agent's
decision JSON. See docs/hooks.md.

exit codes:
  0  the decision JSON was printed (allow, deny or ask: read it)
  2  the call is blocked: bad input, an unknown agent, or anything askgate could not decide
     (one line on stderr)"""


def run_hook(args: list[str]) -> int:
    """`askgate hook AGENT …`. Exit 2 blocks the tool call in every agent that honours it."""
    if args in (["--help"], ["-h"]):
        print(HOOK_HELP)
        return 0
    if not args or args[0] not in HOOKS:
        known = " | ".join(HOOKS)
        return _blocked(f"askgate: error: usage: askgate hook {known} [--config FILE]...")
    try:
        module_name, _, function = HOOKS[args[0]].partition(":")
        if module_name == "askgate.hooks.entrypoints":
            # The agents' own hooks: an explicit import, so the import contracts see it.
            from askgate.hooks import entrypoints

            hook = getattr(entrypoints, function)
        else:  # a hook registered in the table by name (tests register broken ones)
            import importlib

            hook = getattr(importlib.import_module(module_name), function)
    except BaseException as exc:  # a missing or broken adapter blocks the call, loudly
        return _blocked(f"askgate: error: hook {args[0]} is unavailable: {exc!r}", args[0])
    try:
        result = hook(args[1:])
    except SystemExit as exc:
        # Adapters return their code; one that exits instead may not have printed a
        # decision, so only an explicit block keeps its meaning.
        if exc.code == BLOCK:
            return BLOCK
        return _blocked(f"askgate: blocked: hook {args[0]} exited with {exc.code!r}", args[0])
    except BaseException as exc:
        return _blocked(f"askgate: blocked by an internal error: {exc!r}", args[0])
    if result in (0, BLOCK) and isinstance(result, int):
        return result
    return _blocked(f"askgate: blocked: hook {args[0]} returned {result!r}", args[0])
