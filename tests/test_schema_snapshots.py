"""`askgate schema policy | events | review-log` are contracts: their output is compared
with the snapshot in tests/data/snapshots/. A deliberate change updates the snapshot
(`ASKGATE_UPDATE_SNAPSHOTS=1 pytest tests/test_schema_snapshots.py`) in the same commit,
so the diff shows what changed for users."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).parent / "data" / "snapshots"
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.mark.parametrize("which", ["policy", "events", "review-log"])
def test_the_schema_matches_its_snapshot(which: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "askgate", "schema", which],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)  # valid JSON
    snapshot = SNAPSHOTS / f"schema-{which}.json"
    if os.environ.get("ASKGATE_UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(done.stdout)
    assert snapshot.is_file(), f"no snapshot: run with ASKGATE_UPDATE_SNAPSHOTS=1 ({snapshot})"
    assert done.stdout == snapshot.read_text(), (
        f"`askgate schema {which}` changed: if on purpose, update {snapshot.name}"
        " with ASKGATE_UPDATE_SNAPSHOTS=1"
    )


def test_a_review_log_line_validates_against_the_review_log_schema(tmp_path: Path) -> None:
    """The schema describes what the log really holds: a line the hook wrote is an
    instance of one of its record types (checked with the record types themselves)."""
    import msgspec

    from askgate.audit import ReviewRecord, review_log_json_schema

    schema = review_log_json_schema()
    assert {"DecisionRecord", "DelegatedRecord", "RpcPromptRecord"} <= set(schema["$defs"])
    for name in ("DecisionRecord", "DelegatedRecord", "RpcPromptRecord"):
        assert "version" in schema["$defs"][name]["properties"]
    line = (
        b'{"event":"ask_delegated","version":1,"timestamp":"t","delegated_to":"codex",'
        b'"request_id":"r","tool":"Bash","surface":"bash","value":"ls","policy_action":"ask",'
        b'"reason":"x","agent":null,"session":null,"input":{},"client":"codex"}'
    )
    msgspec.json.decode(line, type=ReviewRecord)
