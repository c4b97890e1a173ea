"""`askgate daemon start | status | stop | run`.

start   start the resident decider in the background (returns once it answers); it keeps
        running until `stop` (an http hook depends on it), unless --idle-exit S
status  print the running daemon's pid, port, socket, uptime (exit 3 when none runs)
stop    ask it to exit (exit 0 also when none was running); carries the control token
sweep   ask it to sweep the sandbox's placeholder registry (carries the control token)
run     serve in the foreground (what `start` and the command hook launch)
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

from askgate.daemon import paths, protocol, relay

NOT_RUNNING = 3
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"askgate daemon: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="askgate daemon", description="The resident decider.")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    for name, text in (("start", "start in the background"), ("run", "serve in the foreground")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--port", type=int, default=None, help="HTTP port on 127.0.0.1")
        p.add_argument("--no-http", action="store_true", help="Unix socket only")
        p.add_argument(
            "--idle-exit",
            type=float,
            default=None,
            metavar="S",
            help="exit after S seconds without a request (default: never; the daemon the"
            " command hook starts for itself: 1800)",
        )
        if name == "run":
            p.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
            p.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)
    sub.add_parser("status", help="show the running daemon")
    sub.add_parser("stop", help="stop the running daemon")
    sub.add_parser("sweep", help="sweep the sandbox's placeholder registry")
    return parser


def ping(env: dict[str, str] | None = None) -> dict[str, str] | None:
    environ = dict(os.environ if env is None else env)
    answer = relay.exchange(
        paths.socket_path(environ), protocol.encode_request(b"ping", []), timeout=5.0
    )
    if isinstance(answer, str):
        return None
    status = {}
    for line in answer[1].decode().splitlines():
        key, _, value = line.partition("=")
        status[key] = value
    return status


def _print_status(status: dict[str, str]) -> None:
    port = status.get("port") or "-"
    print(
        f"running: pid {status.get('pid')}, http 127.0.0.1:{port}, socket {status.get('socket')},"
        f" up {status.get('uptime')} s, {status.get('requests')} requests,"
        f" idle exit {status.get('idle_exit')}"
    )
    if status.get("refused", "0") not in ("", "0"):
        print(
            f"askgate daemon: warning: {status['refused']} hook calls were refused and decided"
            f" in the hook's own process (last: {status.get('last_refused') or '?'});"
            " run the agent with the daemon's environment"
        )
    if status.get("http_error"):
        print(f"askgate daemon: warning: no http listener ({status['http_error']})")


def _run(args: argparse.Namespace) -> int:
    from askgate.daemon.server import AlreadyRunning, Daemon

    # An explicitly started daemon keeps running: an http hook cannot start it again.
    idle = None if args.idle_exit is None or args.idle_exit <= 0 else args.idle_exit
    daemon = Daemon(
        port=args.port,
        http=not args.no_http,
        http_required=args.port is not None,
        idle_exit_s=idle,
    )
    try:
        daemon.bind()
    except AlreadyRunning:
        if not args.quiet:
            print("askgate daemon: already running", file=sys.stderr)
        return 0 if args.quiet else 1
    except (OSError, paths.UnsafeDirectory, PermissionError) as exc:
        daemon.close()
        print(f"askgate daemon: error: {exc}", file=sys.stderr)
        return 2
    # A daemon outlives the directory it was started from (a hook's cwd, a test's temporary
    # project): it works from "/" and resolves every request against the request's own cwd.
    os.chdir("/")
    daemon.warm()
    if args.ready_fd is not None:
        with contextlib.suppress(OSError):
            os.write(args.ready_fd, f"ready port={daemon.port}\n".encode())
            os.close(args.ready_fd)
    elif not args.quiet:
        print(f"askgate daemon: serving on {daemon.socket_path} and 127.0.0.1:{daemon.port}")
        sys.stdout.flush()
    try:
        daemon.serve_forever()
    except KeyboardInterrupt:
        daemon.close()
    return 0


def _start(args: argparse.Namespace) -> int:
    status = ping()
    if status is not None:
        _print_status(status)
        return 0
    read_fd, write_fd = os.pipe()
    argv = [sys.executable, "-m", "askgate", "daemon", "run", "--ready-fd", str(write_fd)]
    if args.port is not None:
        argv += ["--port", str(args.port)]
    if args.no_http:
        argv.append("--no-http")
    if args.idle_exit is not None:
        argv += ["--idle-exit", str(args.idle_exit)]
    child = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(write_fd,),
        start_new_session=True,
    )
    os.close(write_fd)
    ready = _read_line(read_fd, START_TIMEOUT_S)
    if not ready.startswith(b"ready"):
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=1)
        error = b""
        if child.returncode is not None and child.stderr is not None:
            error = child.stderr.read()
        line = error.decode(errors="replace").strip().splitlines()
        print(
            f"askgate daemon: error: did not start: {line[-1] if line else 'no answer'}",
            file=sys.stderr,
        )
        return 1
    if child.stderr is not None:
        child.stderr.close()
    status = ping()
    if status is None:
        print("askgate daemon: error: started but does not answer", file=sys.stderr)
        return 1
    _print_status(status)
    return 0


def _read_line(fd: int, timeout: float) -> bytes:
    import selectors

    deadline = time.monotonic() + timeout
    buf = b""
    with selectors.DefaultSelector() as selector, contextlib.closing(os.fdopen(fd, "rb", 0)) as f:
        selector.register(f, selectors.EVENT_READ)
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                break
            chunk = f.read(256)
            if not chunk:
                break
            buf += chunk
    return buf


def _control(op: bytes, env: dict[str, str]) -> tuple[int, bytes, bytes] | str:
    """Send a control op with the token the daemon wrote at start (read here, outside any
    sandbox: the sandbox hides the state directory)."""
    from askgate.daemon.server import read_control_token

    token = read_control_token(env)
    fields = [] if token is None else [b"control=" + token.encode()]
    return relay.exchange(paths.socket_path(env), protocol.encode_request(op, fields), 5.0)


def _refused(answer: tuple[int, bytes, bytes]) -> bool:
    if answer[0] == 0:
        return False
    line = answer[2].decode(errors="replace").strip() or "askgate daemon: refused"
    print(line, file=sys.stderr)
    return True


def _sweep() -> int:
    answer = _control(b"sweep", dict(os.environ))
    if answer == relay.NO_DAEMON:
        print("askgate daemon: not running")
        return NOT_RUNNING
    if isinstance(answer, str):
        print("askgate daemon: error: the daemon does not answer", file=sys.stderr)
        return 1
    if _refused(answer):
        return 2
    print("askgate daemon: swept")
    return 0


def _stop() -> int:
    env = dict(os.environ)
    answer = _control(b"stop", env)
    if answer == relay.NO_DAEMON:
        print("askgate daemon: not running")
        return 0
    if isinstance(answer, str):
        print("askgate daemon: error: the daemon does not answer", file=sys.stderr)
        return 1
    if _refused(answer):
        return 2
    # The daemon holds its lock until it has closed everything: wait for it.
    lock_path = os.path.join(paths.runtime_dir(env), paths.LOCK_NAME)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    print("askgate daemon: error: did not stop in time", file=sys.stderr)
                    return 1
                time.sleep(0.02)
    finally:
        os.close(fd)
    print("askgate daemon: stopped")
    return 0


def main(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.action is None:
        print(
            "askgate daemon: error: an action is required: start | status | stop | sweep | run",
            file=sys.stderr,
        )
        return 2
    if args.action in ("run", "start") and not getattr(args, "quiet", False):
        from askgate.locations import daemon_socket_dir_notice

        notice = daemon_socket_dir_notice()
        if notice:  # a shared /tmp directory refused: say where the socket went instead
            print(f"askgate daemon: {notice}", file=sys.stderr)
    if args.action == "run":
        return _run(args)
    if args.action == "start":
        return _start(args)
    if args.action == "stop":
        return _stop()
    if args.action == "sweep":
        return _sweep()
    status = ping()
    if status is None:
        print("askgate daemon: not running")
        return NOT_RUNNING
    _print_status(status)
    return 0
