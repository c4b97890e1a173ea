"""`askgate acp [--config FILE]... -- AGENT-COMMAND...`: the ACP proxy's asyncio shell.

The editor starts this instead of the agent; this starts the agent and relays stdio in both
directions through `ProxyCore`. Policy decisions run on worker threads so that no other
message waits for one. The agent's stderr is the proxy's stderr; the proxy exits with the
agent's exit code when the agent's stdout closes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as _dt
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from askgate.adapters.acp.core import Action, Audit, Decide, ProxyCore, ToAgent, ToClient, Verdict

LINE_LIMIT = 64 * 1024 * 1024  # diffs and file contents travel in one line
AGENT_EXIT_GRACE_S = 5.0
_LAUNCHERS = frozenset({"node", "npx", "bunx", "bun", "uvx", "uv", "python", "python3", "env"})


def agent_label(argv: Sequence[str]) -> str:
    """``acp:<agent>`` for the review log: the program name, past launchers like ``npx``."""
    for arg in argv:
        name = os.path.basename(arg)
        if arg.startswith("-") or name in _LAUNCHERS or name.startswith("python"):
            continue
        stem = name.rsplit(".", 1)[0] if name.endswith((".js", ".mjs", ".py")) else name
        return f"acp:{stem}"
    return f"acp:{os.path.basename(argv[0])}" if argv else "acp:agent"


class Relay:
    """One proxied connection: two pumps, the core, and the decider."""

    def __init__(
        self,
        core: ProxyCore,
        decider: Any,  # PermissionDecider: .decide(params, cwd) -> (Verdict, reason)
        audit: Any,  # AuditLog | None
        to_agent: asyncio.StreamWriter,
        to_client: asyncio.StreamWriter,
    ) -> None:
        self.core = core
        self.decider = decider
        self.audit = audit
        self.to_agent = to_agent
        self.to_client = to_client
        self.tasks: set[asyncio.Task[None]] = set()

    async def perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, ToAgent):
                if not self.to_agent.is_closing():
                    self.to_agent.write(action.line)
                    await self.to_agent.drain()
            elif isinstance(action, ToClient):
                self.to_client.write(action.line)
                await self.to_client.drain()
            elif isinstance(action, Decide):
                task = asyncio.create_task(self.decide(action))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            elif isinstance(action, Audit) and self.audit is not None:
                stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")
                self.audit.write({"timestamp": stamp, **action.record})

    async def decide(self, action: Decide) -> None:
        # A daemon thread, not the loop's executor: an ask the approval server never
        # answers (the turn was cancelled) must not keep the proxy alive at exit.
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[Verdict, str]] = loop.create_future()

        def work() -> None:
            try:
                answer = self.decider.decide(action.params, action.cwd)
            except Exception as exc:  # the decider never raises; if it does, deny
                answer = (Verdict.DENY, f"askgate internal error: {exc!r}")
            with contextlib.suppress(RuntimeError):  # the loop is gone: the proxy is exiting
                loop.call_soon_threadsafe(_settle, future, answer)

        threading.Thread(target=work, name="askgate-acp-decide", daemon=True).start()
        verdict, reason = await future
        await self.perform(self.core.decided(action.key, verdict, reason))

    async def client_to_agent(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            await self.perform(self.core.from_client(line))
        if not self.to_agent.is_closing():
            self.to_agent.close()  # the editor went away: the agent sees EOF

    async def agent_to_client(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            await self.perform(self.core.from_agent(line))


def _settle(future: asyncio.Future[tuple[Verdict, str]], answer: tuple[Verdict, str]) -> None:
    if not future.done():
        future.set_result(answer)


async def _stdio() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


async def run_proxy(
    agent_argv: Sequence[str],
    *,
    config_files: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> int:
    from askgate.adapters.acp.decide import PermissionDecider
    from askgate.hookrt.decide import approval_prompter, audit_log

    env = dict(os.environ if env is None else env)
    client = agent_label(agent_argv)
    decider = PermissionDecider(
        client, config_files=config_files, env=env, prompter=approval_prompter(env)
    )
    proc = await asyncio.create_subprocess_exec(
        *agent_argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=LINE_LIMIT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    client_in, client_out = await _stdio()
    relay = Relay(
        ProxyCore(default_cwd=os.getcwd()), decider, audit_log(env, client), proc.stdin, client_out
    )
    inbound = asyncio.create_task(relay.client_to_agent(client_in))
    try:
        await relay.agent_to_client(proc.stdout)
    finally:
        inbound.cancel()
        for task in list(relay.tasks):
            task.cancel()
        await _stop(proc)
    return await proc.wait()


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Let the agent finish on EOF; end it if it does not (the editor is gone)."""
    if proc.returncode is not None:
        return
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), AGENT_EXIT_GRACE_S)
    except TimeoutError:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), AGENT_EXIT_GRACE_S)
        except TimeoutError:
            proc.kill()


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="askgate acp",
        description="Run an ACP agent behind askgate: permission requests are answered by "
        "policy; everything else passes through unchanged.",
        usage="askgate acp [--config FILE]... -- AGENT-COMMAND [ARG...]",
    )
    parser.add_argument("--config", action="append", default=[], metavar="FILE")
    args = list(argv)
    if "--" not in args:
        if "-h" in args or "--help" in args:
            parser.parse_args(["--help"])
        parser.error("give the agent command after --, e.g. askgate acp -- gemini --acp")
    split = args.index("--")
    namespace = parser.parse_args(args[:split])
    namespace.agent = args[split + 1 :]
    if not namespace.agent:
        parser.error("the agent command after -- is empty")
    return namespace


def main(argv: Sequence[str]) -> int:
    try:
        args = parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        return asyncio.run(run_proxy(args.agent, config_files=args.config))
    except FileNotFoundError as exc:
        print(f"askgate acp: error: cannot start the agent: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except (BrokenPipeError, ConnectionResetError):
        return 0  # the editor closed the connection; the agent has been stopped
    except Exception as exc:  # a broken setup (approval server config, …): one line, no trace
        print(f"askgate acp: error: {exc!r}"[:2000], file=sys.stderr)
        return 2
