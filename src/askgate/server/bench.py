"""Measurements for benchmarks/approval.py, against real `askgate serve` processes.

``python -m askgate.server.bench sqlite R,T,W`` and ``… pg-release N URL`` print one JSON
object. Servers are separate processes on 127.0.0.1; long-polls and deciders use plain
asyncio sockets, so the numbers are the server's, not a client pool's. Nothing is asserted:
numbers only.

* ``sqlite`` on one SQLite server: R decisions -> long-polling waiter released (ns samples) and
  R/10 for a client that polls every second (the peer); T approvals by 16 concurrent agents
  (see `throughput`); W concurrent long-polls, the server's RSS before and with them parked,
  and the time until one decision released them all.
* ``pg-release``: two servers on one PostgreSQL database; created and waited on one, decided on
  the other (LISTEN/NOTIFY).
* ``throughput N[,AGENTS] [URL]``: the throughput run alone (SQLite, or PostgreSQL at URL),
  after a warm-up of 200.

Throughput is create -> long-poll -> decide -> released -> consume. Each agent holds two
keep-alive connections with a few lines of raw HTTP/1.1 (`_KeepAlive`): its own, for create,
long-poll and consume as the gate's prompter sends them on one client, and a human's, for the
decision. The driver shares the machine's 2 cores with the server, so it is kept cheap and
its own CPU is reported beside the server's (from /proc), with the rest of the machine's CPU
(the neighbours') and the load average: the server's CPU per approval is the figure that does
not move with the neighbours.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

POLL_PERIOD = 1.0
# Concurrent agents in the throughput run: enough to keep one server process busy (8 and 32
# gave the same approvals/s here), few enough that the release latency measured under that
# load is the server's and not a queue of 32 callers' requests ahead of each decide.
THROUGHPUT_AGENTS = 16


@contextmanager
def _server(data_dir: str, database_url: str | None = None) -> Iterator[tuple[str, int]]:
    env = {k: v for k, v in os.environ.items() if k != "ASKGATE_DATABASE_URL"}
    if database_url:
        env["ASKGATE_DATABASE_URL"] = database_url
    argv = [sys.executable, "-m", "askgate", "serve", "--port", "0", "--data-dir", data_dir]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if "http://" not in line:
        proc.kill()
        raise RuntimeError(f"the server did not start: {line!r}")
    url = "http://" + line.split("http://", 1)[1].split("/", 1)[0]
    try:
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _token(data_dir: str, database_url: str | None = None) -> str:
    name = f"bench-{os.urandom(4).hex()}"  # a shared PostgreSQL may hold earlier runs' users
    env = {k: v for k, v in os.environ.items() if k != "ASKGATE_DATABASE_URL"}
    if database_url:
        env["ASKGATE_DATABASE_URL"] = database_url
    argv = [sys.executable, "-m", "askgate", "user", "add", name, "--data-dir", data_dir]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip().splitlines()[-1]


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def _parked(client: httpx.AsyncClient, url: str, count: int) -> None:
    """Setup, not measurement: until the server reports `count` parked long-polls."""
    deadline = time.monotonic() + 120
    while (await client.get(f"{url}/healthz")).json().get("waiting", 0) < count:
        if time.monotonic() > deadline:
            raise RuntimeError("long-polls never parked")
        await asyncio.sleep(0.005)


async def _one_release(
    client: httpx.AsyncClient, wait_url: str, decide_url: str, token: str
) -> int:
    approval = (await client.post(f"{wait_url}/v1/approvals", json=_body())).json()
    path = f"/v1/approvals/{approval['id']}"
    waiter = asyncio.create_task(_raw_get(wait_url, f"{path}?wait=30", token))
    await _parked(client, wait_url, 1)
    started = time.perf_counter_ns()
    decided = asyncio.create_task(
        _raw_get(decide_url, f"{path}/decide", token, b'{"decision":"allow"}')
    )
    answer = await waiter
    released = time.perf_counter_ns()
    await decided
    assert b'"status":"allow"' in answer
    return released - started


async def _one_polled(client: httpx.AsyncClient, url: str) -> int:
    """The peer: a client that re-reads the approval every second (HumanLayer polls 1-3 s)."""
    approval = (await client.post(f"{url}/v1/approvals", json=_body())).json()
    path = f"{url}/v1/approvals/{approval['id']}"
    decided_at: list[int] = []

    async def human() -> None:
        await asyncio.sleep(random.uniform(0, POLL_PERIOD))  # the human answers at any moment
        decided_at.append(time.perf_counter_ns())
        await client.post(f"{path}/decide", json={"decision": "allow"})

    task = asyncio.create_task(human())
    while True:
        if (await client.get(path)).json()["status"] == "allow" and decided_at:
            released = time.perf_counter_ns()
            break
        await asyncio.sleep(POLL_PERIOD)
    await task
    return released - decided_at[0]


async def _raw_get(url: str, path: str, token: str, body: bytes | None = None) -> bytes:
    """One HTTP/1.1 request (GET, or POST with `body`) on its own connection, read to the
    end: a client with no pool, so the numbers measure the server rather than a client's
    connection pool (httpx's costs milliseconds per request with hundreds in flight)."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    method = "GET" if body is None else "POST"
    extra = (
        "" if body is None else f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    )
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        f"{extra}Connection: close\r\n\r\n".encode()
        + (body or b"")
    )
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


def _body() -> dict[str, Any]:
    # as the gate's prompter registers a call: with how long it waits
    return {"tool": "Bash", "input": {"command": f"make {random.random()}"}, "wait": 110}


def _client(token: str, connections: int = 100) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
    )


async def release(n: int, url: str, token: str) -> dict[str, Any]:
    async with _client(token) as client:
        ours = [await _one_release(client, url, url, token) for _ in range(n)]
        polled = [await _one_polled(client, url) for _ in range(max(1, n // 10))]
    return {"long_poll_ns": ours, "polling_ns": polled}


async def pg_release(n: int, data_dir: str, database_url: str) -> dict[str, Any]:
    token = _token(data_dir, database_url)
    with (
        _server(data_dir, database_url) as (first, _a),
        _server(data_dir, database_url) as (second, _b),
    ):
        async with _client(token) as client:
            ours = [await _one_release(client, first, second, token) for _ in range(n)]
    return {"long_poll_ns": ours}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of every thread of `pid` (the server), from /proc."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _machine_busy_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, every core, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick


class _KeepAlive:
    """One HTTP/1.1 keep-alive connection with the few lines of parsing the server's answers
    need (Content-Length bodies): the cheapest client asyncio allows, so that on a shared
    2-core machine the driver takes as little as possible from the server it measures."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes):
        self._reader, self._writer, self._head = reader, writer, head

    @classmethod
    async def open(cls, url: str, token: str) -> _KeepAlive:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = f"Host: {host}\r\nAuthorization: Bearer {token}\r\n".encode()
        return cls(reader, writer, head)

    def send(self, path: str, body: bytes | None = None) -> None:
        if body is None:
            line = b"GET " + path.encode() + b" HTTP/1.1\r\n" + self._head + b"\r\n"
        else:
            line = (
                b"POST "
                + path.encode()
                + b" HTTP/1.1\r\n"
                + self._head
                + b"Content-Type: application/json\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
        self._writer.write(line)

    async def answer(self) -> tuple[int, bytes]:
        head = await self._reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        at = head.lower().find(b"content-length:")
        length = int(head[at + 15 : head.index(b"\r\n", at)]) if at >= 0 else 0
        return status, await self._reader.readexactly(length)

    async def call(self, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        self.send(path, body)
        return await self.answer()

    def close(self) -> None:
        self._writer.close()


_ID = re.compile(rb'"id":"([^"]+)"')


async def throughput(
    n: int, url: str, token: str, pid: int | None = None, workers: int = 32
) -> dict[str, Any]:
    """`workers` agents, each with its keep-alive connection (create, long-poll, consume, as
    the gate's prompter does on one client) and a human's (decide): create -> long-poll sent
    -> decide -> the long-poll's answer -> consume. Release = decide sent -> answer read."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)
    released: list[int] = []
    decide = b'{"decision":"allow"}'

    async def worker() -> None:
        agent = await _KeepAlive.open(url, token)
        human = await _KeepAlive.open(url, token)
        try:
            while not queue.empty():
                queue.get_nowait()
                body = b'{"tool":"Bash","input":{"command":"make %d"},"wait":110}' % (
                    random.getrandbits(60)
                )
                status, created = await agent.call("/v1/approvals", body)
                match = _ID.search(created)
                assert status == 201 and match is not None, (status, created[:200])
                path = "/v1/approvals/" + match.group(1).decode()
                agent.send(path + "?wait=30")
                started = time.perf_counter_ns()
                status, _ = await human.call(path + "/decide", decide)
                assert status == 200
                status, answer = await agent.answer()
                released.append(time.perf_counter_ns() - started)
                assert b'"status":"allow"' in answer
                # the call that executes takes its allow, once (as the gate's prompter does)
                status, taken = await agent.call(path + "/consume", b"")
                assert status == 200 and b'"consumed":true' in taken
        finally:
            agent.close()
            human.close()

    cpu_before = _cpu_seconds(pid) if pid else 0.0
    own_before = time.process_time()
    busy_before, total_before = _machine_busy_s()
    load_before = os.getloadavg()
    started = time.perf_counter_ns()
    await asyncio.gather(*[worker() for _ in range(workers)])
    elapsed = time.perf_counter_ns() - started
    # The server's own CPU per approval: on a shared 2-core machine wall-clock throughput
    # moves with the neighbours' load; this figure does not.
    cpu = (_cpu_seconds(pid) - cpu_before) if pid else 0.0
    client = time.process_time() - own_before
    busy_after, total_after = _machine_busy_s()
    return {
        "approvals": n,
        "workers": workers,
        "elapsed_ns": elapsed,
        "server_cpu_s": cpu,
        "client_cpu_s": client,
        # every process on the machine but the server and this driver (the neighbours)
        "others_cpu_s": max(0.0, busy_after - busy_before - cpu - client),
        "machine_cpu_s": total_after - total_before,
        "loadavg_before": load_before[0],
        "loadavg_after": os.getloadavg()[0],
        "release_ns": released,
    }


async def waiters(n: int, url: str, pid: int, token: str) -> dict[str, Any]:
    async with _client(token, 10) as client:
        created = (await client.post(f"{url}/v1/approvals", json=_body())).json()
        path = f"/v1/approvals/{created['id']}"
        before = _rss_kib(pid)
        polls = [asyncio.create_task(_raw_get(url, f"{path}?wait=110", token)) for _ in range(n)]
        await _parked(client, url, n)
        during = _rss_kib(pid)
        started = time.perf_counter_ns()
        await client.post(f"{url}{path}/decide", json={"decision": "allow"})
        answers = await asyncio.gather(*polls)
        released = time.perf_counter_ns() - started
        assert all(b'"status":"allow"' in a for a in answers)
    return {
        "waiters": n,
        "rss_before_kib": before,
        "rss_during_kib": during,
        "release_ns": released,
    }


async def sqlite_all(sizes: list[int], data_dir: str) -> dict[str, Any]:
    """release, throughput and waiters (sizes in that order) on one SQLite server."""
    token = _token(data_dir)
    with _server(data_dir) as (url, pid):
        return {
            "release": await release(sizes[0], url, token),
            "throughput": await throughput(sizes[1], url, token, pid, THROUGHPUT_AGENTS),
            "waiters": await waiters(sizes[2], url, pid, token),
        }


async def throughput_only(
    n: int, workers: int, data_dir: str, database_url: str | None
) -> dict[str, Any]:
    """Throughput alone, on SQLite or (with a URL) PostgreSQL, after a short warm-up."""
    token = _token(data_dir, database_url)
    with _server(data_dir, database_url) as (url, pid):
        await throughput(min(200, n), url, token, pid, workers)
        return await throughput(n, url, token, pid, workers)


def main(argv: list[str]) -> int:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 5,000 sockets each side
    what, sizes = argv[0], [int(x) for x in argv[1].split(",")]
    data_dir = tempfile.mkdtemp(prefix="askgate-bench-")
    try:
        if what == "pg-release":
            result = asyncio.run(pg_release(sizes[0], data_dir, argv[2]))
        elif what == "throughput":
            url = argv[2] if len(argv) > 2 else None
            workers = sizes[1] if len(sizes) > 1 else 32
            result = asyncio.run(throughput_only(sizes[0], workers, data_dir, url))
        elif what == "sqlite":
            result = asyncio.run(sqlite_all(sizes, data_dir))
        else:
            print(f"unknown measurement {what!r}", file=sys.stderr)
            return 2
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
