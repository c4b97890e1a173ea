"""Filesystem edges of the forwarding protocol: atomic writes, careful reads, listings,
heartbeat checks and waiting for changes (inotify through watchfiles, or polling).

Files under the forwarding root are written by other processes and are untrusted:
reads refuse symlinks, FIFOs and oversized files; writes never follow a planted link.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Literal

from askgate.forwarding.protocol import (
    MAX_HEARTBEAT_BYTES,
    FileInfo,
    Heartbeat,
    Layout,
    decode_heartbeat,
    heartbeat_is_fresh,
)

logger = logging.getLogger("askgate.forwarding")

Mode = Literal["watch", "poll"]
HOST = socket.gethostname()

_DIR_MODE = 0o700
_FILE_MODE = 0o600
_WRITE_ATTEMPTS = 5  # a peer's empty-dir cleanup can remove our directory mid-write


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def ensure_dir(path: Path) -> None:
    path.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)


def atomic_write(path: Path, data: bytes) -> None:
    """Write to `<file>.<pid>.<ms>.<rand>.tmp`, then rename over `path` (pi's scheme)."""
    for attempt in range(_WRITE_ATTEMPTS):
        ensure_dir(path.parent)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{now_ms()}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, _FILE_MODE
            )
        except FileNotFoundError:
            if attempt == _WRITE_ATTEMPTS - 1:
                raise
            continue  # the directory vanished between mkdir and open: make it again
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
            return
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def read_limited(path: Path, limit: int) -> bytes:
    """At most `limit + 1` bytes of a regular file (the caller sees "too large").

    O_NOFOLLOW refuses a symlink, O_NONBLOCK keeps a planted FIFO from blocking us.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def list_json(directory: Path) -> list[FileInfo]:
    """Regular `*.json` files directly in `directory` (none when it does not exist)."""
    infos: list[FileInfo] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if not entry.name.endswith(".json"):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    infos.append(FileInfo(entry.name, st.st_size, st.st_mtime_ns))
    except FileNotFoundError:
        return []
    return infos


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def cleanup_empty(layout: Layout, session_id: str) -> None:
    """Remove the session's empty requests/, responses/ and session directory (pi does
    this after every exchange). A directory that is not empty is left alone."""
    for directory in (
        layout.requests_dir(session_id),
        layout.responses_dir(session_id),
        layout.session_dir(session_id),
    ):
        with contextlib.suppress(OSError):
            directory.rmdir()


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by somebody else
    except OSError:
        return False
    return True


def read_heartbeat(layout: Layout, session_id: str) -> Heartbeat | None:
    try:
        data = read_limited(layout.heartbeat_path(session_id), MAX_HEARTBEAT_BYTES)
    except OSError:
        return None
    if len(data) > MAX_HEARTBEAT_BYTES:
        return None
    return decode_heartbeat(data)


def heartbeat_alive(heartbeat: Heartbeat | None, session_id: str, at_ms: int) -> bool:
    """Fresh, for this session, and (on this host) its process still exists."""
    if heartbeat is None or heartbeat.session_id != session_id:
        return False
    if not heartbeat_is_fresh(heartbeat, at_ms):
        return False
    return heartbeat.host != HOST or pid_alive(heartbeat.pid)


def is_served(layout: Layout, session_id: str) -> bool:
    return heartbeat_alive(read_heartbeat(layout, session_id), session_id, now_ms())


class ChangeWaiter:
    """Blocks until something under `path` changes, or a timeout passes.

    `watch`: inotify through watchfiles (falls back to polling when it cannot start);
    `poll`: wakes every `poll_interval` seconds, like pi's 250 ms loop. Either way the
    caller re-scans after every wake-up, so a missed event costs at most one timeout.
    """

    def __init__(
        self,
        path: Path,
        *,
        mode: Mode = "watch",
        poll_interval: float = 0.25,
        step_ms: int = 2,
        stop: threading.Event | None = None,
    ) -> None:
        self.path = path
        self.poll_interval = poll_interval
        self.step_ms = max(1, step_ms)
        self.stop = stop or threading.Event()
        self._notify = None
        self.mode: Mode = mode
        if mode == "watch":
            try:
                from watchfiles._rust_notify import RustNotify

                self._notify = RustNotify([str(path)], False, False, 0, True, True)
            except Exception as exc:
                logger.warning("cannot watch %s (%s); polling every %ss", path, exc, poll_interval)
                self.mode = "poll"

    def wait(self, timeout: float) -> bool:
        """True when woken by a change (or a poll tick), False on timeout or stop."""
        if self.stop.is_set():
            return False
        if self._notify is None:
            return not self.stop.wait(max(0.0, min(timeout, self.poll_interval)))
        timeout_ms = max(1, int(timeout * 1000))
        try:
            result = self._notify.watch(self.step_ms, self.step_ms, timeout_ms, self.stop)
        except (RuntimeError, OSError) as exc:
            logger.warning("watching %s failed (%s); polling from now on", self.path, exc)
            self.close()
            self.mode = "poll"
            return True
        if result == "signal":
            raise KeyboardInterrupt
        return isinstance(result, set)

    def close(self) -> None:
        if self._notify is not None:
            self._notify.close()
            self._notify = None

    def __enter__(self) -> ChangeWaiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
