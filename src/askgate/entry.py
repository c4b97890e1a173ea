"""The console script: routes `askgate hook …` before the full CLI (and argparse) loads.

A hook runs once per tool call, so its process imports only what deciding needs: this
module and `askgate.hooks` (the routing table and the fail-closed runner, see there).
What neither can catch (the `askgate` package itself failing to import, a missing
executable: exit 127) is why the installed hook command ends in `|| exit 2`.
"""

from __future__ import annotations

import sys

# Re-exported: `askgate.entry.HOOKS` is where the hook table has always been looked up.
from askgate.hooks import BLOCK, HOOK_FAILURE_STDOUT, HOOKS, run_hook

TYPE_CHECKING = False  # not `typing` or `collections.abc`: imported on every tool call
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["BLOCK", "HOOKS", "HOOK_FAILURE_STDOUT", "main", "run_hook"]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        return run_hook(args[1:])
    try:
        from askgate.cli import main as cli_main

        return cli_main(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the last resort: one line, never a traceback
        import os

        if os.environ.get("ASKGATE_DEBUG"):
            raise
        print(_one_line(exc), file=sys.stderr)
        return 1


def _one_line(exc: Exception) -> str:
    """What a command that failed in a way nobody foresaw prints: the cause in one line,
    and for a missing module (a broken or partial install) what to do about it."""
    if isinstance(exc, ImportError):
        missing = getattr(exc, "name", None) or str(exc).splitlines()[0][:200]
        return (
            f"askgate: error: this installation is incomplete (cannot import {missing}); "
            "reinstall it: pip install --force-reinstall askgate"
        )
    first = (str(exc).splitlines() or [""])[0][:400]
    return f"askgate: error: {type(exc).__name__}: {first} (ASKGATE_DEBUG=1 shows where)"
