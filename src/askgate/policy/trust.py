"""Which project policy files the user has trusted (`askgate trust`).

Trust is keyed by the project root (symlinks resolved) *and* the SHA-256 of the project
policy file's bytes, so editing the file — by a teammate, a `git pull`, or the agent
itself — silently revokes trust until the user looks at it again.

The store is `$XDG_DATA_HOME/askgate/trusted.json` (default `~/.local/share/askgate`),
written atomically (temp file + rename) with mode 0600. A store that is unreadable,
corrupt or writable by others trusts nothing.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterator, Mapping
from typing import Any

from askgate import locations

STORE_VERSION = 1
PROJECT_POLICY_RELATIVE = os.path.join(".askgate", "policy.toml")
_MAX_STORE_BYTES = 16 * 1024 * 1024


class TrustError(Exception):
    """Trusting or untrusting failed; `str()` is one line for the user."""


def data_home(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_DATA_HOME`, or `~/.local/share` when unset or not absolute (askgate.locations)."""
    return locations.data_home(env)


def trust_store_path(env: Mapping[str, str] | None = None) -> str:
    return locations.trust_store_path(env)


def project_policy_path(root: str) -> str:
    return os.path.join(root, PROJECT_POLICY_RELATIVE)


def policy_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _root_key(root: str) -> str:
    if "\x00" in root:
        raise TrustError("project root contains a NUL byte")
    return os.path.realpath(os.path.abspath(root))


def _read_store(path: str, *, strict: bool) -> dict[str, Any]:
    """The `projects` map; `{}` when missing. Corruption raises only when `strict`."""
    try:
        # O_NOFOLLOW: a store replaced by a symlink could point at a file somebody else
        # wrote. O_NONBLOCK: a FIFO planted here must not hang every hook call.
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise TrustError(f"{path}: trust store is not a regular file")
            if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise TrustError(f"{path}: trust store is writable by others; fix its mode")
            if info.st_uid != os.geteuid():
                raise TrustError(f"{path}: trust store belongs to another user")
            data = handle.read(_MAX_STORE_BYTES + 1)
    except FileNotFoundError:
        return {}
    except TrustError:
        if strict:
            raise
        return {}
    except OSError as error:
        if strict:
            why = "it is a symlink" if error.errno == errno.ELOOP else error.strerror
            raise TrustError(f"{path}: cannot read trust store: {why}") from None
        return {}
    try:
        if len(data) > _MAX_STORE_BYTES:
            raise ValueError("too large")
        document = json.loads(data.decode("utf-8"))
        if not isinstance(document, dict) or document.get("version") != STORE_VERSION:
            raise ValueError("unknown format")
        projects = document.get("projects")
        if not isinstance(projects, dict):
            raise ValueError("no projects table")
    except (ValueError, UnicodeDecodeError) as error:
        if strict:
            raise TrustError(
                f"{path}: trust store is corrupt ({error}); delete it to start over"
            ) from None
        return {}
    return projects


def _write_store(path: str, projects: dict[str, Any]) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    payload = json.dumps(
        {"version": STORE_VERSION, "projects": projects}, indent=2, sort_keys=True
    ).encode("utf-8")
    import tempfile  # only when writing the store: keeps the hook's import path lean

    descriptor, temporary = tempfile.mkstemp(prefix=".trusted.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(payload + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    # Serialises read-modify-write so two `askgate trust` runs cannot lose an entry.
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    descriptor = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def read_regular_file(path: str, limit: int) -> bytes | None:
    """Up to `limit + 1` bytes of a regular file; None when it does not exist.

    Opened non-blocking and checked with fstat so a FIFO or device planted where a
    policy file should be cannot hang us. Raises OSError (or ValueError for a NUL in
    the path) for anything else that goes wrong.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", path)
        return handle.read(limit + 1)


def _read_policy_file(root: str) -> bytes:
    path = project_policy_path(root)
    try:
        data = read_regular_file(path, _MAX_STORE_BYTES)
    except OSError as error:
        raise TrustError(f"{path}: cannot read: {error.strerror}") from None
    if data is None:
        raise TrustError(f"{path}: no project policy file to trust")
    return data


def trust_project(root: str, env: Mapping[str, str] | None = None) -> str:
    """Trust the current bytes of `<root>/.askgate/policy.toml`; returns the store path."""
    key = _root_key(root)
    digest = policy_digest(_read_policy_file(key))
    path = trust_store_path(env)
    try:
        with _locked(path):
            projects = _read_store(path, strict=True)
            projects[key] = {
                "sha256": digest,
                "policy": project_policy_path(key),
                "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            _write_store(path, projects)
    except OSError as error:
        raise TrustError(f"{path}: cannot write trust store: {error.strerror}") from None
    return path


def untrust_project(root: str, env: Mapping[str, str] | None = None) -> bool:
    """Forget any trust for `root`; True when an entry was removed."""
    key = _root_key(root)
    path = trust_store_path(env)
    try:
        with _locked(path):
            projects = _read_store(path, strict=True)
            if key not in projects:
                return False
            del projects[key]
            _write_store(path, projects)
    except OSError as error:
        raise TrustError(f"{path}: cannot write trust store: {error.strerror}") from None
    return True


def is_trusted_digest(root: str, digest: str, env: Mapping[str, str] | None = None) -> bool:
    """True when `root` is trusted for exactly the policy bytes hashing to `digest`."""
    try:
        key = _root_key(root)
        entry = _read_store(trust_store_path(env), strict=False).get(key)
    except (TrustError, ValueError, OSError):
        return False
    return isinstance(entry, dict) and entry.get("sha256") == digest


def is_trusted(root: str, env: Mapping[str, str] | None = None) -> bool:
    """True when the project's policy file, as it is now, was trusted."""
    try:
        data = _read_policy_file(_root_key(root))
    except TrustError:
        return False
    return is_trusted_digest(root, policy_digest(data), env)
