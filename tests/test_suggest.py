"""`askgate suggest`: rules proposed from approved asks, never lifting a deny or a floor."""

from __future__ import annotations

import json
from pathlib import Path

from askgate.policy.model import Surface
from askgate.profiles.policy_edit import with_rules
from cli_harness import Cli


def _record(units: list[tuple[str, str]], *, resolution: str = "user_approved") -> str:
    return json.dumps(
        {
            "timestamp": "2026-11-30T10:00:00.000+00:00",
            "event": "decision",
            "surface": "bash",
            "value": " && ".join(command for command, _ in units),
            "resolution": resolution,
            "policy_action": "ask",
            "action": "allow",
            "units": [{"command": command, "action": action} for command, action in units],
        }
    )


def _log(cli: Cli, lines: list[str]) -> Path:
    return cli.write("review.jsonl", "\n".join(lines) + "\n")


def _suggest(cli: Cli, log: Path, *extra: str):
    return cli.run("suggest", "--log", str(log), "--since", "2026-11-01", *extra)


def test_frequent_approvals_become_proposals_with_counts(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    log = _log(
        cli,
        [_record([("make test", "ask")])] * 4
        + [_record([("git fetch origin", "ask"), ("git status", "allow")])] * 3
        + [_record([("cargo run", "ask")])] * 2
        + [_record([("make lint", "ask")], resolution="user_denied")] * 5,
    )
    result = _suggest(cli, log, "--json")
    assert result.returncode == 0, result
    proposals = {p["pattern"]: p["count"] for p in result.json()["proposals"]}
    assert proposals == {"make *": 4, "git fetch *": 3}, "denials and rare ones do not count"
    text = _suggest(cli, log)
    assert 'approved 4x: bash "make *" -> allow' in text.stdout


def test_never_proposes_what_lifts_a_deny_covers_a_floor_or_is_unsafe(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.user_file.parent.mkdir(parents=True)
    cli.user_file.write_text('[bash]\n"curl *" = "deny"\n')
    log = _log(
        cli,
        [_record([("curl -s https://x", "ask")])] * 3  # a deny now: proposal would lift it
        + [_record([("bash x.sh", "ask")])] * 3  # an interpreter: no safe pattern
        + [_record([("sudo make install", "ask")])] * 3  # a wrapper: no safe pattern
        + [_record([("cat notes.txt", "ask")])] * 3,
    )
    # (In a project: the test's own directory holds HOME, and a directory above HOME is
    # no project at all, where `cat notes.txt` would read outside any project.)
    result = _suggest(cli, log, "--json", "--cwd", str(cli.project()))
    assert result.returncode == 0, result
    report = result.json()
    assert {p["pattern"] for p in report["proposals"]} == {"cat *"}
    rejected = {r["pattern"]: r["why"] for r in report["rejected"]}
    assert "would lift the deny" in rejected["curl *"]


def test_a_floored_approval_is_not_proposed(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.user_file.parent.mkdir(parents=True)
    cli.user_file.write_text('[read]\n"/etc/**" = "ask"\n')
    log = _log(cli, [_record([("cat /etc/hosts", "ask")])] * 3)
    report = _suggest(cli, log, "--json").json()
    assert report["proposals"] == []
    assert "would not allow" in report["rejected"][0]["why"]


def test_write_adds_the_rules_to_the_user_file_and_the_result_loads(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.user_file.parent.mkdir(parents=True)
    cli.user_file.write_text(
        'default = "ask"\n\n[bash]\n"ls" = "allow"\n\n[read]\n"~/x" = "deny"\n'
    )
    log = _log(cli, [_record([("make test", "ask")])] * 3)
    result = _suggest(cli, log, "--write", "--yes")
    assert result.returncode == 0, result
    text = cli.user_file.read_text()
    assert '"make *" = "allow"' in text.split("[read]")[0], "inside the [bash] table"
    assert cli.run("check", "bash", "make test").stdout.startswith("allow")
    again = _suggest(cli, log, "--write", "--yes")
    assert again.returncode == 0 and cli.user_file.read_text().count('"make *"') == 1


def test_write_without_yes_and_without_a_terminal_adds_nothing(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    log = _log(cli, [_record([("make test", "ask")])] * 3)
    result = _suggest(cli, log, "--write")
    assert result.returncode == 0 and "nothing added" in result.stdout
    assert not cli.user_file.exists()


def test_missing_empty_and_corrupt_logs_say_so_and_exit_1(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    missing = cli.run("suggest", "--log", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 1 and "no review log" in missing.stderr
    empty = cli.run("suggest", "--log", str(cli.write("empty.jsonl", "")))
    assert empty.returncode == 1 and "is empty" in empty.stderr
    corrupt = cli.run("suggest", "--log", str(cli.write("bad.jsonl", "{x\n[1,\n")))
    assert corrupt.returncode == 1 and "corrupt" in corrupt.stderr
    partly = _log(cli, ["{broken", _record([("make test", "ask")])])
    result = _suggest(cli, partly)
    assert result.returncode == 0 and "skipped 1 unreadable lines" in result.stderr
    for bad in (["--since", "yesterday"], ["--min", "0"]):
        usage = cli.run("suggest", "--log", str(partly), *bad)
        assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_with_rules_inserts_under_the_right_table() -> None:
    text, added = with_rules(
        '[bash]\n"ls" = "allow"\n[write]\n"x" = "deny"\n',
        [
            (Surface.BASH, "make *"),
            (Surface.MCP, "github:*"),
            (Surface.BASH, "ls"),
        ],
    )
    assert added == 2
    assert text.index('"make *"') < text.index("[write]")
    assert text.rstrip().endswith('[mcp]\n"github:*" = "allow"  # added by askgate suggest')
