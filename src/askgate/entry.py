"""The console script: routes `askgate hook …` before the full CLI (and argparse) loads.

A hook runs once per tool call, so its process imports only what deciding needs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["hook", "claude-code"]:
        from askgate.adapters.claude_code import main as hook_main

        return hook_main(args[2:])
    from askgate.cli import main as cli_main

    return cli_main(args)
