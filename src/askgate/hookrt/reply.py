"""What a hook process does: an exit code, the bytes on stdout, one line on stderr.

Imports nothing: the relay path builds a `Reply` from the daemon's answer on every call.
"""

from __future__ import annotations

BLOCK = 2  # the exit code that blocks the tool call in every agent that honours one
MAX_ERROR_LINE = 2_000


def one_line(text: str, limit: int = MAX_ERROR_LINE) -> str:
    """No newline may split a reason into a traceback look-alike."""
    return " ".join(text.split())[:limit]


class Reply:
    __slots__ = ("code", "stderr", "stdout")

    def __init__(self, code: int, stdout: bytes = b"", stderr: str = "") -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reply) and (self.code, self.stdout, self.stderr) == (
            other.code,
            other.stdout,
            other.stderr,
        )

    def __hash__(self) -> int:
        return hash((self.code, self.stdout, self.stderr))

    def __repr__(self) -> str:
        return f"Reply({self.code}, {self.stdout!r}, {self.stderr!r})"
