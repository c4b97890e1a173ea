"""The `askgate` command as real subprocesses: the check/explain/config/schema/trust
contract of docs/cli.md and policy discovery (hostile input: test_cli_bad_input.py;
`askgate hook claude-code`: test_hook_claude_code.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.cli import error_line
from askgate.report import PIPE_WIDTH, console_width
from cli_harness import EVERYDAY, Call, Cli, assert_check_shape, assert_clean_error


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


# --- check --json ----------------------------------------------------------------------


def test_check_json_shape_and_everyday_compound_commands(cli: Cli) -> None:
    policy = str(cli.write("policy.toml", EVERYDAY))
    project = cli.project()
    base = ["check", "--config", policy, "--cwd", str(project), "--json"]
    cases = {
        "git status && git diff": ("allow", ["git status", "git diff"]),
        "ls | grep x": ("allow", ["ls", "grep x"]),
        "cd src && ls": ("allow", ["cd src", "ls"]),
        "git status && rm -rf /": ("deny", ["git status", "rm -rf /"]),
        "echo 'rm -rf /'": ("allow", ["echo rm -rf /"]),
        "make deploy": ("ask", ["make deploy"]),
        "git push --force origin": ("deny", ["git push --force origin"]),
    }
    calls = [Call([*base, "bash", command]) for command in cases]
    calls += [
        Call([*base, "tool", "Read"]),
        Call([*base, "tool", "Write"]),
        Call(["check", "--config", policy, "bash", "git status && rm -rf /"]),
    ]
    results = cli.run_many(calls)

    for (command, (action, units)), result in zip(
        cases.items(), results[: len(cases)], strict=True
    ):
        assert result.returncode == 0, result  # evaluated: exit 0 whatever the answer
        out = result.json()
        assert_check_shape(out, bash=True)
        assert out["version"] == 1
        assert out["value"] == command
        assert out["action"] == action, result
        assert [u["command"] for u in out["units"]] == units, result

    by_command = dict(zip(cases, results, strict=False))
    # The deny names the rule that decided, with where it came from.
    deny = by_command["git status && rm -rf /"].json()
    assert deny["rule"]["pattern"] == "rm -rf /*"
    assert deny["rule"]["origin"] == "config"
    assert deny["rule"]["source"] == policy and deny["rule"]["line"] == 12
    assert "recursive delete" in deny["reason"]
    assert [u["action"] for u in deny["units"]] == ["allow", "deny"]
    assert deny["units"][0]["rule"]["pattern"] == "git status *"
    # A quoted string is data, not a command: one harmless unit.
    echo = by_command["echo 'rm -rf /'"].json()
    assert len(echo["units"]) == 1 and echo["units"][0]["rule"]["pattern"] == "echo *"
    # Nothing matched: the default decided, and `rule` is null.
    default = by_command["make deploy"].json()
    assert default["rule"] is None and default["units"][0]["rule"] is None
    # A cross-cutting deny is not lifted by a longer, unrelated allow.
    force = by_command["git push --force origin"].json()
    assert force["rule"]["pattern"] == "* --force *"

    read, write, text = results[len(cases) :]
    assert_check_shape(read.json(), bash=False)
    assert read.json()["action"] == "allow" and read.json()["rule"]["pattern"] == "Read"
    assert write.json()["action"] == "ask" and write.json()["rule"] is None
    # Without --json: "ACTION: reason", then one line per unit.
    assert text.returncode == 0, text
    lines = text.stdout.splitlines()
    assert lines[0].startswith("deny: 'rm -rf /': bash rule 'rm -rf /*' = deny")
    assert lines[1].split()[:3] == ["allow", "git", "status"]
    assert lines[2].split()[:2] == ["deny", "rm"]


# --- explain ---------------------------------------------------------------------------


def test_explain_shows_every_candidate_the_winner_and_the_overridden(cli: Cli) -> None:
    cli.write("policy.toml", EVERYDAY)
    base = ["explain", "--config", "policy.toml"]  # relative to the shell's directory
    markup_policy = str(cli.write("markup.toml", '[bash]\n"echo [/] *" = "allow"\n'))
    compound, force, narrow, markup, markup_config = cli.run_many(
        [
            Call([*base, "bash", "git status && rm -rf /"]),
            Call([*base, "bash", "git push --force"]),
            Call([*base, "bash", "git status"], env={"COLUMNS": "60"}),
            Call(["explain", "--config", markup_policy, "bash", "echo '[/]' [red]x"]),
            Call(["config", "show", "--config", markup_policy]),
        ]
    )
    assert compound.returncode == 0, compound
    out = compound.stdout
    assert out.startswith("deny bash 'git status && rm -rf /'\nbecause: 'rm -rf /': ")
    assert "unit 'git status' (command) -> allow" in out
    assert "unit 'rm -rf /' (command) -> deny" in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    cells = [[cell.strip() for cell in row.strip("│").split("│")] for row in rows]
    # Columns: lookup, candidate rule, action, status, from. Stdout is a pipe here, so
    # the table is laid out 120 wide and no cell is folded.
    by_rule = {c[1]: c for c in cells if c[1] not in ("", "-")}
    assert by_rule["git *"][2:4] == ["ask", "overridden by 'git status *'"]
    assert by_rule["git status *"][2:4] == ["allow", "WINNER (strictest standing)"]
    assert by_rule["rm *"][2:4] == ["ask", "overridden by 'rm -rf /*'"]
    assert by_rule["rm -rf /*"][2:4] == ["deny", "WINNER (strictest standing)"]
    assert by_rule["rm -rf /*"][4] == "config policy.toml:12"  # shown relative to cwd
    table_lines = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
    assert max(len(line) for line in table_lines) <= PIPE_WIDTH

    # Two rules both standing (neither nested in the other): the stricter one wins.
    assert force.returncode == 0, force
    assert force.stdout.startswith("deny bash 'git push --force'")
    force_cells = [
        [cell.strip() for cell in line.strip("│").split("│")]
        for line in force.stdout.splitlines()
        if line.startswith("│")
    ]
    statuses = {c[1]: c[3] for c in force_cells}
    assert statuses["* --force *"] == "WINNER (strictest standing)"
    assert statuses["git push *"] == "standing, less strict"
    assert statuses["git *"] == "overridden by 'git push *'"

    # COLUMNS is honoured when set.
    assert narrow.returncode == 0, narrow
    assert "WINNER" in narrow.stdout
    narrow_table = [line for line in narrow.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert narrow_table and max(len(line) for line in narrow_table) <= 60

    # Commands and patterns are shown as text, never read as rich markup.
    assert markup.returncode == 0, markup
    assert "echo [/] [red]x" in markup.stdout and "echo [/] *" in markup.stdout
    assert markup_config.returncode == 0, markup_config
    assert "echo [/] *" in markup_config.stdout


# --- config, schema --------------------------------------------------------------------


def test_config_and_schema_commands_print_valid_json(cli: Cli) -> None:
    policy = str(cli.write("policy.toml", EVERYDAY))
    cli.write("managed/policy.toml", '[bash]\n"sudo *" = "deny"\n')
    project = cli.project()
    cwd = ["--cwd", str(project)]
    results = cli.run_many(
        [
            Call(["config", "show", "--config", policy, "--json"]),
            Call(["config", "show", "--config", policy]),
            Call(["config", "validate", "--config", policy]),
            Call(["config", "validate", "--config", policy, "--json"]),
            Call(["config", "paths", *cwd, "--json"]),
            Call(["config", "paths", *cwd]),
            Call(["config", "paths", "--config", "policy.toml", "--json"]),
            Call(["schema", "policy"]),
            Call(["schema", "events"]),
        ]
    )
    for result in results:
        assert result.returncode == 0, result
        assert "Traceback" not in result.stderr
    show_json, show, validate, validate_json, paths_json, paths, config_paths, schema, events = (
        results
    )

    shown = show_json.json()
    patterns = {(r["surface"], r["pattern"], r["action"], r["origin"]) for r in shown["rules"]}
    assert ("bash", "rm -rf /*", "deny", "config") in patterns
    assert ("bash", "sudo *", "deny", "managed") in patterns  # managed applies under --config
    assert shown["files"] == [policy, str(cli.managed)]
    assert shown["default"] == "ask"
    assert "rm -rf /*" in show.stdout and "managed" in show.stdout

    assert validate.stdout.startswith("ok: 2 file(s), ")
    assert validate_json.json()["ok"] is True
    assert validate_json.json()["errors"] == []

    rows = paths_json.json()
    assert [(r["origin"], r["path"], r["exists"]) for r in rows] == [
        ("user", str(cli.user_file), False),
        ("project", str(project / ".askgate" / "policy.toml"), False),
        ("managed", str(cli.managed), True),
    ]
    assert paths.stdout.splitlines()[2].split() == ["found", "managed", str(cli.managed)]
    # --config replaces user and project discovery; a relative name is relative to the
    # shell's directory, and the managed file is still listed because it still applies.
    assert [(r["origin"], r["path"]) for r in config_paths.json()] == [
        ("config", policy),
        ("managed", str(cli.managed)),
    ]

    policy_schema = schema.json()
    assert policy_schema["type"] == "object"
    assert {"default", "bash", "agent"} <= policy_schema["properties"].keys()
    assert isinstance(events.json(), dict) and events.json()


# --- trust -----------------------------------------------------------------------------


def test_trust_round_trip(cli: Cli) -> None:
    project = cli.project(policy='[bash]\n"make *" = "allow"\n"rm *" = "deny"\n')
    policy_file = project / ".askgate" / "policy.toml"
    check = ["check", "--json", "--cwd", str(project / "src"), "bash"]

    def answer(command: str) -> str:
        result = cli.run(*check, command)
        assert result.returncode == 0, result
        return result.json()["action"]

    # Untrusted: the allow does not load (default ask), the deny does, with a warning.
    untrusted = cli.run(*check, "make")
    assert untrusted.json()["action"] == "ask"
    assert "project policy is not trusted" in untrusted.stderr
    assert answer("rm x") == "deny"

    trusted = cli.run("trust", str(project / "src"))
    assert trusted.returncode == 0, trusted
    assert trusted.stdout.strip() == f"trusted {policy_file} (editing the file revokes trust)"
    assert (cli.data_home / "askgate" / "trusted.json").is_file()
    after = cli.run(*check, "make")
    assert after.json()["action"] == "allow" and after.json()["rule"]["origin"] == "project"
    assert "not trusted" not in after.stderr

    # Editing the file revokes the trust.
    policy_file.write_text(policy_file.read_text() + "# edited\n")
    assert answer("make") == "ask"

    assert cli.run("trust", str(project)).returncode == 0
    assert answer("make") == "allow"
    untrust = cli.run("untrust", str(project))
    assert untrust.returncode == 0 and untrust.stdout.strip() == f"untrusted {project}"
    assert answer("make") == "ask"
    again = cli.run("untrust", str(project))
    assert again.returncode == 0 and again.stdout.strip() == f"{project} was not trusted"

    bare = cli.project("bare")
    assert_clean_error(cli.run("trust", str(bare)), "no project policy file")


# --- discovery -------------------------------------------------------------------------


def test_discovery_scopes_config_override_and_agents(cli: Cli) -> None:
    cli.user_file.parent.mkdir(parents=True)
    cli.user_file.write_text(
        """
[bash]
"deploy *" = "allow"
"terraform plan" = "allow"
[agent.reviewer.bash]
"deploy *" = { action = "deny", reason = "reviewers do not deploy" }
"""
    )
    cli.managed.write_text('[bash]\n"terraform *" = { action = "deny", reason = "infra team" }\n')
    project = cli.project(policy='[bash]\n"npm *" = "deny"\n')
    override_text = '[bash]\n"npm *" = "allow"\n"terraform *" = "allow"\n'
    override = str(cli.write("override.toml", override_text))
    check = ["check", "--json", "--cwd", str(project)]
    cases = [
        (check, "deploy staging", "allow", "user"),
        (check, "terraform plan", "deny", "managed"),  # managed deny beats a user allow
        (check, "terraform apply", "deny", "managed"),
        (check, "npm install", "deny", "project"),  # untrusted project deny still applies
        ([*check, "--agent", "reviewer"], "deploy staging", "deny", "user-agent"),
        ([*check, "--agent", "builder"], "deploy staging", "allow", "user"),
        ([*check, "--config", override], "npm install", "allow", "config"),  # replaces project
        ([*check, "--config", override], "deploy staging", "ask", None),  # replaces user
        ([*check, "--config", override], "terraform plan", "deny", "managed"),  # still applies
    ]
    results = cli.run_many([Call([*args, "bash", command]) for args, command, _, _ in cases])
    for (_, command, action, origin), result in zip(cases, results, strict=True):
        assert result.returncode == 0, result
        out = result.json()
        assert (command, out["action"]) == (command, action), result
        assert (out["rule"] or {}).get("origin") == origin, result
    reviewer = results[4].json()
    assert reviewer["rule"]["agent"] == "reviewer"
    assert "reviewers do not deploy" in reviewer["reason"]
    assert results[1].json()["rule"]["pattern"] == "terraform *"


def test_a_broken_discovered_file_fails_closed(cli: Cli) -> None:
    """A user or managed file that does not load stops the CLI (exit 2), --config or not."""
    policy = str(cli.write("policy.toml", EVERYDAY))
    cli.user_file.parent.mkdir(parents=True)
    cli.user_file.write_text('[bash]\n"ls *" = "alow"\n')
    broken_user = cli.run("check", "bash", "ls")
    assert_clean_error(broken_user, f"{cli.user_file}:2: bash", "invalid action")
    show = cli.run("config", "show")
    assert_clean_error(show, "invalid action")
    validate = cli.run("config", "validate", "--json")
    assert validate.returncode == 2 and validate.json()["ok"] is False

    cli.managed.write_text("yolo = maybe\n")
    broken_managed = cli.run("check", "--config", policy, "bash", "ls")
    assert_clean_error(broken_managed, str(cli.managed), "TOML")


# --- small pure helpers ----------------------------------------------------------------


def test_error_line_keeps_both_ends_on_one_line() -> None:
    text = "/etc/askgate/policy.toml:2: bash." + "a" * 5000 + ": pattern is longer\n than"
    line = error_line(text)
    assert "\n" not in line and len(line) <= 600
    assert line.startswith("/etc/askgate/policy.toml:2: bash.aaa")
    assert line.endswith(": pattern is longer\\n than")
    assert error_line("short") == "short"


def test_console_width_for_pipes_terminals_and_columns() -> None:
    assert console_width({}, is_terminal=False) == PIPE_WIDTH
    assert console_width({}, is_terminal=True) is None
    assert console_width({"COLUMNS": "70"}, is_terminal=False) is None
    assert console_width({"COLUMNS": "wide"}, is_terminal=False) == PIPE_WIDTH
