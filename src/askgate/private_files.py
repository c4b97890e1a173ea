"""Files askgate keeps for itself in its state directory: read only when this user alone
could have written them, written atomically and privately.

A leaf (the standard library's `os` and `stat`): the one-shot hook reads its caches
through here before anything else is imported.
"""

from __future__ import annotations

import os
import stat

MAX_BYTES = 16 * 1024 * 1024


def private(found: os.stat_result) -> bool:
    """Owned by this user and writable by no one else."""
    return found.st_uid == os.geteuid() and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_private(path: str, limit: int = MAX_BYTES) -> bytes | None:
    """The bytes of `path` when it is a regular file (not a symlink) that only this user
    could have written, in a directory only this user can write; None otherwise (missing,
    foreign, loosely permitted, too large or unreadable)."""
    try:
        if not private(os.stat(os.path.dirname(path))):
            return None
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    with os.fdopen(descriptor, "rb") as handle:
        try:
            found = os.fstat(descriptor)
            if not stat.S_ISREG(found.st_mode) or not private(found):
                return None
            data = handle.read(limit + 1)
        except OSError:
            return None
    return data if len(data) <= limit else None


def write_private(path: str, data: bytes) -> None:
    """Replace `path` atomically with a 0600 file holding `data`, creating its directory
    (and any missing parent) 0700. Raises OSError; writes nothing into a directory others
    could write."""
    directory = os.path.dirname(path)
    _make_directories(directory)
    if not private(os.stat(directory)):
        raise PermissionError(f"{directory}: writable by others, not used")
    temporary = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:  # noqa: SIM105 (not contextlib: this module is imported before anything else)
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _make_directories(directory: str) -> None:
    missing: list[str] = []
    while not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for name in reversed(missing):
        try:  # noqa: SIM105 (see write_private)
            os.mkdir(name, 0o700)
        except FileExistsError:  # made meanwhile by another process: checked by the caller
            pass
