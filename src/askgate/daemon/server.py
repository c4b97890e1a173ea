"""The resident decider: one process per user, policies compiled and the bash parser warm.

Two listeners, one decision step (askgate.hookrt.decide.respond) for every adapter, looked
up by name (askgate.adapters.registry):

* a Unix socket (0600, in a 0700 directory; the peer's uid checked with SO_PEERCRED) for
  the command hook's relay, which sends its environment, config files and stdin;
* HTTP on 127.0.0.1 for Claude Code's `type: "http"` hooks, authenticated by a per-user
  secret in the `X-Askgate-Secret` header (wrong or missing -> 401). HTTP requests are
  decided with the daemon's own environment.

Never a stale decision: every request rereads the bytes of each file its policy was built
from (policy files, the managed file, the trust store) and the project root, and rebuilds
the policy when anything differs (`PolicyCache`). Decisions run one at a time under a lock
(each takes about a millisecond), so nothing in the policy or parser is shared between
threads. The daemon exits after `idle_exit_s` without a request (None: never, for the one
an http hook depends on).
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import json
import logging
import os
import secrets
import socket
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from askgate.adapters import registry
from askgate.daemon import paths, protocol, request_env
from askgate.daemon.http import HttpRequest
from askgate.hookrt.decide import load_policy, respond
from askgate.hookrt.reply import Reply

logger = logging.getLogger("askgate.daemon")

SECRET_HEADER = "x-askgate-secret"
HOOK_PREFIX = "/hook/"  # POST /hook/NAME for the adapters in registry.HTTP_NAMES
IDLE_EXIT_S = 30 * 60
CACHE_SIZE = 32
MAX_POLICY_FILE = 4 * 1024 * 1024
CONNECTION_TIMEOUT_S = 30.0
IDLE_ACCEPTORS = 4  # threads kept waiting in accept() per listener


# --- the policy cache ---------------------------------------------------------------------


def _read(path: str) -> bytes | None:
    """The bytes of `path` (None when absent); reading never follows into a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return b"\0unreadable:" + str(exc.errno).encode()
    try:
        return os.read(fd, MAX_POLICY_FILE + 1)
    except OSError as exc:
        return b"\0unreadable:" + str(exc.errno).encode()
    finally:
        os.close(fd)


def watched_files(root: str, config_files: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Every file a policy for project `root` is built from, as the loader finds them
    (discovery from the root itself finds the same files as from any cwd below it)."""
    from askgate.policy.config import managed_policy_path, user_policy_path
    from askgate.policy.trust import project_policy_path, trust_store_path

    # config.discover_paths(root) spelled out: `root` is already a project root (finding
    # it again costs a walk up the tree and four realpaths per call).
    files = list(config_files)
    if not files:
        with contextlib.suppress(ValueError):  # neither XDG_CONFIG_HOME nor HOME known
            files.append(user_policy_path(env))
        files.append(project_policy_path(root))
    files.append(managed_policy_path(env))
    with contextlib.suppress(ValueError):
        files.append(trust_store_path(env))
    return files


class PolicyCache:
    """Compiled policies keyed by (project root, config files, agent, environment), each
    kept only while the bytes of every file it came from are unchanged."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[Any, tuple[tuple[Any, ...], Any]] = OrderedDict()
        self.loads = 0  # policies built (for status and tests)

    def load(
        self, cwd: str, config_files: Sequence[str], agent: str | None, env: Mapping[str, str]
    ) -> Any:
        from askgate.policy.config import project_root_of

        root = project_root_of(cwd, env)  # the root the policy is built for (never ~ or /)
        key = (root, tuple(config_files), agent, tuple(sorted(env.items())))
        files = watched_files(root, config_files, env)
        fingerprint = tuple((path, _read(path)) for path in files)
        cached = self._entries.get(key)
        if cached is not None and cached[0] == fingerprint:
            self._entries.move_to_end(key)
            return cached[1]
        policy = load_policy(cwd, config_files, agent, env)
        self.loads += 1
        self._entries[key] = (fingerprint, policy)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return policy


# --- the daemon ---------------------------------------------------------------------------


def load_or_create_secret(env: Mapping[str, str]) -> str:
    """The per-user HTTP secret, created 0600 (in a 0700 directory) on first use."""
    path = paths.secret_path(env)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_secret(path)
    secret = secrets.token_urlsafe(32)
    try:
        os.write(fd, secret.encode() + b"\n")
    finally:
        os.close(fd)
    return secret


def _read_secret(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise PermissionError(f"{path} must be owned by you and mode 0600")
        secret = os.read(fd, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if len(secret) < 32:
        raise PermissionError(f"{path} holds no usable secret; delete it to make a new one")
    return secret


def private_state_dir(env: Mapping[str, str]) -> str:
    """askgate's state directory, created 0700, or tightened to 0700 when it is ours (the
    review log may have created it with the umask's mode); anything else is refused."""
    directory = paths.state_dir(env)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.lstat(directory)
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise paths.UnsafeDirectory(f"{directory} is not a directory of yours")
    if st.st_mode & 0o077:
        os.chmod(directory, 0o700)
    return directory


def make_control_token(env: Mapping[str, str]) -> str:
    """A fresh control token (32 random bytes, hex) in `<state dir>/daemon.control`, 0600:
    what `stop` and `sweep` must carry. Written anew at every start (tmp + rename)."""
    path = paths.control_path(env)
    private_state_dir(env)
    token = secrets.token_hex(32)
    tmp = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return token


def read_control_token(env: Mapping[str, str]) -> str | None:
    """The running daemon's control token (for `askgate daemon stop`), None when unreadable
    or not ours alone."""
    try:
        fd = os.open(paths.control_path(env), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        return os.read(fd, 256).decode("ascii", "replace").strip() or None
    finally:
        os.close(fd)


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


class AlreadyRunning(Exception):
    """Another daemon holds the lock for this runtime directory."""


class Daemon:
    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        port: int | None = None,
        http: bool = True,
        http_required: bool = False,
        idle_exit_s: float | None = IDLE_EXIT_S,
    ) -> None:
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.port = port
        self.http = http
        self.http_required = http_required
        self.http_error = ""
        self.idle_exit_s = idle_exit_s
        self.cache = PolicyCache()
        self.lock = threading.Lock()  # one policy lookup at a time
        self.stopping = threading.Event()
        self.last_request = time.monotonic()
        self.started = time.time()
        self.requests = 0
        # Relay requests refused so the hook decided in its own process (slower, and easy to
        # miss: the answer is the same); `askgate daemon status` shows the count and why.
        self.refused = 0
        self.last_refusal = ""
        self.version = claude_code_version()
        self.secret = ""
        self.control = ""  # made at bind(): `stop` and `sweep` must carry it
        self._listeners: list[socket.socket] = []
        self._idle_acceptors: dict[int, int] = {}  # listener fd -> threads waiting in accept()
        self._acceptors_lock = threading.Lock()
        self._lock_fd: int | None = None
        self.socket_path = paths.socket_path(self.env)

    # -- lifecycle --

    def bind(self) -> None:
        """Take the lock, bind both listeners, write the state file. AlreadyRunning when
        another daemon serves this runtime directory."""
        directory = paths.ensure_private_dir(paths.runtime_dir(self.env))
        lock_fd = os.open(os.path.join(directory, paths.LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            raise AlreadyRunning(directory) from None
        self._lock_fd = lock_fd
        self.control = make_control_token(self.env)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)  # a dead daemon's socket: we hold the lock now
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            unix.bind(self.socket_path)
        finally:
            os.umask(old_umask)
        os.chmod(self.socket_path, 0o600)
        unix.listen(64)
        self._listeners.append(unix)
        if self.http:
            self._bind_http()
        self._write_state()

    def _bind_http(self) -> None:
        """The loopback listener. When its port is taken, a daemon started without an
        explicit port serves the relay alone (an http hook pointing there then fails,
        which `onFailure: "block"` turns into a block); with `--port` it is an error."""
        self.secret = load_or_create_secret(self.env)
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp.bind(("127.0.0.1", default_port() if self.port is None else self.port))
        except OSError as exc:
            tcp.close()
            if self.http_required:
                raise
            self.http, self.http_error = False, f"127.0.0.1:{default_port()}: {exc.strerror}"
            return
        tcp.listen(64)
        self.port = tcp.getsockname()[1]
        self._listeners.append(tcp)

    def _write_state(self) -> None:
        state = {
            "pid": os.getpid(),
            "port": self.port if self.http else None,
            "socket": self.socket_path,
            "version": self.version,
            "started": self.started,
        }
        path = os.path.join(paths.runtime_dir(self.env), paths.STATE_NAME)
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(state, f)
        os.replace(tmp, path)

    def warm(self) -> None:
        """Load the bash parser and the decision path before the first call needs them."""
        with contextlib.suppress(Exception):
            from askgate.policy.shell import analyze

            analyze("git status && echo warm > /dev/null")
        with contextlib.suppress(Exception):
            import askgate.audit
            import askgate.gate  # noqa: F401

    def serve_forever(self) -> None:
        for listener in self._listeners:
            self._idle_acceptors[listener.fileno()] = IDLE_ACCEPTORS
            for _ in range(IDLE_ACCEPTORS):
                self._start_acceptor(listener)
        idle = self.idle_exit_s
        while not self.stopping.wait(timeout=5.0 if idle is None else min(5.0, idle)):
            if idle is not None and time.monotonic() - self.last_request > idle:
                break
        self.close()

    def close(self) -> None:
        self.stopping.set()
        for listener in self._listeners:
            with contextlib.suppress(OSError):
                listener.close()
        with contextlib.suppress(OSError):
            # Only our own socket: a newer daemon may have bound the path after we let go.
            if self._lock_fd is not None:
                os.unlink(self.socket_path)
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(paths.runtime_dir(self.env), paths.STATE_NAME))
        if self._lock_fd is not None and self.control:
            with contextlib.suppress(OSError):
                if read_control_token(self.env) == self.control:  # not a newer daemon's
                    os.unlink(paths.control_path(self.env))
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # Each connection is served by the thread that accepted it: a few threads wait in
    # accept() on each listener, so a call costs no thread start and no hand-off between
    # threads (two wake-ups each, which a loaded machine makes slow). A thread that takes
    # the last idle place starts another before serving (an ask may hold its thread for
    # as long as a human takes), and one that finds enough idle threads after serving ends.
    def _start_acceptor(self, listener: socket.socket) -> None:
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        key = listener.fileno()
        handler = self._serve_relay if listener.family == socket.AF_UNIX else self._serve_http
        while not self.stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with self._acceptors_lock:
                self._idle_acceptors[key] -= 1
                another = self._idle_acceptors[key] == 0
                if another:
                    self._idle_acceptors[key] += 1  # counted before it starts: one spare
            if another:
                self._start_acceptor(listener)
            try:
                handler(conn)
            except Exception:  # a bug in one answer must not shrink the pool
                logger.exception("daemon: serving a connection failed")
            with self._acceptors_lock:
                if self._idle_acceptors[key] >= IDLE_ACCEPTORS:
                    return
                self._idle_acceptors[key] += 1

    # -- deciding --

    def decide(
        self,
        agent: str,
        data: bytes,
        *,
        config_files: Sequence[str],
        env: Mapping[str, str],
        process_cwd: str | None,
    ) -> Reply:
        self.last_request = time.monotonic()
        self.requests += 1
        # The lock covers the policy cache and the parser (not thread-safe); respond()
        # releases it before anything that may wait for a human.
        return respond(
            registry.adapter(agent),
            data,
            config_files=config_files,
            env=env,
            process_cwd=process_cwd,
            policy_loader=self.cache.load,
            lock=self.lock,
        )

    # -- the relay (Unix socket) --

    def _serve_relay(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(CONNECTION_TIMEOUT_S)
                if peer_uid(conn) != os.getuid():
                    return  # another user: no answer at all
                request = self._read_relay(conn)
                if request is None:
                    return
                reply, stop = self._relay_reply(*request)
                conn.sendall(reply)
                if stop:
                    self.stopping.set()  # after the answer: the process exits right away
            except (OSError, protocol.ProtocolError):
                return

    def _read_relay(self, conn: socket.socket) -> tuple[bytes, list[bytes], bytes] | None:
        buf = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                return protocol.decode_request(buf)
            buf += chunk
            request = protocol.decode_request(buf)
            if request is not None:
                return request

    def _refuse(self, why: str) -> protocol.ProtocolError:
        """Count a refused decide request (the hook then decides in-process) and say why."""
        self.refused += 1
        self.last_refusal = why
        return protocol.ProtocolError(why)

    def _relay_reply(self, op: bytes, raw_fields: list[bytes], body: bytes) -> tuple[bytes, bool]:
        """(the reply frame, whether to stop after sending it)."""
        fields = protocol.fields_of(raw_fields)
        if op == b"ping":
            return protocol.encode_reply(0, self.status_text().encode(), b""), False
        if op in protocol.CONTROL_OPS:
            if not self._control_ok(fields.get(b"control", [])):
                line = f"askgate daemon: refused: {op.decode()} needs the control token"
                return protocol.encode_reply(2, b"", line.encode()), False
            if op == b"stop":
                return protocol.encode_reply(0, b"stopping\n", b""), True
            return self._sweep(), False
        if fields.get(b"version") != [self.version.encode()]:
            # Another askgate than ours: let it decide in-process, and make room for a
            # daemon of its version.
            self.stopping.set()
            raise self._refuse("version mismatch")
        sent: dict[str, str] = {}
        for item in fields.get(b"env", []):
            key, _, value = item.partition(b"=")
            sent[os.fsdecode(key)] = os.fsdecode(value)
        if (differs := request_env.mismatch(sent, self.env)) is not None:
            # Decided with another environment than ours: the hook decides in its own
            # process instead. Nothing of the request's environment is used.
            raise self._refuse(f"the hook's {differs} differs from the daemon's")
        agent = fields.get(b"agent", [b""])[0].decode("ascii", "replace")
        if agent not in registry.NAMES:
            raise self._refuse(f"no adapter {agent!r}")
        cwd = fields.get(b"cwd")
        reply = self.decide(
            agent,
            body,
            config_files=[os.fsdecode(p) for p in fields.get(b"config", [])],
            env=request_env.decision_env(sent, self.env),
            process_cwd=os.fsdecode(cwd[0]) if cwd else None,
        )
        frame = protocol.encode_reply(reply.code, reply.stdout, reply.stderr.encode())
        return frame, False

    def _control_ok(self, given: list[bytes]) -> bool:
        if len(given) != 1 or not self.control:
            return False
        return hmac.compare_digest(given[0], self.control.encode())

    def _sweep(self) -> bytes:
        """Sweep the sandbox's placeholder registry under the daemon's own state directory
        (askgate.sandbox.placeholders), never one a request names."""
        try:
            from askgate.sandbox.placeholders import Registry, state_directory

            Registry(state_directory(self.env)).sweep()
        except Exception as exc:
            line = f"askgate daemon: sweep failed: {exc}"
            return protocol.encode_reply(2, b"", " ".join(line.split()).encode())
        return protocol.encode_reply(0, b"swept\n", b"")

    # -- HTTP (Claude Code http hooks) --

    def _serve_http(self, conn: socket.socket) -> None:
        from askgate.daemon.http import serve_connection

        with conn:
            conn.settimeout(CONNECTION_TIMEOUT_S)
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            serve_connection(conn, self.http_answer, self.stopping.is_set)

    def http_answer(self, request: HttpRequest) -> tuple[int, bytes]:
        given = request.headers.get(SECRET_HEADER, "")
        if not self.secret or not hmac.compare_digest(given.encode(), self.secret.encode()):
            return 401, b'{"error": "missing or wrong X-Askgate-Secret"}'
        path = request.target.split("?", 1)[0]
        agent = path[len(HOOK_PREFIX) :] if path.startswith(HOOK_PREFIX) else ""
        if agent not in registry.HTTP_NAMES:
            return 404, b'{"error": "not found"}'
        if request.method != "POST":
            return 405, b'{"error": "POST only"}'
        reply = self.decide(agent, request.body, config_files=(), env=self.env, process_cwd=None)
        return 200, http_body(reply, request.body)

    def status_text(self) -> str:
        return (
            f"pid={os.getpid()}\nport={self.port if self.http else ''}\n"
            f"socket={self.socket_path}\nversion={self.version}\n"
            f"uptime={time.time() - self.started:.0f}\nrequests={self.requests}\n"
            f"policies_loaded={self.cache.loads}\nhttp_error={self.http_error}\n"
            f"idle_exit={'never' if self.idle_exit_s is None else f'{self.idle_exit_s:g}'}\n"
            f"refused={self.refused}\nlast_refused={' '.join(self.last_refusal.split())}\n"
        )


def http_body(reply: Reply, data: bytes) -> bytes:
    """The http hook's answer (Claude Code's: askgate.adapters.claude_code.http_body)."""
    from askgate.adapters.claude_code import http_body as claude_code_http_body

    return claude_code_http_body(reply, data)


def claude_code_version() -> str:
    """The installation identity the relay sends (relay.version)."""
    from askgate.daemon.relay import version

    return version().decode()


def default_port() -> int:
    """`$ASKGATE_DAEMON_PORT`, else a per-user port (47000 + uid % 1000), so two users of
    one machine rarely collide (a collision fails closed: the other daemon answers 401)."""
    configured = os.environ.get("ASKGATE_DAEMON_PORT", "")
    if configured.isdigit() and 0 <= int(configured) < 65536:
        return int(configured)
    return 47000 + os.getuid() % 1000
