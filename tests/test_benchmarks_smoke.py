"""`python -m benchmarks --quick` runs end to end as a real process: exit 0, one table
header per area, a JSON file with every area. Timings are printed, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AREAS = (
    "policy",
    "hook",
    "approval",
    "forwarding",
    "rpc_codec",
    "acp",
    "mcp",
    "sandbox",
    "ask_share",
    "frameworks",
)


def test_quick_run_prints_every_area_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,  # every area once; the framework imports alone take seconds
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for area in AREAS:
        assert f"{area}: " in done.stdout, f"no table header for {area}\n{done.stdout[-3000:]}"
    assert "Traceback" not in done.stdout + done.stderr

    data = json.loads(out.read_text())
    assert [a["name"] for a in data["areas"]] == list(AREAS)
    assert data["quick"] is True
    assert data["machine"]["cores"] >= 1
    assert data["machine"]["python"] == ".".join(map(str, sys.version_info[:3]))
    for area in data["areas"]:
        assert area["status"] in {"ok", "partial", "not built yet"}, area
        for row in area["rows"]:
            for fig in (row["ours"], *row["peers"]):
                # A figure is either measured now (with its sample count) or says why not.
                assert (fig["stats"] is not None and fig["stats"]["n"] >= 1) or fig["note"], fig


def test_single_area_runs_alone(tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--area", "approval", "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "approval: " in done.stdout
    assert "policy: " not in done.stdout
    assert [a["name"] for a in json.loads(out.read_text())["areas"]] == ["approval"]
