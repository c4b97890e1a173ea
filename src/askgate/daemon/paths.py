"""Where the daemon keeps its socket, lock, state and secret.

One small module so it can move into askgate's shared state-path module (locations.py)
without touching the rest. Relative XDG values are ignored, as the XDG spec says.
Imports only `os`: the relay uses it on every tool call.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

SOCKET_NAME = "daemon.sock"
LOCK_NAME = "daemon.lock"
STATE_NAME = "daemon.json"
SECRET_NAME = "daemon.secret"
CONTROL_NAME = "daemon.control"


def _absolute(env: Mapping[str, str], key: str) -> str | None:
    value = env.get(key, "")
    return value if value.startswith("/") else None


def runtime_dir(env: Mapping[str, str]) -> str:
    """`$ASKGATE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/askgate`, else `/tmp/askgate-<uid>`,
    else (that one exists and is not private to us) `<state dir>/run`: one rule, kept in
    askgate.locations. The chosen directory is checked again before use
    (`ensure_private_dir`)."""
    from askgate.locations import daemon_socket_dir

    return daemon_socket_dir(env)


def socket_path(env: Mapping[str, str]) -> str:
    return os.path.join(runtime_dir(env), SOCKET_NAME)


def state_dir(env: Mapping[str, str]) -> str:
    """The daemon's secret lives with askgate's state: `$XDG_STATE_HOME/askgate`."""
    state = _absolute(env, "XDG_STATE_HOME")
    if state is None:
        home = _absolute(env, "HOME") or os.path.expanduser("~")
        state = os.path.join(home, ".local", "state")
    return os.path.join(state, "askgate")


def secret_path(env: Mapping[str, str]) -> str:
    return os.path.join(state_dir(env), SECRET_NAME)


def control_path(env: Mapping[str, str]) -> str:
    """The control token `stop` and `sweep` must carry (made by the daemon at start)."""
    return os.path.join(state_dir(env), CONTROL_NAME)


class UnsafeDirectory(Exception):
    """A runtime directory someone else owns or can write: never used."""


def ensure_private_dir(path: str) -> str:
    """Create `path` 0700, or check that the existing one is a real directory, ours, and
    not readable or writable by anyone else (a /tmp fallback could be pre-created)."""
    try:  # noqa: SIM105 - contextlib is not imported on the relay's path
        os.makedirs(path, mode=0o700, exist_ok=True)
    except FileExistsError:
        pass  # a file in the way: refused below
    st = os.lstat(path)
    import stat

    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(f"{path} is not a directory")
    if st.st_uid != os.getuid():
        raise UnsafeDirectory(f"{path} is owned by uid {st.st_uid}, not {os.getuid()}")
    if st.st_mode & 0o077:
        raise UnsafeDirectory(f"{path} is accessible to other users (mode {st.st_mode & 0o777:o})")
    return path
