"""`askgate mcp [options] -- SERVER-COMMAND…` and `askgate mcp --upstream URL`.

The agent starts this as its MCP server (stdio), or connects to it over Streamable HTTP on
127.0.0.1 (``--listen``, listen.py). With a command, the gateway starts that server and
relays its stdio; with ``--upstream`` it speaks Streamable HTTP to the server at URL. Either
way every frame passes unchanged except the ones it decides (see core.py). The gateway exits
when the client closes its stdin, or when the server exits (with its exit code) once the
client has been told.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import re
import socket
import stat
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from askgate.mcp.frames import DEFAULT_LIMIT, Oversized

if TYPE_CHECKING:
    from askgate.mcp.relay import Relay

SERVER_EXIT_GRACE_S = 5.0
SWITCH_INTERVAL_S = 0.0002
DEFAULT_CALL_TIMEOUT_S = 600.0
_LAUNCHERS = frozenset({"node", "npx", "bunx", "bun", "uvx", "uv", "pipx", "python", "python3",
                        "env", "docker", "deno", "run", "-m"})  # fmt: skip
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def server_name(argv: Sequence[str]) -> str:
    """A name for ``server:tool`` rules from the command: the package or program past
    launchers (``npx -y @modelcontextprotocol/server-filesystem /x`` -> ``filesystem``,
    ``uvx mcp-server-git`` -> ``git``, ``python -m mcp_server_time`` -> ``time``)."""
    for arg in argv:
        if arg.startswith("-") or os.path.basename(arg) in _LAUNCHERS:
            continue
        name = os.path.basename(arg.rstrip("/")).split("@")[0] or arg
        name = name.rsplit(".", 1)[0] if name.endswith((".js", ".mjs", ".py", ".ts")) else name
        for prefix in ("mcp-server-", "mcp_server_", "server-"):
            if name.startswith(prefix) and len(name) > len(prefix):
                name = name[len(prefix) :]
                break
        name = re.sub(r"[^A-Za-z0-9_.-]", "-", name.removesuffix("-mcp"))[:64]
        return name or "server"
    return "server"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="askgate mcp",
        description="Run an MCP server behind askgate: tools/call, resources/read and "
        "prompts/get are decided by policy (name and arguments); denied tools are not listed; "
        "everything else passes through unchanged.",
        usage="askgate mcp [options] -- SERVER-COMMAND [ARG...]\n"
        "       askgate mcp [options] --upstream URL",
    )
    parser.add_argument("--config", action="append", default=[], metavar="FILE")
    parser.add_argument("--name", help="the server's name in `server:tool` rules "
                        "(default: derived from the command or the URL's host)")  # fmt: skip
    parser.add_argument("--upstream", metavar="URL", help="a Streamable HTTP MCP endpoint")
    parser.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                        help="an HTTP header for --upstream (e.g. Authorization)")  # fmt: skip
    parser.add_argument("--listen", type=int, nargs="?", const=0, default=None, metavar="PORT",
                        help="serve the client over Streamable HTTP on 127.0.0.1:PORT "
                        "(default: a free port, printed on stderr) instead of stdio")  # fmt: skip
    parser.add_argument("--agent", help="apply the policy's [agent.NAME] sections")
    parser.add_argument("--cwd", help="directory relative paths are resolved against "
                        "(default: the current directory)")  # fmt: skip
    parser.add_argument("--ask-terminal", action="store_true",
                        help="ask on /dev/tty when the client cannot elicit")  # fmt: skip
    parser.add_argument("--max-message-bytes", type=int, default=DEFAULT_LIMIT)
    parser.add_argument("--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT_S,
                        help="seconds a forwarded request may take (0: no limit)")  # fmt: skip
    parser.add_argument("--ask-timeout", type=float, default=None,
                        help="seconds a human has to answer an ask")  # fmt: skip
    args = list(argv)
    command: list[str] = []
    if "--" in args:
        split = args.index("--")
        args, command = args[:split], args[split + 1 :]
    namespace = parser.parse_args(args)
    namespace.command = command
    if bool(command) == bool(namespace.upstream):
        parser.error("give either a server command after -- or --upstream URL (not both)")
    if namespace.name is not None and not _NAME.fullmatch(namespace.name):
        parser.error("--name is 1-64 of A-Z a-z 0-9 _ . -")
    if namespace.listen is not None and not 0 <= namespace.listen <= 65535:
        parser.error("--listen PORT is 0-65535")
    if namespace.max_message_bytes < 1024:
        parser.error("--max-message-bytes is at least 1024")
    if namespace.upstream is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(namespace.upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            parser.error("--upstream must be an http:// or https:// URL")
        if namespace.name is None:
            namespace.name = re.sub(r"[^A-Za-z0-9_.-]", "-", parts.hostname)[:64]
    headers: dict[str, str] = {}
    for item in namespace.header:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            parser.error(f"--header {item[:40]!r}: want NAME:VALUE")
        headers[key.strip()] = value.strip()
    namespace.headers = headers
    if namespace.name is None:
        namespace.name = server_name(command)
    return namespace


async def run_gateway(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    from askgate.mcp.core import GatewayCore
    from askgate.mcp.gateway import PROMPT_BUDGET_SECONDS, open_decider
    from askgate.mcp.relay import READ_CHUNK, Relay
    from askgate.mcp.upstreams import HttpUpstream, StdioUpstream

    env = dict(os.environ if env is None else env)
    cwd = os.path.abspath(args.cwd or os.getcwd())
    loop = asyncio.get_running_loop()
    # The review-log thread must hand the interpreter back to the relay at once when a
    # frame arrives (the default 5 ms switch interval would sit on the call's path).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    limit = args.max_message_bytes
    relay_box: list[Relay] = []
    side = None
    if args.listen is None:
        client_in, client_out = await _stdio()

        async def to_client(data: bytes) -> None:
            client_out.write(data)
            await client_out.drain()

    else:
        from askgate.mcp.listen import ClientSide

        sock = _loopback_socket(args.listen)
        port = sock.getsockname()[1]
        side = ClientSide(limit=limit, port=port)
        to_client = side.to_client

    def send_ask(message: str) -> concurrent.futures.Future[dict[str, Any] | None]:
        return relay_box[0].send_ask(message)

    decider = open_decider(
        args.name,
        cwd=cwd,
        config_files=args.config,
        agent=args.agent,
        env=env,
        send_ask=send_ask,
        use_elicit=lambda: relay_box[0].core.client_elicitation,
        prompt_timeout=args.ask_timeout or PROMPT_BUDGET_SECONDS,
        terminal=args.ask_terminal,
    )
    core = GatewayCore(visible=decider.visible)
    relay = Relay(core, decider, to_client, call_timeout=args.call_timeout or None)
    relay_box.append(relay)

    async def client_side() -> None:
        if side is None:
            await relay.pump(lambda: client_in.read(READ_CHUNK), limit, "client")
            await _drain(relay)
            return
        from askgate.mcp.listen import serve

        async def from_client(frame: bytes | Oversized) -> None:
            await relay.perform(core.from_client(frame))

        side.from_client = from_client
        print(f"askgate mcp: listening on http://127.0.0.1:{port}/mcp", file=sys.stderr,
              flush=True)  # fmt: skip
        await serve(side, sock)

    if args.upstream:
        upstream = HttpUpstream(
            args.upstream, perform=relay.perform, from_server=core.from_server,
            failed=core.upstream_failed, limit=limit, headers=args.headers, spawn=relay.spawn,
        )  # fmt: skip
        relay.upstream = upstream
        try:
            await client_side()
        finally:
            relay.shutdown()
            await upstream.close()
        return 0

    proc = await asyncio.create_subprocess_exec(
        *args.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=cwd
    )
    assert proc.stdin is not None and proc.stdout is not None
    server_out = proc.stdout
    relay.upstream = StdioUpstream(proc.stdin)

    async def read_server() -> bytes:
        return await server_out.read(READ_CHUNK)

    async def client_then_eof() -> None:
        await client_side()
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()  # the client went away: the server sees EOF

    inbound = loop.create_task(client_then_eof())
    try:
        await relay.pump(read_server, limit, "server")
        code = await _stop(proc)
        await relay.server_closed(f"the MCP server exited (code {code})")
    finally:
        inbound.cancel()
        relay.shutdown()
        await _stop(proc)
    return proc.returncode or 0


def _loopback_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


async def _drain(relay: Relay) -> None:
    """Let decisions and answers already under way finish before the gateway exits."""
    pending = [t for t in relay.tasks if not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=SERVER_EXIT_GRACE_S)


class NotAPipe(Exception):
    """Standard input or output is not the MCP client's pipe."""


async def _stdio() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    for fd, name in ((0, "input"), (1, "output")):
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)):
            raise NotAPipe(f"standard {name} is not a pipe from the MCP client "
                           "(an agent starts askgate mcp; or use --listen)")  # fmt: skip
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


async def _stop(proc: asyncio.subprocess.Process) -> int:
    """Let the server finish on EOF; end it if it does not."""
    if proc.returncode is not None:
        return proc.returncode
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    try:
        return await asyncio.wait_for(proc.wait(), SERVER_EXIT_GRACE_S)
    except TimeoutError:
        proc.terminate()
        try:
            return await asyncio.wait_for(proc.wait(), SERVER_EXIT_GRACE_S)
        except TimeoutError:
            proc.kill()
            return await proc.wait()


def main(argv: Sequence[str]) -> int:
    try:
        args = parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        return asyncio.run(run_gateway(args))
    except FileNotFoundError as exc:
        print(f"askgate mcp: error: cannot start the server: {exc}", file=sys.stderr)
        return 2
    except NotAPipe as exc:
        print(f"askgate mcp: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except (BrokenPipeError, ConnectionResetError):
        return 0  # the client closed the connection
    except Exception as exc:  # a broken setup: one line, no trace
        print(f"askgate mcp: error: {exc!r}"[:2000], file=sys.stderr)
        return 2
