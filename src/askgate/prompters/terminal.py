"""Ask the human at a terminal: Yes / Yes for this session / No / No with a reason.

Reads from the controlling terminal (``/dev/tty``) by default, so it works even
when the agent owns stdin and stdout (a hook). End of input, a closed terminal or
an unreadable answer never approves anything.
"""

from __future__ import annotations

import contextlib
import os
import select
import termios
import threading
import time
from collections.abc import Callable
from typing import IO

from askgate.prompt import PromptReply, PromptRequest, PromptState

MAX_ANSWER = 2_000
MAX_ATTEMPTS = 3

_YES = {"1", "y", "yes"}
_SESSION = {"2", "s", "session"}
_NO = {"3", "n", "no"}
_REASON = {"4", "r", "reason"}


def visible(text: str) -> str:
    """`text` with control characters shown as escapes: a command, a path or a child's
    message could otherwise carry terminal sequences that redraw what the human reads."""
    return "".join(
        char
        if char.isprintable() or char == "\t"
        else char.encode("unicode_escape", "backslashreplace").decode("ascii")
        for char in text
    )


class _Deadline(Exception):
    pass


class _Closed(Exception):
    pass


class TerminalPrompter:
    """Prompts on a terminal. Serialises concurrent prompts (one dialog at a time)."""

    def __init__(
        self,
        stdin: IO[str] | int | None = None,
        stdout: IO[str] | None = None,
        *,
        tty_path: str = "/dev/tty",
    ) -> None:
        self._in = stdin
        self._out = stdout
        self._tty_path = tty_path
        self._lock = threading.Lock()
        self._pending = b""

    def available(self) -> bool:
        if self._in is not None:
            return not getattr(self._in, "closed", False)
        try:
            fd = os.open(self._tty_path, os.O_RDWR | os.O_NOCTTY)
        except OSError:
            return False
        os.close(fd)
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            opened: list[int] = []
            try:
                fd, write = self._streams(opened)
            except OSError as exc:
                return PromptReply(state=PromptState.UNAVAILABLE, detail=f"no terminal: {exc}")
            try:
                return self._dialog(request, fd, write, deadline)
            except _Deadline:
                write("\n(no answer in time: denied)\n")
                return PromptReply(state=PromptState.TIMED_OUT)
            except (_Closed, OSError) as exc:
                return PromptReply(state=PromptState.UNAVAILABLE, detail=f"terminal closed {exc}")
            finally:
                for f in opened:
                    os.close(f)

    # --- internals -------------------------------------------------------------------------

    def _streams(self, opened: list[int]) -> tuple[int, Callable[[str], None]]:
        if self._in is None:
            fd = os.open(self._tty_path, os.O_RDWR | os.O_NOCTTY)
            opened.append(fd)

            def write_tty(text: str) -> None:
                os.write(fd, text.encode("utf-8", "replace"))

            return fd, write_tty
        fd = self._in if isinstance(self._in, int) else self._in.fileno()
        out = self._out

        def write_stream(text: str) -> None:
            if out is not None:
                out.write(text)
                out.flush()

        return fd, write_stream

    def _dialog(
        self,
        request: PromptRequest,
        fd: int,
        write: Callable[[str], None],
        deadline: float | None,
    ) -> PromptReply:
        self._discard_type_ahead(fd)
        options = ["1) Yes"]
        if request.session_pattern:
            label = visible(request.session_label or "Yes, for this session")
            options.append(f"2) {label}")
        options += ["3) No", "4) No, and tell the agent why"]
        message = "\n".join(visible(line) for line in request.message.split("\n"))
        write(f"\n[askgate] Permission required\n{message}\n" + "\n".join(options) + "\n")
        for _ in range(MAX_ATTEMPTS):
            write("> ")
            answer = self._readline(fd, deadline).strip().lower()
            if answer in _YES:
                return PromptReply(state=PromptState.APPROVED)
            if answer in _SESSION and request.session_pattern:
                return PromptReply(state=PromptState.APPROVED_FOR_SESSION)
            if answer in _NO:
                return PromptReply(state=PromptState.DENIED)
            if answer in _REASON:
                write("Reason shown to the agent: ")
                reason = self._readline(fd, deadline).strip()
                if reason:
                    return PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason=reason)
                return PromptReply(state=PromptState.DENIED)
            write("Please answer 1, 2, 3 or 4.\n")
        return PromptReply(state=PromptState.DENIED, detail="no valid answer")

    def _discard_type_ahead(self, fd: int) -> None:
        # Anything typed before this dialog was shown answers an earlier question (or
        # none): a stray "1<Enter>" must never approve a prompt nobody has read yet.
        self._pending = b""
        with contextlib.suppress(OSError, termios.error):
            if os.isatty(fd):
                termios.tcflush(fd, termios.TCIFLUSH)

    def _readline(self, fd: int, deadline: float | None) -> str:
        while b"\n" not in self._pending:
            if len(self._pending) > MAX_ANSWER:
                break
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise _Deadline
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise _Deadline
            chunk = os.read(fd, 4096)
            if not chunk:
                raise _Closed("(end of input)")
            self._pending += chunk
        line, _, rest = self._pending.partition(b"\n")
        self._pending = rest
        return line[:MAX_ANSWER].decode("utf-8", "replace")
