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
        print(f"askgate: error: usage: askgate hook {known} [--config FILE]...", file=sys.stderr)
        return 2
    import importlib

    module_name, _, function = HOOKS[args[0]].partition(":")
    try:
        module = importlib.import_module(module_name)
        hook = getattr(module, function)
    except Exception as exc:  # a missing or broken adapter blocks the call, loudly
        print(f"askgate: error: hook {args[0]} is unavailable: {exc!r}"[:600], file=sys.stderr)
        return 2
    result: int = hook(args[1:])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        return run_hook(args[1:])
    from askgate.cli import main as cli_main

    return cli_main(args)
