"""Inside the sandbox's network namespace: a loopback TCP port that leads to askgate's
proxy outside, then the command.

    python3 -I -S netbridge.py FD -- bash -c COMMAND
    python3 -I -S netbridge.py --connect HOST PORT      (an ssh ProxyCommand, inside)

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

ssh speaks no HTTP proxy, so the command also gets `ASKGATE_SSH_PROXY_COMMAND` (and
`GIT_SSH_COMMAND` when neither it nor `GIT_SSH` is set): `--connect` tunnels stdin and
stdout through the proxy with CONNECT, so `git push` over ssh reaches an allowed host.
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
    # ssh speaks no HTTP proxy: a ProxyCommand that tunnels through it (git over ssh).
    helper = " ".join(_quote(w) for w in (sys.executable, "-I", "-S", __file__, "--connect"))
    env["ASKGATE_SSH_PROXY_COMMAND"] = f"{helper} %h %p"
    if "GIT_SSH_COMMAND" not in env and "GIT_SSH" not in env:
        env["GIT_SSH_COMMAND"] = f"ssh -o {_quote('ProxyCommand=' + helper + ' %h %p')}"
    return env


def _quote(word: str) -> str:
    """POSIX shell quoting (shlex.quote, without importing shlex and re)."""
    if word and all(c.isalnum() or c in "@%+=:,./-_" for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def connect_through(host: str, port: str, proxy: str) -> int:
    """`ProxyCommand` helper: CONNECT host:port through the proxy at `proxy`
    (`http://127.0.0.1:PORT`), then copy stdin/stdout to and from the tunnel."""
    address = proxy.removeprefix("http://").rstrip("/")
    proxy_host, _, proxy_port = address.rpartition(":")
    tunnel = socket.create_connection((proxy_host, int(proxy_port)))
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    tunnel.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = tunnel.recv(BUFFER)
        if not chunk:
            break
        head += chunk
    status_line, _, rest = head.partition(b"\r\n")
    if b" 200 " not in status_line + b" ":
        body = rest.partition(b"\r\n\r\n")[2].decode("utf-8", "replace").strip()
        print(body or status_line.decode("utf-8", "replace"), file=sys.stderr)
        return 1
    leftover = rest.partition(b"\r\n\r\n")[2]
    if leftover:
        os.write(1, leftover)

    def upstream() -> None:
        while True:
            data = os.read(0, BUFFER)
            if not data:
                break
            tunnel.sendall(data)
        with contextlib.suppress(OSError):
            tunnel.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    while chunk := tunnel.recv(BUFFER):
        os.write(1, chunk)
    return 0


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
    if argv[:1] == ["--connect"] and len(argv) == 3:
        proxy = os.environ.get("ASKGATE_NET_PROXY", "")
        try:
            return connect_through(argv[1], argv[2], proxy)
        except (OSError, ValueError) as error:
            print(f"askgate sandbox: cannot reach the proxy: {error}", file=sys.stderr)
            return 1
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
