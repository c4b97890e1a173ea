"""Small pieces every routed command (`askgate init`, `suggest`, …) needs: an argparse
parser whose errors are one line and exit 2, an error message cut to one line, output
that survives undecodable arguments, a terminal yes/no question, and an atomic file
write."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from typing import NoReturn

# Error lines are kept readable even when they quote a hostile 1,000-character key.
MAX_ERROR_LINE = 600


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


def error_line(text: str, limit: int = MAX_ERROR_LINE) -> str:
    """`text` on one line and at most `limit` characters, keeping both ends (where the
    file name and the actual complaint are)."""
    # Escape what is not printable (as policy_file.one_line does) without importing the
    # policy machinery: a usage error should not pay for it.
    text = "".join(
        char if char.isprintable() else char.encode("unicode_escape", "backslashreplace").decode()
        for char in text
    )
    if len(text) <= limit:
        return text
    tail = limit // 3
    return f"{text[: limit - tail - 1]}…{text[-tail:]}"


def tolerate_undecodable_output() -> None:
    # Arguments that are not valid UTF-8 arrive as lone surrogates; echoing one to a
    # strict UTF-8 stream would crash after the answer was computed. Escape instead.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            # Typed TextIO (no reconfigure); a replaced stream without it is suppressed.
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
