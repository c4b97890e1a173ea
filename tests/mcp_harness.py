"""Drive `askgate mcp` with the real MCP Python SDK client (`mcp` on PyPI) over stdio.

`Gateway` holds one world: a fake HOME with a project in it, a policy file, the review log,
and the environment the gateway process runs with. `session()` opens the SDK's stdio client
on `python -m askgate mcp [options] -- SERVER…` (or `--upstream URL`) and yields an
initialised `ClientSession`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from clients import client_bin, client_dir, missing
from waits import wait_until

FILESYSTEM = ("mcp-server-filesystem", "2026.8.31", "mcp-server-filesystem")
EVERYTHING = ("mcp-server-everything", "2026.8.31", "mcp-server-everything")
HERE = Path(__file__).parent
LOOPBACK = HERE / "mcp_loopback.cjs"
SECRET = "aws_secret_access_key = AKIA-DO-NOT-LEAK"


def npm_server(spec: tuple[str, str, str]) -> Path:
    """The installed server's executable (scripts/clients/mcp-servers.sh), or skip/fail."""
    name, version, binary = spec
    path = client_bin(name, version, binary)
    if not (client_dir(name, version) / ".ok").is_file() or not os.access(path, os.X_OK):
        missing(f"{name} {version} is not installed at {client_dir(name, version)}")
    return path


def pypi_server(name: str) -> str:
    """A server installed with the dev extra, next to this Python."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        missing(f"{name} is not installed in this environment (the dev extra has it)")
    return str(path)


class Gateway:
    def __init__(self, tmp_path: Path, policy: str) -> None:
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.project = self.home / "work"
        (self.project / ".git").mkdir(parents=True)
        (self.home / ".aws").mkdir()
        (self.home / ".aws" / "credentials").write_text(SECRET + "\n")
        (self.project / "hello.txt").write_text("hello from the project\n")
        self.policy = tmp_path / "policy.toml"
        self.policy.write_text(policy)
        self.review = tmp_path / "review.jsonl"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ASKGATE_")},
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_RUNTIME_DIR": str(tmp_path / "run"),
            "ASKGATE_MANAGED_POLICY": str(tmp_path / "no-managed.toml"),
            "ASKGATE_AUDIT_LOG": str(self.review),
            "ASKGATE_DAEMON": "off",
        }

    def argv(self, server: Sequence[str] = (), *options: str) -> list[str]:
        argv = [sys.executable, "-m", "askgate", "mcp", "--config", str(self.policy), *options]
        return [*argv, "--", *server] if server else argv

    @contextlib.asynccontextmanager
    async def session(
        self, argv: Sequence[str], *, elicitation: Any = None, env: dict[str, str] | None = None
    ) -> AsyncIterator[Any]:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=argv[0], args=list(argv[1:]), env=env or self.env, cwd=str(self.project)
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, elicitation_callback=elicitation) as session,
        ):
            await session.initialize()
            yield session

    def audit(self) -> list[dict[str, Any]]:
        if not self.review.exists():
            return []
        return [json.loads(line) for line in self.review.read_text().splitlines()]


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def everything_http(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The reference "everything" server in its Streamable HTTP mode, bound to 127.0.0.1
    (tests/mcp_loopback.cjs); yields (endpoint URL, the log of request bodies it received)."""
    binary = npm_server(EVERYTHING)
    port_file = tmp_path / "everything.port"
    seen = tmp_path / "everything-requests.log"
    env = {
        **os.environ,
        "PORT": "0",
        "NODE_OPTIONS": f"--require {LOOPBACK}",
        "ASKGATE_TEST_PORT_FILE": str(port_file),
        "ASKGATE_TEST_REQUEST_LOG": str(seen),
    }
    proc = subprocess.Popen(
        [str(binary), "streamableHttp"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        port = wait_until(
            lambda: port_file.exists() and port_file.read_text().strip(),
            "the everything server's port",
            process=proc,
        )
        yield f"http://127.0.0.1:{port}/mcp", seen
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def listening_gateway(gw: Gateway, argv: Sequence[str]) -> Iterator[str]:
    """`askgate mcp --listen …` as a process; yields the URL it prints on stderr."""
    proc = subprocess.Popen(
        list(argv), env=gw.env, cwd=gw.project, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    try:
        url = ""
        while not url:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError(f"the gateway exited: {proc.wait()}")
            if "listening on " in line:
                url = line.rsplit("listening on ", 1)[1].strip()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.asynccontextmanager
async def http_session(url: str, *, elicitation: Any = None) -> AsyncIterator[Any]:
    """The SDK's Streamable HTTP client on `url`, initialised."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(url) as streams,
        ClientSession(streams[0], streams[1], elicitation_callback=elicitation) as session,
    ):
        await session.initialize()
        yield session
