"""The console script: routes `askgate hook …` before the full CLI (and argparse) loads.

A hook runs once per tool call, so its process imports only what deciding needs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

# agent -> "module:function"; the function takes the arguments after the agent name.
HOOKS: dict[str, str] = {
    "claude-code": "askgate.adapters.claude_code:main",
    "codex": "askgate.adapters.codex:main",
    "gemini": "askgate.adapters.gemini:main",
}
# Agents that read a verdict on stdout even from a failed hook, and fail open without one:
# what to print when the adapter itself cannot be loaded.
HOOK_FAILURE_STDOUT: dict[str, bytes] = {
    "gemini": b'{"decision":"deny","reason":"askgate: blocked: the hook could not load"}\n',
}


def run_hook(args: list[str]) -> int:
    """`askgate hook AGENT …`. Exit 2 blocks the tool call in every agent that honours it."""
    if not args or args[0] not in HOOKS:
        known = " | ".join(HOOKS)
        print(f"askgate: error: usage: askgate hook {known} [--config FILE]...", file=sys.stderr)
        return 2
    import importlib

    module_name, _, function = HOOKS[args[0]].partition(":")
    try:
        module = importlib.import_module(module_name)
        hook = getattr(module, function)
    except Exception as exc:  # a missing or broken adapter blocks the call, loudly
        print(f"askgate: error: hook {args[0]} is unavailable: {exc!r}"[:600], file=sys.stderr)
        if args[0] in HOOK_FAILURE_STDOUT:
            sys.stdout.buffer.write(HOOK_FAILURE_STDOUT[args[0]])
            sys.stdout.buffer.flush()
        return 2
    result: int = hook(args[1:])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        return run_hook(args[1:])
    from askgate.cli import main as cli_main

    return cli_main(args)
