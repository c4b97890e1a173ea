"""askgate.audit: the review log (one JSON object per line, private, bounded, masked)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import msgspec
import pytest

from askgate.audit import (
    MAX_FIELD,
    MAX_ITEMS,
    REDACTED,
    AuditLog,
    bound,
    default_log_path,
    delegated_record,
    mask_text,
    record_for,
    sanitize,
)
from askgate.outcome import Outcome, Pending, Resolution, ToolRequest
from askgate.policy.model import Action, Decision, Origin, RuleRef, Surface

RULE = RuleRef(
    surface=Surface.BASH,
    pattern="rm *",
    action=Action.DENY,
    origin=Origin.PROJECT,
    source="/p/.askgate/policy.toml",
    line=7,
)


def denied(value: str = "rm -rf build") -> Outcome:
    decision = Decision(
        action=Action.DENY, reason="no rm", surface=Surface.BASH, value=value, rule=RULE
    )
    return Outcome(
        request_id="req-1",
        action=Action.DENY,
        resolution=Resolution.POLICY_DENY,
        decision=decision,
        reason="no rm",
    )


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_outcome_is_one_json_line_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "review.jsonl"
    log = AuditLog(str(path), client="codex")
    assert log.outcome(denied(), tool="Bash", tool_input={"command": "rm -rf build"}) is True
    assert log.outcome(denied("rm x"), tool="Bash") is True
    first, second = lines(path)
    assert first["event"] == "decision" and first["client"] == "codex"
    assert (first["action"], first["resolution"], first["policy_action"]) == (
        "deny",
        "policy_deny",
        "deny",
    )
    assert first["rule"] == {
        "surface": "bash",
        "pattern": "rm *",
        "action": "deny",
        "origin": "project",
        "source": "/p/.askgate/policy.toml",
        "line": 7,
    }
    assert first["input"] == {"command": "rm -rf build"}
    assert second["value"] == "rm x"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_symlink_in_place_of_the_log_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    target = tmp_path / "bashrc"
    target.write_text("original\n")
    link = tmp_path / "review.jsonl"
    link.symlink_to(target)
    assert AuditLog(str(link)).outcome(denied()) is False
    assert target.read_text() == "original\n"


def test_a_fifo_in_place_of_the_log_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "review.jsonl"
    os.mkfifo(fifo)
    assert AuditLog(str(fifo)).outcome(denied()) is False  # O_NONBLOCK: no reader, ENXIO


def test_a_write_failure_is_reported_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert AuditLog(str(blocker / "review.jsonl")).outcome(denied()) is False


def test_undecodable_text_is_kept_visible(tmp_path: Path) -> None:
    path = tmp_path / "review.jsonl"
    assert AuditLog(str(path)).outcome(denied("cat \udcff")) is True
    assert lines(path)[0]["value"] == "cat \\udcff"


def test_secrets_are_masked_by_key_and_inline() -> None:
    clean = sanitize({"api_key": "k", "headers": {"Authorization": "Bearer abcdef"}, "n": 1})
    assert clean == {"api_key": REDACTED, "headers": {"Authorization": REDACTED}, "n": 1}
    assert mask_text("curl -H 'Authorization: Bearer abcdef123'") == (
        f"curl -H 'Authorization: Bearer {REDACTED}'"
    )
    assert mask_text("deploy --password=hunter22 now") == f"deploy --password={REDACTED} now"
    assert REDACTED in record_for(denied("export API_KEY=abcd1234")).value


def test_everything_is_bounded() -> None:
    assert bound("x" * (MAX_FIELD + 5)) == "x" * MAX_FIELD + "…[+5 chars]"
    wide = sanitize({"list": list(range(MAX_ITEMS + 3))})
    assert wide["list"][-1] == "[+3 items]" and len(wide["list"]) == MAX_ITEMS + 1
    deep: dict = {}
    cursor = deep
    for _ in range(20):
        cursor["d"] = {}
        cursor = cursor["d"]
    assert "[too deep]" in json.dumps(sanitize(deep))
    assert sanitize(object()).startswith("<object object")  # repr, never the object


def test_a_delegated_ask_names_who_was_asked() -> None:
    decision = Decision(
        action=Action.ASK, reason="asks", surface=Surface.BASH, value="git push", rule=None
    )
    request = ToolRequest(
        tool="Bash", input={"command": "git push", "token": "t"}, agent="a", session="s"
    )
    pending = Pending(request_id="r9", request=request, decision=decision)
    record = msgspec.to_builtins(delegated_record(pending, to="claude-code"))
    assert (record["event"], record["delegated_to"], record["policy_action"]) == (
        "ask_delegated",
        "claude-code",
        "ask",
    )
    assert record["input"] == {"command": "git push", "token": REDACTED}
    assert (record["agent"], record["session"]) == ("a", "s")


def test_the_default_path_follows_the_environment(tmp_path: Path) -> None:
    chosen = str(tmp_path / "mine.jsonl")
    assert default_log_path({"ASKGATE_AUDIT_LOG": chosen, "HOME": str(tmp_path)}) == chosen
    state = str(tmp_path / "state")
    default = default_log_path({"XDG_STATE_HOME": state, "HOME": str(tmp_path)})
    assert default == os.path.join(state, "askgate", "review.jsonl")


@pytest.mark.parametrize("relative", ["relative/state", ""])
def test_a_relative_state_home_is_ignored(tmp_path: Path, relative: str) -> None:
    path = default_log_path({"XDG_STATE_HOME": relative, "HOME": str(tmp_path)})
    assert path == os.path.join(str(tmp_path), ".local", "state", "askgate", "review.jsonl")


# --- typed, versioned records (contract: `askgate schema review-log`) ----------------------


def test_every_record_shape_is_typed_versioned_and_round_trips(tmp_path: Path) -> None:
    """Each of the three record shapes is written with `"version": 1` and its `event` tag,
    and every line of the log decodes back into its record type."""
    from askgate.audit import RECORD_VERSION, AuditLog, ReviewRecord, rpc_prompt_record

    decision = Decision(
        action=Action.ASK, reason="asks", surface=Surface.BASH, value="git push", rule=None
    )
    request = ToolRequest(tool="Bash", input={"command": "git push"})
    pending = Pending(request_id="r1", request=request, decision=decision)
    log = AuditLog(str(tmp_path / "review.jsonl"), client="codex")
    assert log.write(record_for(denied("rm -rf x")))
    assert log.write(delegated_record(pending, to="codex"))
    assert log.write(
        rpc_prompt_record(request_id="r2", surface="bash", value="ls", answer="y", approved=True)
    )
    lines = (tmp_path / "review.jsonl").read_bytes().splitlines()
    raw = [json.loads(line) for line in lines]
    assert [r["event"] for r in raw] == ["decision", "ask_delegated", "rpc_prompt"]
    assert {r["version"] for r in raw} == {RECORD_VERSION} and {r["client"] for r in raw} == {
        "codex"
    }
    for line in lines:
        msgspec.json.decode(line, type=ReviewRecord)
