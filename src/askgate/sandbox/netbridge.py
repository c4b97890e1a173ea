"""Inside the sandbox's network namespace: a loopback TCP port that leads to askgate's
proxy outside, then the command.

    python3 -I -S netbridge.py FD -- bash -c COMMAND

Run by bwrap as the sandbox's first program (standard library only, no askgate import:
it starts in ~15 ms). It binds 127.0.0.1 on a free port *before* the command starts (so
no connection can race it), points the usual proxy variables at that port, forks the
command, and then hands each TCP connection to the proxy: a new socket pair per
connection, one end sent over the inherited descriptor FD (`SCM_RIGHTS`), the other
copied to and from the TCP connection. The proxy has no address the command could reach
otherwise, and the command never inherits FD. The bridge decides nothing itself:
whatever the command does to it (kill it, even trace it) gains nothing, since the proxy
checks every connection and the namespace has no other way out. Exit status: the
command's (128+N when killed by signal N).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading

BUFFER = 65536
# The variables programs read for a proxy (curl, wget, pip, git, npm, yarn, Node, Go …).
PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "npm_config_proxy",
    "npm_config_https_proxy",
    "YARN_HTTP_PROXY",
    "YARN_HTTPS_PROXY",
    "PIP_PROXY",
    "GLOBAL_AGENT_HTTP_PROXY",
    "ASKGATE_NET_PROXY",
)
# Nothing bypasses the proxy: "direct" leads nowhere in this namespace, and the host's
# own loopback ports are reached through the proxy too (when the policy lists them).
EMPTY_VARIABLES = ("NO_PROXY", "no_proxy", "npm_config_noproxy")


def proxy_environment(port: int, environ: dict[str, str]) -> dict[str, str]:
    url = f"http://127.0.0.1:{port}"
    env = dict(environ)
    env.update(dict.fromkeys(PROXY_VARIABLES, url))
    env.update(dict.fromkeys(EMPTY_VARIABLES, ""))
    env["NODE_USE_ENV_PROXY"] = "1"  # Node's own fetch and http honour the variables
    return env


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            chunk = source.recv(BUFFER)
            if not chunk:
                break
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for end, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                end.shutdown(how)


def _serve_one(client: socket.socket, control: socket.socket) -> None:
    upstream, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        socket.send_fds(control, [b"c"], [theirs.fileno()])
    except OSError:
        # The proxy is gone: refuse, never reach out any other way (fail closed).
        for end in (upstream, theirs, client):
            end.close()
        return
    theirs.close()
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _accept(listener: socket.socket, control: socket.socket) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_serve_one, args=(client, control), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("askgate netbridge: usage: netbridge.py FD -- COMMAND…", file=sys.stderr)
        return 125
    command = argv[2:]
    try:
        control = socket.socket(fileno=int(argv[0]))
        os.set_inheritable(control.fileno(), False)  # the command never gets it
    except (ValueError, OSError) as error:
        print(f"askgate sandbox: refused: no proxy descriptor: {error}", file=sys.stderr)
        return 125
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
    except OSError as error:
        print(f"askgate sandbox: refused: no loopback in the sandbox: {error}", file=sys.stderr)
        return 125
    port = listener.getsockname()[1]
    env = proxy_environment(port, dict(os.environ))
    child = os.fork()
    if child == 0:
        listener.close()
        control.close()
        try:
            os.execve(command[0], command, env)
        except OSError as error:
            print(f"askgate sandbox: cannot run {command[0]}: {error}", file=sys.stderr)
        os._exit(127)
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda signum, _frame: os.kill(child, signum))
    threading.Thread(target=_accept, args=(listener, control), daemon=True).start()
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
