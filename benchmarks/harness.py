"""Timing, statistics, tables and JSON shared by every benchmark area.

Every number that reaches a table is computed here from samples taken in the
current run: there is no way to put a constant into a row.
"""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TypeVar

import msgspec
from rich.console import Console
from rich.table import Table

NOT_BUILT = "not built yet"

K = TypeVar("K")


class Stats(msgspec.Struct, frozen=True):
    """Summary of timing samples, all in nanoseconds."""

    n: int
    median_ns: float
    p99_ns: float
    min_ns: float
    max_ns: float
    mean_ns: float

    @classmethod
    def of(cls, samples_ns: Sequence[float]) -> Stats:
        if not samples_ns:
            raise ValueError("no samples")
        ordered = sorted(samples_ns)
        n = len(ordered)
        mid = n // 2
        median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        # Nearest-rank p99: with fewer than 100 samples this is the maximum, which
        # the table makes visible through the n column.
        p99 = ordered[min(n - 1, max(0, -(-99 * n // 100) - 1))]
        return cls(
            n=n,
            median_ns=float(median),
            p99_ns=float(p99),
            min_ns=float(ordered[0]),
            max_ns=float(ordered[-1]),
            mean_ns=sum(ordered) / n,
        )


class Figure(msgspec.Struct, frozen=True, kw_only=True):
    """One contender's measurement of one row, or why there is none."""

    name: str
    stats: Stats | None = None
    note: str = ""
    # For throughput rows: what one timed operation processed.
    items: int | None = None
    item_name: str = "items"
    bytes: int | None = None

    @property
    def rate(self) -> str:
        if self.stats is None or not self.items:
            return ""
        seconds = self.stats.median_ns / 1e9
        text = f"{self.items / seconds:,.0f} {self.item_name}/s"
        if self.bytes:
            text += f", {self.bytes / seconds / 1e6:,.1f} MB/s"
        return text


class Row(msgspec.Struct, frozen=True, kw_only=True):
    measured: str
    ours: Figure
    peers: tuple[Figure, ...] = ()
    target: str = ""


class AreaReport(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    title: str
    status: str  # "ok" | "partial" | "not built yet" | "error"
    rows: tuple[Row, ...] = ()
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """How hard to sample one measurement; `--quick` shrinks every field."""

    warmup: int
    min_samples: int
    max_samples: int
    seconds: float


def ratio(peer: Figure, ours: Figure) -> float | None:
    if peer.stats is None or ours.stats is None or ours.stats.median_ns <= 0:
        return None
    return peer.stats.median_ns / ours.stats.median_ns


# --- measuring -------------------------------------------------------------------------


def _collect(call: Callable[[int], object], first: int, budget: Budget) -> list[int]:
    samples: list[int] = []
    clock = time.perf_counter_ns
    gc.collect()
    deadline = clock() + int(budget.seconds * 1e9)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(first, first + budget.max_samples):
            start = clock()
            call(i)
            end = clock()
            samples.append(end - start)
            if end > deadline and len(samples) >= budget.min_samples:
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    return samples


def sample_calls(call: Callable[[int], object], budget: Budget) -> Stats:
    """Time `call(i)` once per sample; `i` lets the caller feed a fresh input each time.

    Warm-up calls use indices after the measured ones so that no measured input has
    been seen before (a result cache cannot flatter the numbers). The garbage
    collector is paused while sampling, as `timeit` does, so p99 shows the code and
    not a collection that some earlier allocation triggered.
    """
    for i in range(budget.warmup):
        call(budget.max_samples + i)
    return Stats.of(_collect(call, 0, budget))


def sample_interleaved(
    contenders: Mapping[K, tuple[Callable[[int], object], Budget]], rounds: int
) -> dict[K, Stats]:
    """`sample_calls` for several contenders at once, taking turns in `rounds` slices of
    each one's budget, so a change in machine load during the run (a shared CI box)
    lands on all of them alike instead of skewing their ratios. Indices stay distinct
    across slices: every sample still gets an input of its own."""
    for call, budget in contenders.values():
        for i in range(budget.warmup):
            call(budget.max_samples + i)
    samples: dict[K, list[int]] = {key: [] for key in contenders}
    for r in range(rounds):
        for key, (call, budget) in contenders.items():
            per = budget.max_samples // rounds
            if per == 0:
                continue
            part = Budget(
                warmup=0,
                min_samples=min(per, -(-budget.min_samples // rounds)),
                max_samples=per,
                seconds=budget.seconds / rounds,
            )
            samples[key] += _collect(call, r * per, part)
    return {key: Stats.of(v) for key, v in samples.items()}


# --- a stdio proxy against its bare child (what `askgate mcp` and `askgate acp` add) ----


def importable(module: str) -> bool:
    """Whether `module` is built (an area that needs it reports NOT_BUILT otherwise)."""
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def not_built(name: str, title: str, measured: str, ours: str, started: float) -> AreaReport:
    return AreaReport(
        name=name,
        title=title,
        status=NOT_BUILT,
        rows=(Row(measured=measured, ours=Figure(name=ours, note=NOT_BUILT)),),
        elapsed_s=time.perf_counter() - started,
    )


def round_trip_budget(quick: bool) -> Budget:
    """The sampling budget of one in-process round trip over a pipe."""
    if quick:
        return Budget(warmup=5, min_samples=30, max_samples=60, seconds=1.0)
    return Budget(warmup=50, min_samples=1000, max_samples=4000, seconds=10.0)


def bench_env(tmp: str, **extra: str) -> dict[str, str]:
    """The environment of a benchmark's askgate child: HOME and XDG dirs in `tmp`, no
    managed policy."""
    return {
        **os.environ,
        "HOME": tmp,
        "XDG_STATE_HOME": tmp,
        "XDG_CONFIG_HOME": tmp,
        "ASKGATE_MANAGED_POLICY": os.path.join(tmp, "none.toml"),
        **extra,
    }


class LinePeer:
    """A child spoken to one line at a time over its stdin and stdout."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> None:
        self.argv = list(argv)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    def exchange(self, line: bytes) -> bytes:
        self.stdin.write(line)
        return self.stdout.readline()

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def proxy_overhead(
    direct: Callable[[], LinePeer],
    proxied: Callable[[], LinePeer],
    call: Callable[[LinePeer, int], object],
    budget: Budget,
) -> tuple[Stats, Stats]:
    """(through the proxy, direct): `call(peer, i)` timed on both peers, started by
    `direct()` and `proxied()`, taking turns (`sample_interleaved`); both are closed."""
    peers: list[LinePeer] = []
    try:
        peers.append(direct())
        peers.append(proxied())
        bare, proxy = peers
        stats = sample_interleaved(
            {
                "proxy": (lambda i: call(proxy, i), budget),
                "direct": (lambda i: call(bare, i), budget),
            },
            rounds=5,
        )
    finally:
        for peer in peers:
            peer.close()
    return stats["proxy"], stats["direct"]


class ProcessFailed(RuntimeError):
    pass


def run_process(
    argv: Sequence[str],
    *,
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = 30.0,
) -> subprocess.CompletedProcess[bytes]:
    """Run a child with a hard timeout; never hangs the suite."""
    return subprocess.run(
        list(argv),
        input=stdin,
        capture_output=True,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def sample_process(
    argv: Sequence[str],
    *,
    runs: int,
    warmup: int = 1,
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = 30.0,
    check: Callable[[subprocess.CompletedProcess[bytes]], str | None] | None = None,
) -> Stats:
    """Whole-process wall-clock time of `argv`, `runs` times after `warmup` runs.

    `check` returns an error text when the output is not the expected decision, so
    a fast wrong answer can never be reported as a timing.
    """
    samples: list[int] = []
    for i in range(warmup + runs):
        start = time.perf_counter_ns()
        done = run_process(argv, stdin=stdin, env=env, cwd=cwd, timeout=timeout)
        elapsed = time.perf_counter_ns() - start
        problem = check(done) if check is not None else None
        if problem is None and check is None and done.returncode != 0:
            problem = f"exit {done.returncode}"
        if problem is not None:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            raise ProcessFailed(f"{argv[0]}: {problem}" + (f" ({tail[0]})" if tail else ""))
        if i >= warmup:
            samples.append(elapsed)
    return Stats.of(samples)


# --- describing the run ------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, object]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "cpu": _cpu_model(),
        "memory_gb": _memory_gb(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "versions": {
            d: _version(d)
            for d in ("askgate", "cedarpy", "casbin", "tree-sitter", "tree-sitter-bash", "msgspec")
        },
    }


# --- presenting ----------------------------------------------------------------------------


def fmt_ns(ns: float) -> str:
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.1f} µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.2f} ms"
    return f"{ns / 1_000_000_000:.2f} s"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}×" if value >= 10 else f"{value:.2f}×"


def _figure_cells(fig: Figure) -> tuple[str, str, str]:
    if fig.stats is None:
        return (fig.note or NOT_BUILT, "", "")
    return (fmt_ns(fig.stats.median_ns), fmt_ns(fig.stats.p99_ns), str(fig.stats.n))


def _peer_name(fig: Figure) -> str:
    # A measured figure's note qualifies what was measured; it goes with the name.
    return f"{fig.name} ({fig.note})" if fig.stats is not None and fig.note else fig.name


def header(report: AreaReport) -> str:
    """The line every area prints first; the smoke test looks for it."""
    return f"{report.name}: {report.title}"


def render(report: AreaReport, console: Console) -> None:
    with_rates = any(f.items for row in report.rows for f in (row.ours, *row.peers))
    with_targets = any(row.target for row in report.rows)
    table = Table(title=header(report), title_justify="left", show_lines=False)
    table.add_column("measured")
    table.add_column("askgate median", justify="right")
    table.add_column("p99", justify="right")
    table.add_column("n", justify="right")
    if with_rates:
        table.add_column("askgate rate", justify="right")
    table.add_column("peer")
    table.add_column("peer median", justify="right")
    table.add_column("peer p99", justify="right")
    table.add_column("peer n", justify="right")
    if with_rates:
        table.add_column("peer rate", justify="right")
    table.add_column("peer ÷ askgate", justify="right")
    if with_targets:
        table.add_column("target")
    for row in report.rows:
        peers = row.peers or (Figure(name="-", note="-"),)
        for k, peer in enumerate(peers):
            first = k == 0
            ours = _figure_cells(row.ours) if first else ("", "", "")
            cells = [row.measured if first else "", *ours]
            if with_rates:
                cells.append(row.ours.rate if first else "")
            peer_cells = _figure_cells(peer) if peer.name != "-" else ("", "", "")
            cells += [_peer_name(peer) if peer.name != "-" else "", *peer_cells]
            if with_rates:
                cells.append(peer.rate)
            cells.append(fmt_ratio(ratio(peer, row.ours)) if peer.name != "-" else "")
            if with_targets:
                cells.append(row.target if first else "")
            table.add_row(*cells)
    if not report.rows:
        console.print(f"[bold]{header(report)}[/bold]")
        console.print(f"  {report.status}")
    else:
        console.print(table)
    for note in report.notes:
        console.print(f"  • {note}", highlight=False)
    console.print(f"  ({report.status}, {report.elapsed_s:.1f} s)", style="dim")
    console.print()


def to_json(run: Mapping[str, object]) -> bytes:
    """JSON for machines: every row keeps its full statistics and derived ratios."""

    def enc(obj: object) -> object:
        raise NotImplementedError(type(obj))

    def row_json(row: Row) -> dict[str, object]:
        data = msgspec.to_builtins(row)
        assert isinstance(data, dict)
        data["ratios"] = {p.name: ratio(p, row.ours) for p in row.peers}
        data["rates"] = {f.name: f.rate for f in (row.ours, *row.peers) if f.rate}
        return data

    areas = run.get("areas", [])
    assert isinstance(areas, list)
    body = dict(run)
    body["areas"] = [
        {**msgspec.to_builtins(a), "rows": [row_json(r) for r in a.rows]} for a in areas
    ]
    return msgspec.json.format(msgspec.json.encode(body, enc_hook=enc), indent=2) + b"\n"


def to_markdown(
    reports: Sequence[AreaReport], info: Mapping[str, object], quick: bool, started: str
) -> str:
    """The same tables as GitHub markdown, for pasting into docs/performance.md."""
    lines = [
        f"Run {started} on {info['cores']} cores ({info['cpu']}), Python {info['python']} "
        f"({info['implementation']}), {info['platform']}" + (" — quick run" if quick else ""),
        "",
    ]
    for report in reports:
        lines += [f"**{header(report)}** ({report.status})", ""]
        if report.rows:
            lines += [
                "| measured | askgate median | p99 | n | peer | peer median | peer p99 | peer n "
                "| peer ÷ askgate |",
                "|---|--:|--:|--:|---|--:|--:|--:|--:|",
            ]
        for row in report.rows:
            for k, peer in enumerate(row.peers or (Figure(name="-", note="-"),)):
                ours = _figure_cells(row.ours) if k == 0 else ("", "", "")
                peer_cells = _figure_cells(peer) if peer.name != "-" else ("", "", "")
                rate_ours = f" ({row.ours.rate})" if k == 0 and row.ours.rate else ""
                rate_peer = f" ({peer.rate})" if peer.rate else ""
                cells = [
                    row.measured if k == 0 else "",
                    ours[0] + rate_ours,
                    *ours[1:],
                    _peer_name(peer) if peer.name != "-" else "",
                    peer_cells[0] + rate_peer,
                    *peer_cells[1:],
                    fmt_ratio(ratio(peer, row.ours)) if peer.name != "-" else "",
                ]
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
        lines += [f"- {note}" for note in report.notes]
        if report.notes:
            lines.append("")
    return "\n".join(lines)
