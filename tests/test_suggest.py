"""`askgate suggest`: rules proposed from approved asks, never lifting a deny or a floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askgate.policy.model import Surface
from askgate.profiles.policy_edit import with_rules
from cli_harness import Cli


def _record(
    units: list[tuple[str, str]],
    *,
    resolution: str = "user_approved",
    original: str | None = None,
) -> str:
    value = original or " && ".join(command for command, _ in units)
    return json.dumps(
        {
            "timestamp": "2026-11-30T10:00:00.000+00:00",
            "event": "decision",
            "surface": "bash",
            "value": value[:1000],
            "value_exact": value,
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
        + [_record([("git merge main", "ask"), ("git status", "allow")])] * 3
        + [_record([("cargo run", "ask")])] * 2
        + [_record([("make lint", "ask")], resolution="user_denied")] * 5,
    )
    result = _suggest(cli, log, "--json")
    assert result.returncode == 0, result
    proposals = {p["pattern"]: p["count"] for p in result.json()["proposals"]}
    assert proposals == {"make *": 4, "git merge *": 3}, "denials and rare ones do not count"
    text = _suggest(cli, log)
    assert 'approved 4x: bash "make *" -> allow' in text.stdout


def test_never_proposes_what_lifts_a_deny_covers_a_floor_or_is_unsafe(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.user_file.parent.mkdir(parents=True)
    cli.user_file.write_text('[bash]\n"curl *" = "deny"\n')
    log = _log(
        cli,
        [_record([("wget -q https://x", "ask")])] * 3  # a network tool, no sandbox
        + [_record([("cat notes.txt", "ask")], resolution="user_approved")] * 0
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
    assert rejected["wget *"].startswith("a network tool")


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


def test_a_deny_is_never_lifted_by_a_proposal(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.user_file.parent.mkdir(parents=True)
    cli.user_file.write_text('[bash]\n"make *" = "deny"\n')
    log = _log(cli, [_record([("make test", "ask")])] * 3)
    rejected = {r["pattern"]: r["why"] for r in _suggest(cli, log, "--json").json()["rejected"]}
    assert "would lift the deny" in rejected["make *"]


def test_the_original_request_is_rechecked_not_the_unquoted_unit(tmp_path: Path) -> None:
    """The unit's logged command is unquoted: `grep 'x > ~/.bashrc' f` logs as
    `grep x > ~/.bashrc f`, which re-parses as a write to ~/.bashrc. Re-checking the
    original allows it; the unquoted copy would be wrongly refused (or, the other way
    round, wrongly allowed). (Checked in a project: the harness's own directory holds
    HOME, and an ancestor of HOME is never a project, so there every file is outside.)"""
    cli = Cli(tmp_path)
    project = cli.project("app")
    (project / "notes.txt").write_text("x\n")
    original = "grep 'x > ~/.bashrc' notes.txt"
    log = _log(cli, [_record([("grep x > ~/.bashrc notes.txt", "ask")], original=original)] * 3)
    report = _suggest(cli, log, "--json", "--cwd", str(project)).json()
    assert [p["pattern"] for p in report["proposals"]] == ["grep *"], report


def test_approvals_the_log_did_not_keep_whole_are_skipped(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cut = json.loads(_record([("make test", "ask")]))
    cut["value_exact"] = None  # too long or secret-looking: the logger kept no copy
    old = json.loads(_record([("make test", "ask")]))
    del old["value_exact"]
    old["value"] = "make test && " + "x" * 990 + "…[+500 chars]"
    log = _log(cli, [json.dumps(cut)] * 3 + [json.dumps(old)] * 3)
    result = _suggest(cli, log, "--json")
    assert result.json()["proposals"] == [] and "skipped 6 approvals" in result.stderr


def test_multi_line_bodies_are_never_proposed(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    heredoc = "cat > notes.md << 'EOF'\nhello\nEOF"
    log = _log(cli, [_record([("cat", "ask")], original=heredoc)] * 4)
    result = _suggest(cli, log, "--json")
    assert result.json()["proposals"] == [], result


@pytest.mark.parametrize(
    ("unit", "why"),
    [
        ("curl -s https://api.example.com", "a network tool"),
        ("git fetch origin", "a network tool"),
        ("python3 -c print(1)", "an interpreter running inline code"),
        ("node -e console.log(1)", "an interpreter running inline code"),
        ("pip install requests", "a package install"),
        ("npm install lodash", "a package install"),
        ("cargo install ripgrep", "a package install"),
    ],
)
def test_risky_classes_are_proposed_only_where_the_sandbox_is_required(
    tmp_path: Path, unit: str, why: str
) -> None:
    cli = Cli(tmp_path)
    log = _log(cli, [_record([(unit, "ask")])] * 3)
    report = _suggest(cli, log, "--json").json()
    assert report["proposals"] == [], report
    assert report["rejected"] == [] or report["rejected"][0]["why"].startswith(why), report
    cli.user_file.parent.mkdir(parents=True, exist_ok=True)
    cli.user_file.write_text('[sandbox]\nbash = "required"\n')
    sandboxed = _suggest(cli, log, "--json").json()
    assert all(not r["why"].startswith(why) for r in sandboxed["rejected"]), sandboxed


def test_the_hook_logs_the_exact_request_for_suggest(tmp_path: Path) -> None:
    from askgate.audit import exact_value

    assert exact_value("grep 'a  b' f") == "grep 'a  b' f"
    assert exact_value("x" * 9_000) is None
    assert exact_value("curl -H 'Authorization: Bearer abcdefgh12345678' x") is None
