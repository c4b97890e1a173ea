"""The command hook's side of the Unix socket: pass stdin to the daemon, return its answer.

Runs on every tool call, so it imports `socket`, `os` and `sys` and the import-free frame
codec, nothing else. It never decides anything itself: any trouble (no socket, a refused
connection, a timeout, garbage, a daemon of another version) returns a sentinel and the
hook decides in-process instead.
"""

from __future__ import annotations

import _socket  # `socket` itself pulls in enum, selectors and more: 3 ms per tool call
import os
import sys

from askgate.daemon import paths, protocol, request_env

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

NO_DAEMON = "no-daemon"  # nothing listens: start one for the next call
FAILED = "failed"  # a daemon is there but did not answer properly: just decide in-process
DEFAULT_TIMEOUT_S = 5.0  # a warm answer takes about a millisecond; this only bounds a hang


def _timeout(env: Mapping[str, str]) -> float:
    try:
        value = float(env.get("ASKGATE_RELAY_TIMEOUT", "") or DEFAULT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if 0 < value <= 600 else DEFAULT_TIMEOUT_S


def version() -> bytes:
    """This installation's identity: the version, where the package lives and when its
    __init__ was written. A daemon started by another installation (another checkout or
    virtualenv, or the same one before an upgrade) refuses the request and exits, so a
    decision never comes from code other than the hook's own."""
    import askgate  # already imported: this module lives inside it

    init = askgate.__file__ or ""
    try:
        written = os.stat(init).st_mtime_ns
    except OSError:
        written = 0
    return f"{askgate.__version__}+{os.path.dirname(init)}@{written}".encode()


def request_fields(
    config_files: Sequence[str], env: Mapping[str, str], agent: str = "claude-code"
) -> list[bytes]:
    """`version=`, `agent=`, `cwd=`, `config=`*, and `env=` for the names the daemon looks at
    (askgate.daemon.request_env): the rest of the environment never leaves the process."""
    fields = [b"version=" + version(), b"agent=" + agent.encode()]
    try:  # noqa: SIM105 - contextlib is not imported on the relay's path
        fields.append(b"cwd=" + os.fsencode(os.getcwd()))
    except OSError:
        pass  # a deleted cwd: the daemon resolves nothing against it
    fields += [b"config=" + os.fsencode(path) for path in config_files]
    sent = request_env.to_send(env)
    fields += [b"env=" + os.fsencode(k) + b"=" + os.fsencode(v) for k, v in sent.items()]
    return fields


def exchange(sock_path: str, frame: bytes, timeout: float) -> tuple[int, bytes, bytes] | str:
    """Send one frame, read one reply; NO_DAEMON or FAILED on any trouble."""
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return FAILED
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(sock_path)
        except (FileNotFoundError, ConnectionRefusedError):
            return NO_DAEMON
        sock.sendall(frame)
        sock.shutdown(_socket.SHUT_WR)
        buf = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
            if len(buf) > 2 * protocol.MAX_BODY:
                return FAILED
        reply = protocol.decode_reply(buf)
        return FAILED if reply is None else reply
    except (OSError, protocol.ProtocolError, ValueError):
        return FAILED
    finally:
        sock.close()


def relay(
    data: bytes, config_files: Sequence[str], env: Mapping[str, str], agent: str = "claude-code"
) -> tuple[int, bytes, bytes] | str:
    """The daemon's (exit code, stdout, stderr) for this hook call, or NO_DAEMON / FAILED."""
    sock_path = paths.socket_path(env)
    frame = protocol.encode_request(b"decide", request_fields(config_files, env, agent), data)
    return exchange(sock_path, frame, _timeout(env))


def start_detached(env: Mapping[str, str]) -> None:
    """Start `askgate daemon run` in its own session, stdio on /dev/null, and do not wait:
    it serves the next call. Any failure is ignored (this call is already decided)."""
    try:
        # Started for the command hook's sake: it goes away after 30 idle minutes.
        argv = [sys.executable, "-m", "askgate", "daemon", "run", "--quiet", "--idle-exit", "1800"]
        devnull = os.devnull
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, devnull, os.O_WRONLY, 0),
        ]
        child_env = dict(env)
        # The daemon must run this very askgate (a hook started as `python -m askgate`
        # from a source tree has it only on sys.path).
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        python_path = child_env.get("PYTHONPATH", "")
        if package_root not in python_path.split(os.pathsep):
            child_env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, python_path) if p)
        os.posix_spawn(sys.executable, argv, child_env, file_actions=actions, setsid=True)
    except Exception:  # best effort: the next call just decides in-process too
        pass
