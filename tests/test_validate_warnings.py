"""`askgate config validate` warns, naming the line, about a policy that allows broadly
without `[sandbox] bash = "required"` (it cannot keep its own denies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_harness import Cli

BROAD = [
    ('default = "allow"\n', 1, 'default = "allow"'),
    ('[bash]\n"ls *" = "allow"\n"*" = "allow"\n', 3, 'bash."*" = "allow"'),
    ('[bash]\n"python3 *" = "allow"\n', 2, 'bash."python3 *" = "allow"'),
    ('[bash]\n"bash *" = { action = "allow" }\n', 2, 'bash."bash *" = "allow"'),
    ('profiles = ["sandboxed-project"]\n', 1, "profiles: 'sandboxed-project'"),
]


@pytest.mark.parametrize(("text", "line", "what"), BROAD)
def test_a_broad_allow_without_the_sandbox_required_is_a_warning_with_its_line(
    tmp_path: Path, text: str, line: int, what: str
) -> None:
    cli = Cli(tmp_path)
    policy = cli.write("p.toml", text)
    result = cli.run("config", "validate", "--config", str(policy))
    assert result.returncode == 0, result
    assert f"askgate: warning: {policy}:{line}: {what}" in result.stderr, result
    assert 'without [sandbox] bash = "required"' in result.stderr
    required = cli.write("r.toml", text + '\n[sandbox]\nbash = "required"\n')
    quiet = cli.run("config", "validate", "--config", str(required))
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet


@pytest.mark.parametrize("pattern", ["python -m pytest *", "ls *", "npm test *", "pythonx *"])
def test_narrow_allows_are_not_warned_about(tmp_path: Path, pattern: str) -> None:
    cli = Cli(tmp_path)
    policy = cli.write("p.toml", f'[bash]\n"{pattern}" = "allow"\n')
    result = cli.run("config", "validate", "--config", str(policy))
    assert result.returncode == 0 and "warning" not in result.stderr, result


def test_the_warnings_are_in_the_json_report(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    policy = cli.write("p.toml", 'default = "allow"\n')
    result = cli.run("config", "validate", "--json", "--config", str(policy))
    assert any("default" in w for w in result.json()["warnings"]), result


def test_the_fetch_profile_without_the_host_list_in_the_sandbox_is_a_warning(
    tmp_path: Path,
) -> None:
    """sandboxed-fetch lets curl and wget run because the proxy holds the host list inside
    the sandbox: with the sandbox's network on (or off the sandbox), say so."""
    cli = Cli(tmp_path)
    text = 'profiles = ["sandboxed-fetch"]\n\n[sandbox]\nbash = "required"\n'
    on = cli.write("on.toml", text + 'network = "on"\n')
    result = cli.run("config", "validate", "--config", str(on))
    assert result.returncode == 0, result
    assert f"askgate: warning: {on}:1: profiles: 'sandboxed-fetch'" in result.stderr, result
    assert 'without [sandbox] network = "policy"' in result.stderr
    held = cli.write("held.toml", text + 'network = "policy"\n')
    quiet = cli.run("config", "validate", "--config", str(held))
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet
