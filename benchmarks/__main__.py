"""`python -m benchmarks [--quick] [--area NAME] [--json PATH]` from the repository root."""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from benchmarks import AREAS
from benchmarks.harness import AreaReport, machine, render, to_json, to_markdown

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="askgate side by side with its peers; prints one table per area.",
    )
    parser.add_argument("--quick", action="store_true", help="few samples (CI smoke, < 10 s)")
    parser.add_argument(
        "--area", action="append", choices=[a.NAME for a in AREAS], help="run only this area"
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write results")
    parser.add_argument(
        "--markdown", type=Path, help="also write the tables as markdown (for docs/performance.md)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    # A fixed width keeps CI logs readable; a terminal uses its own.
    console = Console(width=None if sys.stdout.isatty() else 200)
    info = machine()
    console.print(
        f"[bold]askgate benchmarks[/bold]{' (quick)' if args.quick else ''}: "
        f"{info['cores']} cores, {info['cpu']}, Python {info['python']} "
        f"({info['implementation']}), {info['platform']}",
        highlight=False,
    )
    console.print()
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    reports: list[AreaReport] = []
    failed = False
    for area in AREAS:
        if args.area and area.NAME not in args.area:
            continue
        begun = time.perf_counter()
        try:
            report = area.run(args.quick)
        except Exception as exc:  # a broken benchmark must not hide the other areas
            failed = True
            last = traceback.extract_tb(exc.__traceback__)[-1]
            report = AreaReport(
                name=area.NAME,
                title=area.TITLE,
                status="error",
                notes=(f"{type(exc).__name__}: {exc} (at {last.filename}:{last.lineno})",),
                elapsed_s=time.perf_counter() - begun,
            )
        render(report, console)
        reports.append(report)
    total = time.perf_counter() - started
    console.print(f"total {total:.1f} s", style="dim")

    run = {
        "started": stamp,
        "quick": args.quick,
        "total_s": round(total, 3),
        "machine": info,
        "areas": reports,
    }
    try:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_bytes(to_json(run))
        console.print(f"results written to {args.json}", style="dim", highlight=False)
        if args.markdown is not None:
            args.markdown.parent.mkdir(parents=True, exist_ok=True)
            args.markdown.write_text(
                to_markdown(reports, info, args.quick, stamp), encoding="utf-8"
            )
    except OSError as exc:
        console.print(f"could not write {args.json}: {exc}", highlight=False)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
