"""Filesystem edges of the forwarding protocol: atomic writes, careful reads, listings,
heartbeat checks and waiting for changes (inotify through watchfiles, or polling).

Files under the forwarding root are written by other processes and are untrusted:
reads refuse symlinks, FIFOs and oversized files; writes never follow a planted link.

Directories are untrusted too: a child that swaps `sessions/<id>/requests` for a symlink
must not make the parent list, answer or delete the files of some other directory. So
every operation goes through a directory descriptor (`open_directory`): each component
from the forwarding root down is opened with `O_DIRECTORY | O_NOFOLLOW` relative to the
one above it, created 0700 whatever the umask, and refused unless it belongs to this
user and nobody else can write to it; then every read, write, rename and unlink uses
`dir_fd=`.
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

from askgate.forwarding.protocol import (
    MAX_HEARTBEAT_BYTES,
    FileInfo,
    Heartbeat,
    Layout,
    decode_heartbeat,
    heartbeat_is_fresh,
    quote_session_id,
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


# --- directory descriptors -------------------------------------------------------------

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_GROUP_OR_OTHER_WRITE = stat.S_IWGRP | stat.S_IWOTH


class UnsafeDirectory(OSError):
    """A directory under the forwarding root that must not be used (a symlink, somebody
    else's, or writable by others). `str()` says which and why."""


def session_parts(session_id: str, *below: str) -> tuple[str, ...]:
    """The components of `sessions/<quoted id>/…` below the forwarding root."""
    return ("sessions", quote_session_id(session_id), *below)


def _check_directory(fd: int, where: Path, *, tighten: bool = True) -> None:
    """Refuse a directory that is not ours or that others can write; make ours 0700.

    pi's extension creates these directories with `mkdir -p` under the umask (0755):
    ours and writable only by us, so they are tightened in place rather than refused.
    """
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeDirectory(
            errno.ENOTDIR, "refusing a forwarding directory: not a directory", str(where)
        )
    if info.st_uid != os.geteuid():
        raise UnsafeDirectory(
            errno.EPERM,
            f"refusing a forwarding directory owned by uid {info.st_uid}, not by this user",
            str(where),
        )
    if info.st_mode & _GROUP_OR_OTHER_WRITE:
        raise UnsafeDirectory(
            errno.EPERM,
            f"refusing a forwarding directory writable by others (mode {info.st_mode & 0o777:o})",
            str(where),
        )
    if tighten and stat.S_IMODE(info.st_mode) != _DIR_MODE:
        os.fchmod(fd, _DIR_MODE)


def _open_component(
    parent_fd: int | None, name: str, where: Path, *, create: bool, tighten: bool = True
) -> int:
    """Open one directory below `parent_fd` (or the path `where`) without following a
    symlink; with `create`, make it 0700 first when it is missing."""
    target: str = name if parent_fd is not None else str(where)
    for _attempt in range(_WRITE_ATTEMPTS):
        try:
            fd = os.open(target, _DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):  # a peer made it first: fine
                os.mkdir(target, _DIR_MODE, dir_fd=parent_fd)
            continue
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UnsafeDirectory(
                    exc.errno, "refusing a forwarding directory that is a symlink", str(where)
                ) from None
            raise
        try:
            _check_directory(fd, where, tighten=tighten)  # 0700 on one we just made
        except BaseException:
            os.close(fd)
            raise
        return fd
    raise FileNotFoundError(errno.ENOENT, "directory keeps vanishing", str(where))


def open_directory(
    root: Path, parts: Sequence[str] = (), *, create: bool = False, tighten: bool = True
) -> int:
    """A descriptor for `root/parts…`, every component opened O_DIRECTORY|O_NOFOLLOW
    relative to the one above (the root itself by path, its last component not
    followed either). With `create`, missing components are made 0700 (and the root's
    own parents with `mkdir -p`, 0700). Raises FileNotFoundError when something is
    missing and `create` is off, UnsafeDirectory for a component that must not be used.
    """
    root = Path(root)
    if create:
        ensure_dir(root.parent)
    fd = _open_component(None, "", root, create=create, tighten=tighten)
    where = root
    try:
        for name in parts:
            if not name or name in (".", "..") or "/" in name:
                raise UnsafeDirectory(errno.EINVAL, "refusing an unusable directory name", name)
            where = where / name
            child = _open_component(fd, name, where, create=create, tighten=tighten)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def opened_directory(
    root: Path, parts: Sequence[str] = (), *, create: bool = False, tighten: bool = True
) -> Iterator[int]:
    """`open_directory` as a context manager that closes the descriptor. `tighten=False`
    (for read-only diagnostics) accepts a directory of ours that others may read."""
    fd = open_directory(root, parts, create=create, tighten=tighten)
    try:
        yield fd
    finally:
        os.close(fd)


def open_subdirectory(
    parent_fd: int, name: str, where: Path, *, create: bool = False, tighten: bool = True
) -> int:
    """One more component below an open directory, with the same checks."""
    return _open_component(parent_fd, name, where, create=create, tighten=tighten)


def atomic_write_at(dir_fd: int, name: str, data: bytes) -> None:
    """Write `<name>.<pid>.<ms>.<rand>.tmp` in the directory, then rename it over `name`."""
    tmp = f"{name}.{os.getpid()}.{now_ms()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        _FILE_MODE,
        dir_fd=dir_fd,
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def read_limited_at(dir_fd: int, name: str, limit: int) -> bytes:
    """At most `limit + 1` bytes of the regular file `name` in an open directory (the
    caller sees "too large"); a symlink or a FIFO planted there is refused."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    return _read_fd(fd, limit, name)


def list_json_at(dir_fd: int) -> list[FileInfo]:
    """Regular `*.json` files directly in an open directory."""
    infos: list[FileInfo] = []
    # scandir on a descriptor consumes it: give it a duplicate.
    with os.scandir(os.dup(dir_fd)) as entries:
        for entry in entries:
            if not entry.name.endswith(".json"):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                infos.append(FileInfo(entry.name, st.st_size, st.st_mtime_ns))
    return infos


def exists_at(dir_fd: int, name: str) -> bool:
    """True when `name` exists in the open directory (a symlink counts, unfollowed)."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def remove_at(dir_fd: int, name: str) -> None:
    """Unlink `name` in the open directory; already gone is fine."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)


# Every party removes the session's directories once they are empty (pi's children do it
# after every exchange, and so do ours: `cleanup_empty`). So a directory can be removed
# between a writer opening it and creating its file there; the create then fails with
# ENOENT inside a directory that no longer exists. A writer that sees that re-opens (and
# so re-creates) the directory and writes again; a few rounds bound a pathological loop.
_REMOVED_UNDER_US_RETRIES = 16


def _directory_removed(dir_fd: int) -> bool:
    """True when the open directory has been unlinked (rmdir'd) since it was opened."""
    try:
        return os.fstat(dir_fd).st_nlink == 0
    except OSError:
        return False


def write_in(root: Path, parts: Sequence[str], name: str, data: bytes) -> None:
    """Atomically write `root/parts…/name`, creating the directories 0700 (again, when
    another party's cleanup removed one while we were about to write into it)."""
    for attempt in range(_REMOVED_UNDER_US_RETRIES):
        with opened_directory(root, parts, create=True) as directory:
            try:
                atomic_write_at(directory, name, data)
                return
            except FileNotFoundError:
                if attempt + 1 == _REMOVED_UNDER_US_RETRIES or not _directory_removed(directory):
                    raise


def write_below(parent_fd: int, subdirectory: str, where: Path, name: str, data: bytes) -> None:
    """`write_in` for `subdirectory/name` below an open directory: the subdirectory is
    created 0700 when missing, and re-created when removed under us."""
    for attempt in range(_REMOVED_UNDER_US_RETRIES):
        directory = open_subdirectory(parent_fd, subdirectory, where, create=True)
        try:
            atomic_write_at(directory, name, data)
            return
        except FileNotFoundError:
            if attempt + 1 == _REMOVED_UNDER_US_RETRIES or not _directory_removed(directory):
                raise
        finally:
            os.close(directory)


def read_in(root: Path, parts: Sequence[str], name: str, limit: int) -> bytes:
    """`read_limited_at` of `root/parts…/name` (FileNotFoundError when any part is missing)."""
    with opened_directory(root, parts) as directory:
        return read_limited_at(directory, name, limit)


def remove_in(root: Path, parts: Sequence[str], name: str) -> None:
    """Unlink `root/parts…/name`; missing is fine, an unusable directory is logged."""
    try:
        with opened_directory(root, parts) as directory:
            remove_at(directory, name)
    except FileNotFoundError:
        return
    except OSError as exc:
        logger.warning("cannot remove %s: %s", name, exc)


def _read_fd(fd: int, limit: int, name: str) -> bytes:
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", name)
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


def cleanup_empty(layout: Layout, session_id: str) -> None:
    """Remove the session's empty requests/, responses/ and session directory (pi does
    this after every exchange). A directory that is not empty is left alone; nothing is
    removed through a symlink."""
    try:
        with opened_directory(layout.root, session_parts(session_id)) as session:
            for name in ("requests", "responses"):
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=session)
        with opened_directory(layout.root, ("sessions",)) as sessions, contextlib.suppress(OSError):
            os.rmdir(quote_session_id(session_id), dir_fd=sessions)
    except OSError:
        return


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
        name = layout.heartbeat_path(session_id).name
        with opened_directory(layout.root, ("serving",)) as serving:
            data = read_limited_at(serving, name, MAX_HEARTBEAT_BYTES)
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


_SCAN_DEPTH = 3  # sessions/<id>/requests/<file>: all the protocol ever nests
_SCAN_ENTRIES = 10_000


def _link_below(path: Path) -> str | None:
    """The first symlink within `_SCAN_DEPTH` levels below `path` (a directory too big to
    look through counts as one), else None. Nothing is followed."""
    pending: list[tuple[str, int]] = [(str(path), 0)]
    seen = 0
    while pending:
        directory, depth = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    seen += 1
                    if seen > _SCAN_ENTRIES:
                        return f"more than {_SCAN_ENTRIES} entries"
                    if entry.is_symlink():
                        return entry.path
                    if depth + 1 < _SCAN_DEPTH and entry.is_dir(follow_symlinks=False):
                        pending.append((entry.path, depth + 1))
        except OSError:
            continue
    return None


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
        if mode == "watch" and (planted := _link_below(path)) is not None:
            # The recursive watcher follows symlinks it finds at start: one planted here
            # (`sessions/x -> /`) would have us watch a whole tree. Poll instead.
            logger.warning(
                "%s holds a symlink (%s); polling every %ss instead of watching",
                path,
                planted,
                poll_interval,
            )
            self.mode = "poll"
        if self.mode == "watch":
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
