"""Small pieces every routed command (`askgate init`, `suggest`, …) needs: an argparse
parser whose errors are one line and exit 2, a terminal yes/no question, and an atomic
file write."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """Bad usage: one `askgate: error:` line on stderr and exit 2, never a traceback."""

    def error(self, message: str) -> NoReturn:
        print(f"askgate: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def confirm(question: str) -> bool:
    """Ask on the terminal; no terminal (or end of input) means no."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def write_atomically(path: str, text: str, *, mode: int = 0o644) -> None:
    """Write `text` to `path` through a temporary file in the same directory and a rename,
    so a reader sees the old file or the new one, never half of it."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".askgate.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
