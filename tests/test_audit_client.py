"""The review log's `client` field: stamped on every record by an AuditLog made for one client."""

from __future__ import annotations

import json
from pathlib import Path

from askgate.audit import AuditLog


def test_client_is_added_to_every_record(tmp_path: Path) -> None:
    log = AuditLog(str(tmp_path / "r.jsonl"), client="acp:gemini")
    assert log.write({"event": "decision"})
    assert log.write({"event": "tool_call_seen", "client": "explicit"})
    records = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["client"] for r in records] == ["acp:gemini", "explicit"]


def test_no_client_no_field(tmp_path: Path) -> None:
    log = AuditLog(str(tmp_path / "r.jsonl"))
    assert log.write({"event": "decision"})
    assert "client" not in json.loads((tmp_path / "r.jsonl").read_text())


def test_client_is_bounded(tmp_path: Path) -> None:
    log = AuditLog(str(tmp_path / "r.jsonl"), client="x" * 5000)
    assert log.write({"event": "decision"})
    assert len(json.loads((tmp_path / "r.jsonl").read_text())["client"]) < 300
