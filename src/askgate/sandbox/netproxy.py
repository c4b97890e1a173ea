"""`[sandbox] network = "policy"`: the command reaches only the `[net]` hosts, through a
proxy askgate runs outside the sandbox (docs/network.md).

    askgate sandbox (this process)                 bwrap --unshare-net …
      NetProxy thread  <── socket pair ──  netbridge.py: 127.0.0.1:PORT  <── curl, pip, git …
      (checks each host against [net],            (HTTP_PROXY=http://127.0.0.1:PORT …)
       resolves names, connects)

* **Per run.** The proxy is a thread of the `askgate sandbox` process that runs the
  command, holding the plan's `[net]` rules; it lives exactly as long as the run. It has
  no control interface at all: its only input is the proxy protocol, whose every request
  is checked. It has no address either: the bridge inherits one end of a socket pair and
  hands each connection over it as a descriptor, so no other process, and no other
  sandbox with another policy, can reach this proxy.
* **Protocols:** HTTP `CONNECT host:port` (any TCP: TLS, git over https …) and plain
  HTTP forwarding (`GET http://host/…`, one request per connection). A refusal is
  `403 Forbidden` with a one-line body naming the host and the rule (curl prints
  "CONNECT tunnel failed, response 403"), and one line on askgate's stderr.
* **Checks:** `Policy.check_net(host, port)` on the plan's `[net]` rules and default: only
  an allow connects (an ask is a refusal: nobody can be asked in the middle of a command;
  `yolo` turns it into allow as everywhere). Names are resolved here, outside; an allowed
  name that resolves to a loopback address also needs `localhost:PORT` allowed (DNS
  rebinding cannot reach the host's own services).
* **Fail closed:** the namespace has no route but loopback; proxy gone means connection
  refused; a head that does not parse is `400`; nothing is ever sent direct.
* No request line beyond method and host, no header and no body is logged.

`parse_head` is the sans-IO core (bytes in, a `Head` or a refusal out); `NetProxy` is
the imperative shell around it; `network_through_proxy` is the one function the runner
calls.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from askgate.policy.net import NetTarget, parse_url, parse_value

if TYPE_CHECKING:
    from askgate.sandbox.plan import SandboxPlan

MAX_HEAD_BYTES = 32 * 1024
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0
BUFFER = 65536
BRIDGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netbridge.py")

# name, port -> [(family, sockaddr)], like getaddrinfo; tests replace it in-process only
# (never from the environment or a file: a command must not choose where a name leads).
Resolver = Callable[[str, int], list[tuple[int, tuple[object, ...]]]]
RESOLVER_OVERRIDE: Resolver | None = None
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"proxy-connection",
        b"keep-alive",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"te",
        b"trailer",
        b"upgrade",
        b"host",
    }
)
_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class Verdict(NamedTuple):
    allowed: bool
    reason: str
    denied: bool = False  # a deny rule matched (not only "not allowed")


class Head(NamedTuple):
    """A parsed proxy request: where it goes, and (plain HTTP) the head to send there."""

    target: NetTarget
    connect: bool
    upstream_head: bytes = b""  # plain HTTP only: origin-form request, Connection: close
    rest: bytes = b""  # bytes after the head (the start of a body, or of the tunnel)


class Refusal(NamedTuple):
    status: int
    reason: str


# --- the sans-IO core ----------------------------------------------------------------


def head_end(buffer: bytes) -> int:
    """Index just past the blank line ending the head, or -1 (need more bytes)."""
    for marker in (b"\r\n\r\n", b"\n\n"):
        at = buffer.find(marker)
        if at >= 0:
            return at + len(marker)
    return -1


def parse_head(buffer: bytes) -> Head | Refusal | None:
    """The request in `buffer`, a refusal, or None when the head is not complete."""
    end = head_end(buffer)
    if end < 0:
        return Refusal(431, "request head too large") if len(buffer) > MAX_HEAD_BYTES else None
    if end > MAX_HEAD_BYTES:
        return Refusal(431, "request head too large")
    lines = buffer[:end].replace(b"\r\n", b"\n").split(b"\n")
    request = _request_line(lines[0])
    if isinstance(request, Refusal):
        return request
    headers = _header_lines(lines[1:])
    if isinstance(headers, Refusal):
        return headers
    method, target_text, version = request
    rest = buffer[end:]
    if method == b"CONNECT":
        return _connect_head(target_text, rest)
    return _forward_head(method, target_text, version, headers, rest)


def _request_line(line: bytes) -> tuple[bytes, str, bytes] | Refusal:
    """(method, target, version) of an HTTP/1.x request line."""
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return Refusal(400, "not an HTTP/1.x proxy request")
    method, target_bytes, version = parts
    if not method or not set(method) <= _TOKEN:
        return Refusal(400, "bad method")
    try:
        return method, target_bytes.decode("ascii"), version
    except UnicodeDecodeError:
        return Refusal(400, "the request target is not ASCII")


def _header_lines(lines: list[bytes]) -> list[tuple[bytes, bytes]] | Refusal:
    headers: list[tuple[bytes, bytes]] = []
    for line in lines:
        if not line:
            continue
        name, colon, value = line.partition(b":")
        if not colon or not name or not set(name) <= _TOKEN:
            return Refusal(400, "malformed header line")
        if any(byte < 32 and byte != 9 for byte in value) or 127 in value:
            return Refusal(400, "control character in a header")
        headers.append((name, value.strip()))
    return headers


def _connect_head(target_text: str, rest: bytes) -> Head | Refusal:
    try:
        target = parse_value(target_text)
    except ValueError:
        return Refusal(400, "CONNECT needs HOST:PORT")
    if target.port == 0:
        return Refusal(400, "CONNECT needs a port")
    return Head(target=target, connect=True, rest=rest)


def _origin_form(target_text: str) -> str:
    """The path and query of an absolute `http://` URL (`/` when it has none), no
    fragment: what the upstream server is sent."""
    after_scheme = target_text[len("http://") :]
    slash = min((i for i in (after_scheme.find(c) for c in "/?#") if i >= 0), default=-1)
    path = after_scheme[slash:] if slash >= 0 else "/"
    path = path.split("#", 1)[0] or "/"
    return "/" + path if path.startswith("?") else path


def _forward_head(
    method: bytes,
    target_text: str,
    version: bytes,
    headers: list[tuple[bytes, bytes]],
    rest: bytes,
) -> Head | Refusal:
    if not target_text.lower().startswith("http://"):
        return Refusal(400, "a proxy request names an http:// URL (use CONNECT for https)")
    parsed = parse_url(target_text)
    if parsed is None:
        return Refusal(400, "the URL's host cannot be read for sure")
    path = _origin_form(target_text)
    host_header = parsed.host if parsed.port == 80 else f"{parsed.host}:{parsed.port}"
    out = [method + b" " + path.encode("ascii") + b" " + version]
    out.append(b"Host: " + host_header.encode("ascii"))
    out += [name + b": " + value for name, value in headers if name.lower() not in _HOP_BY_HOP]
    out.append(b"Connection: close")
    return Head(
        target=parsed, connect=False, upstream_head=b"\r\n".join(out) + b"\r\n\r\n", rest=rest
    )


def refusal_response(status: int, text: str) -> bytes:
    """A complete HTTP response whose body is `text` (one line)."""
    phrases = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large"}
    phrases |= {502: "Bad Gateway", 504: "Gateway Timeout"}
    body = (text.replace("\r", " ").replace("\n", " ") + "\n").encode("utf-8", "replace")
    head = (
        f"HTTP/1.1 {status} {phrases.get(status, 'Error')}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "X-Askgate: blocked\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


# --- decisions -----------------------------------------------------------------------


Decider = Callable[[NetTarget], Verdict]


ASKGATE_PORT = "askgate's own port (its daemon or approval server): never reachable inside"


def is_this_machine(host: str) -> bool:
    """A name or address that connects to this machine (0.0.0.0 and :: do, on Linux)."""
    from askgate.policy.net import LOOPBACK_NAMES, is_loopback

    bare = host.lower().strip("[]").rstrip(".")
    return bare in LOOPBACK_NAMES or is_loopback(bare) or bare in ("0.0.0.0", "::")


def plan_decider(plan: SandboxPlan) -> Decider:
    """Check hosts against the plan's `[net]` rules and default (the policy's own)."""
    from askgate.policy.engine import Policy
    from askgate.policy.model import Action

    policy = Policy(
        plan.net_rules,
        project_root=plan.project_root,
        default=Action(plan.net_default),
        yolo=plan.net_yolo,
    )

    floor = frozenset(plan.net_floor_ports)

    def decide(target: NetTarget) -> Verdict:
        if target.port in floor and is_this_machine(target.host):
            return Verdict(False, ASKGATE_PORT, denied=True)
        decision = policy.check_net(target.host, target.port)
        allowed = decision.action is Action.ALLOW or (
            plan.net_yolo and decision.action is Action.ASK
        )
        if allowed:
            return Verdict(True, decision.reason)
        reason = f"{decision.action}: {decision.reason}"
        return Verdict(False, reason, denied=decision.action is Action.DENY)

    return decide


def _resolve(host: str, port: int) -> list[tuple[int, tuple[object, ...]]]:
    if RESOLVER_OVERRIDE is not None:
        return RESOLVER_OVERRIDE(host, port)
    if host == "localhost":
        return [(socket.AF_INET, ("127.0.0.1", port)), (socket.AF_INET6, ("::1", port))]
    name = host[1:-1] if host.startswith("[") else host
    found = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return [(family, address) for family, _type, _proto, _name, address in found]


# --- the proxy (imperative shell) -----------------------------------------------------


class NetProxy:
    """An HTTP CONNECT and forward proxy, one thread per connection. Connections arrive
    as descriptors over a private socket pair (`SCM_RIGHTS`): the bridge holds the other
    end, inherited, and the proxy has no name in any filesystem, so no other process (no
    other sandbox) can reach it."""

    def __init__(
        self,
        decide: Decider,
        *,
        resolver: Resolver | None = None,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.decide = decide
        self.resolver = resolver or _resolve
        self.report = report or _say
        self._control, self._bridge_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def bridge_fd(self) -> int:
        """A fresh descriptor of the bridge's end, to pass to one bwrap run."""
        return os.dup(self._bridge_end.fileno())

    def close(self) -> None:
        self._closed.set()
        for end in (self._control, self._bridge_end):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def _receive(self) -> None:
        while not self._closed.is_set():
            try:
                _data, fds, _flags, _address = socket.recv_fds(self._control, 16, 4)
            except OSError:
                return
            if not _data and not fds:
                return  # every bridge end is closed
            for fd in fds:
                try:
                    client = socket.socket(fileno=fd)
                except OSError:
                    os.close(fd)  # not a socket: nothing to serve
                    continue
                if client.type != socket.SOCK_STREAM:
                    client.close()
                    continue
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            self._handle(client)
        except Exception as error:  # one connection's trouble never stops the proxy
            with contextlib.suppress(OSError):
                client.sendall(refusal_response(502, f"askgate proxy error: {error!r}"))
        finally:
            with contextlib.suppress(OSError):
                client.close()

    def _handle(self, client: socket.socket) -> None:
        client.settimeout(HEAD_TIMEOUT_S)
        buffer = b""
        head: Head | Refusal | None = None
        while head is None:
            chunk = client.recv(BUFFER)
            if not chunk:
                return
            buffer += chunk
            head = parse_head(buffer)
        if isinstance(head, Refusal):
            client.sendall(refusal_response(head.status, f"askgate: {head.reason}"))
            return
        target = head.target
        verdict = self.decide(target)
        if not verdict.allowed:
            self._refuse(client, target, verdict.reason)
            return
        upstream = self._connect(client, target)
        if upstream is None:
            return
        with upstream:
            client.settimeout(None)
            if head.connect:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(head.upstream_head)
            if head.rest:
                upstream.sendall(head.rest)
            _relay(client, upstream)

    def _refuse(self, client: socket.socket, target: NetTarget, why: str) -> None:
        line = f"blocked {target.value} ({why})"
        self.report(f"network: {line}")
        client.sendall(refusal_response(403, f"askgate sandbox: {line}"))

    def _connect(self, client: socket.socket, target: NetTarget) -> socket.socket | None:
        try:
            addresses = self.resolver(target.host, target.port)
        except OSError as error:
            client.sendall(refusal_response(502, f"askgate: cannot resolve {target.host}: {error}"))
            return None
        from askgate.policy.net import is_loopback, normalize_host

        if target.host != "localhost" and any(is_loopback(str(a[1][0])) for a in addresses):
            localhost = self.decide(NetTarget("localhost", target.port))
            if not localhost.allowed:
                why = f"it resolves to this machine and localhost:{target.port} is not allowed"
                self._refuse(client, target, why)
                return None
        for _family, address in addresses:
            # DNS pointing an allowed name at a denied address (a metadata service, an
            # internal range written as an address) meets that address's deny.
            try:
                resolved = NetTarget(normalize_host(str(address[0])), target.port)
            except ValueError:
                continue
            if resolved != target and resolved.host != "localhost":
                verdict = self.decide(resolved)
                if verdict.denied:
                    self._refuse(
                        client, target, f"it resolves to {resolved.host}: {verdict.reason}"
                    )
                    return None
        last: OSError | None = None
        for family, address in addresses:
            upstream = socket.socket(family, socket.SOCK_STREAM)
            upstream.settimeout(CONNECT_TIMEOUT_S)
            try:
                upstream.connect(address)
            except OSError as error:
                upstream.close()
                last = error
                continue
            upstream.settimeout(None)
            return upstream
        why = f"cannot connect to {target.value}: {last or 'no address'}"
        client.sendall(refusal_response(502, f"askgate: {why}"))
        return None


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(BUFFER):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _say(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"askgate sandbox: {text}", file=sys.stderr, flush=True)


# --- the runner's one entry point -------------------------------------------------------


class ProxiedRun:
    """What each bwrap run needs: the command behind the bridge, and the descriptor to
    pass (a fresh one per attempt: the runner closes what it passed)."""

    def __init__(self, proxy: NetProxy) -> None:
        self.proxy = proxy

    def attempt(self, command: Sequence[str]) -> tuple[list[str], tuple[int, ...]]:
        fd = self.proxy.bridge_fd()
        python = sys.executable or shutil.which("python3") or "/usr/bin/python3"
        return [python, "-I", "-S", BRIDGE, str(fd), "--", *command], (fd,)


@contextlib.contextmanager
def network_through_proxy(plan: SandboxPlan) -> Iterator[ProxiedRun]:
    """For a plan with `network = "policy"`: the proxy for this run. The namespace is
    unshared by the plan already (`plan.network` is False), so whatever goes wrong here
    leaves the command without network, never with more."""
    proxy = NetProxy(plan_decider(plan))
    try:
        proxy.start()
        yield ProxiedRun(proxy)
    finally:
        proxy.close()
