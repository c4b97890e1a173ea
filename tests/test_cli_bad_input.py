"""Hostile input to the `askgate` command: bad policy files, bad usage and hostile values
each give one clear error line (exit 2) or an ask, never a traceback, never an allow."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from askgate.policy.engine import Policy
from cli_harness import EVERYDAY, Arg, Call, Cli, assert_ask, assert_clean_error
from conftest import make_rule


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


BAD_POLICIES: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "malformed TOML": (b'default = "ask"\n[bash\n', (":2:", "TOML syntax error")),
    "unknown surface table": (b'[bashh]\n"ls" = "allow"\n', ("bashh", "unknown key")),
    "unknown agent surface": (b'[agent.x.bogus]\n"ls" = "allow"\n', ("unknown surface",)),
    "invalid action": (b'[bash]\n"ls" = "alow"\n', ("invalid action",)),
    "invalid default": (b'default = "allw"\n', ("default", "invalid action")),
    "empty pattern": (b'[bash]\n"" = "allow"\n', ("pattern is empty",)),
    "NUL in pattern": (b'[bash]\n"ls\\u0000x" = "allow"\n', ("control character",)),
    "too-long pattern": (
        b'[bash]\n"' + b"a" * 2000 + b'" = "allow"\n',
        ("longer than 1000 characters",),
    ),
    "invalid path glob": (b'[read]\n"/etc/***" = "allow"\n', ("not a valid path glob",)),
    "unknown rule key": (b'[bash]\n"ls" = { action = "allow", why = "x" }\n', ("unknown key",)),
    "binary garbage": (bytes(range(256)) * 16, ("not valid UTF-8",)),
    "invalid UTF-8": (b'[bash]\n"ls \xff\xfe" = "allow"\n', ("not valid UTF-8",)),
    "raw NUL byte": (b'[bash]\n"ls\x00" = "allow"\n', ("NUL",)),
    "larger than 1 MiB": (b"# " + b"x" * (1024 * 1024) + b"\n", ("larger than",)),
}


def test_bad_policy_files_are_one_line_errors(cli: Cli) -> None:
    calls = []
    for index, (content, _) in enumerate(BAD_POLICIES.values()):
        path = str(cli.write(f"bad-{index}.toml", content))
        calls.append(Call(["check", "--config", path, "--json", "bash", "ls"]))
    for (name, (_, needles)), result in zip(BAD_POLICIES.items(), cli.run_many(calls), strict=True):
        assert result.stdout == "", (name, result)
        assert_clean_error(result, *needles)


def test_bad_usage_is_a_one_line_error(cli: Cli, tmp_path: Path) -> None:
    policy = str(cli.write("policy.toml", EVERYDAY))
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # must be refused without blocking on open()
    not_dir = str(cli.write("file.txt", "x"))
    cases: list[tuple[list[Arg], tuple[str, ...]]] = [
        ([], ("a command is required",)),
        (["frobnicate"], ("invalid choice: 'frobnicate'",)),
        (["hook"], ("askgate hook claude-code",)),
        (["hook", "no-such-agent"], ("askgate hook claude-code",)),
        (["check", "--config", policy, "bogus", "ls"], ("invalid choice: 'bogus'",)),
        (["explain", "--config", policy, "bogus", "ls"], ("invalid choice: 'bogus'",)),
        (["check", "--config", policy, "bash"], ("VALUE",)),
        (["check", "--config", policy, "--stdin", "bash", "ls"], ("not both",)),
        (["check", "--config", str(tmp_path / "missing.toml"), "bash", "ls"], ("no such file",)),
        (["check", "--config", str(tmp_path), "bash", "ls"], ("is a directory",)),
        (["check", "--config", str(fifo), "bash", "ls"], ("not a regular file",)),
        (["check", "--config", policy, "--cwd", not_dir, "bash", "ls"], ("not a directory",)),
        (["check", "--config", policy, "--cwd", "/nonexistent/x", "bash", "ls"], ("directory",)),
        (["check", "--config", policy, "--agent", "no spaces", "bash", "ls"], ("--agent",)),
        (["config", "bogus"], ("invalid choice",)),
        (["schema", "bogus"], ("invalid choice",)),
        (["trust", str(tmp_path / "nowhere")], ("not a directory",)),
        (["check", "--config", policy, "--cwd", b"/tmp/\xff-nowhere", "bash", "ls"], ("--cwd",)),
    ]
    results = cli.run_many([Call(args) for args, _ in cases])
    for (_, needles), result in zip(cases, results, strict=True):
        assert_clean_error(result, *needles)


def test_hostile_values_are_answered_ask(cli: Cli) -> None:
    policy = str(cli.write("policy.toml", '[bash]\n"*" = "allow"\n[read]\n"**" = "allow"\n'))
    check = ["check", "--config", policy, "--json"]
    megabyte = b"ls " * (1024 * 1024 // 3 + 1)
    results = cli.run_many(
        [
            Call([*check, "--stdin", "bash"], stdin=megabyte),
            Call([*check, "--stdin", "bash"], stdin=b"ls\x00rm -rf /"),
            Call([*check, "bash", b"cat \xff\xfe"]),
            Call([*check, "read", b"/tmp/\xff\xfe"]),
            Call(["check", "--config", policy, "bash", b"cat \xff\xfe"]),
            Call(["explain", "--config", policy, "bash", b"cat \xff\xfe"]),
            Call([*check, "--stdin", "bash"], stdin=b"ls -la\n"),  # control: allow
        ]
    )
    big, nul, bad_utf8, bad_path, text, explain, control = results
    for result in (big, nul, bad_utf8, bad_path):
        assert_ask(result)
    assert len(big.json()["value"]) <= 1000  # a huge value is not echoed back whole
    # Undecodable bytes come back as visible escapes in valid UTF-8 JSON.
    assert bad_utf8.json()["value"] == "cat \\xff\\xfe"
    assert text.returncode == 0 and text.stdout.startswith("ask: "), text
    assert explain.returncode == 0 and explain.stdout.startswith("ask bash "), explain
    assert "Traceback" not in text.stderr + explain.stderr
    assert control.returncode == 0 and control.json()["action"] == "allow", control
    assert control.json()["value"] == "ls -la"  # one trailing newline dropped


ENGINE_UTF8_BUG = (
    "engine.Policy.decide refuses lone surrogates (undecodable bytes) for bash and path"
    " surfaces only; tool/mcp/skill values go to the rules, and '*' = allow allows them"
)


def test_invalid_utf8_names_are_never_allowed(cli: Cli) -> None:
    policy = str(
        cli.write(
            "all.toml", '[tool]\n"*" = "allow"\n[mcp]\n"*" = "allow"\n[skill]\n"*" = "allow"\n'
        )
    )
    surfaces = ("tool", "mcp", "skill")
    calls = [Call(["check", "--config", policy, "--json", s, b"x\xff"]) for s in surfaces]
    for result in cli.run_many(calls):
        assert_ask(result)


def test_invalid_utf8_names_through_the_python_api(project, home) -> None:
    rules = [make_rule(surface, "*", "allow") for surface in ("tool", "mcp", "skill")]
    policy = Policy(rules, project_root=str(project), env={"HOME": str(home)})
    undecodable = b"Bash\xff".decode("utf-8", "surrogateescape")
    for surface in ("tool", "mcp", "skill"):
        assert policy.decide(surface, undecodable).action == "ask", surface


def test_nul_bytes_through_the_python_api(project, home) -> None:
    """argv cannot carry a NUL: the engine itself must refuse to allow one."""
    rules = [make_rule("bash", "*", "allow"), make_rule("read", "**", "allow")]
    policy = Policy(rules, project_root=str(project), env={"HOME": str(home)})
    assert policy.decide("bash", "ls").action == "allow"  # control
    for surface, value in (("bash", "ls\x00; rm -rf /"), ("read", f"{project}/a\x00b")):
        decision = policy.decide(surface, value)
        assert decision.action == "ask", (surface, decision.reason)
