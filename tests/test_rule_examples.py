"""Rule examples (`match` / `not_match`) are checked when a file loads; `config test`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askgate.policy.config import load_policy, run_examples
from askgate.policy.model import Origin
from askgate.policy.policy_file import ConfigError, parse_policy_text
from askgate.policy.schema import policy_json_schema
from cli_harness import Cli


def parse(text: str, base_dir: str = "/proj", **options: object):
    return parse_policy_text(
        text,
        path="/p.toml",
        origin=Origin.USER,
        rank_base=100,
        trusted=True,
        base_dir=base_dir,
        env={"HOME": "/home/u"},
        **options,  # type: ignore[arg-type]
    )


def test_passing_examples_load_and_are_kept() -> None:
    parsed = parse(
        '[bash]\n"git push *" = { action = "deny", match = ["git push -f origin main"],'
        ' not_match = ["git pushd"] }\n'
    )
    assert [(e.value, e.should_match, e.passed) for e in parsed.examples] == [
        ("git push -f origin main", True, True),
        ("git pushd", False, True),
    ]
    assert parsed.rules[0].pattern == "git push *"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ('"git push *" = { action = "deny", match = ["git pull"] }', "'git pull' does not match"),
        ('"git push *" = { action = "deny", not_match = ["git push"] }', "under not_match"),
        ('"x" = { action = "deny", match = "x" }', "expected an array of examples"),
        ('"x" = { action = "deny", match = [""] }', "example 1 must be a non-empty string"),
        ('"x" = { action = "deny", match = [1] }', "example 1 must be a non-empty string"),
    ],
)
def test_a_failing_or_malformed_example_is_an_error_with_file_and_line(
    rule: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(f'default = "ask"\n[bash]\n{rule}\n')
    assert caught.value.line == 3
    assert message in str(caught.value)
    assert str(caught.value).startswith("/p.toml:3: bash.")


def test_path_examples_are_paths_relative_to_the_project_root_with_home_expanded() -> None:
    parsed = parse(
        "[read]\n"
        '"src/**" = { action = "allow", match = ["src/a.py", "/proj/src/b/c.py"],'
        ' not_match = ["/other/src/a.py"] }\n'
        '"~/.ssh/**" = { action = "deny", match = ["~/.ssh/id_rsa", "/home/u/.ssh/k"] }\n'
    )
    assert all(example.passed for example in parsed.examples)
    with pytest.raises(ConfigError, match="'other/x' does not match"):
        parse('[write]\n"src/**" = { action = "allow", match = ["other/x"] }\n')


def test_examples_can_be_collected_without_raising() -> None:
    parsed = parse(
        '[bash]\n"ls *" = { action = "allow", match = ["cat x"] }\n', check_examples=False
    )
    assert [example.passed for example in parsed.examples] == [False]


def test_a_file_whose_example_fails_clamps_like_any_broken_file(tmp_path: Path) -> None:
    from askgate.policy.engine import Policy

    (tmp_path / ".git").mkdir()
    policy_file = tmp_path / "p.toml"
    policy_file.write_text('[bash]\n"ls *" = { action = "allow", match = ["cat x"] }\n')
    env = {"HOME": str(tmp_path), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml")}
    loaded = load_policy(str(tmp_path), config_files=[str(policy_file)], env=env)
    assert loaded.errors and "does not match" in str(loaded.errors[0])
    decision = Policy.from_loaded(loaded, env=env).decide("bash", "ls", cwd=str(tmp_path))
    assert decision.action != "allow"


def test_the_schema_describes_examples_and_profiles() -> None:
    schema = policy_json_schema()
    rule = schema["$defs"]["rule"]["oneOf"][1]["properties"]
    assert set(rule) == {"action", "reason", "match", "not_match"}
    assert schema["properties"]["profiles"]["type"] == "array"


def test_every_example_in_the_shipped_example_policy_passes(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "policy.toml"
    (tmp_path / ".git").mkdir()
    runs = run_examples(
        str(tmp_path),
        config_files=[str(example)],
        env={"HOME": str(tmp_path), "ASKGATE_MANAGED_POLICY": str(tmp_path / "none.toml")},
    )
    examples = [e for run in runs for e in run.examples]
    assert len(examples) >= 10, "the example policy documents its important rules"
    assert all(e.passed for e in examples), [e.verdict for e in examples if not e.passed]
    assert not [run.error for run in runs if run.error]


def test_config_test_prints_a_table_and_exits_by_outcome(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    good = cli.write("good.toml", '[bash]\n"ls *" = { action = "allow", match = ["ls -la"] }\n')
    bad = cli.write("bad.toml", '[bash]\n"ls *" = { action = "allow", match = ["ls", "cat x"] }\n')
    broken = cli.write("broken.toml", "[bash\n")

    ok = cli.run("config", "test", "--config", str(good))
    assert ok.returncode == 0, ok
    last = ok.stdout.strip().splitlines()[-1].split()
    assert last[0] == last[2] and last[3:] == ["examples", "pass"], ok.stdout
    assert "ls -la" in ok.stdout and "built-in" in ok.stdout

    failed = cli.run("config", "test", "--config", str(bad), "--json")
    assert failed.returncode == 1, failed
    report = failed.json()
    assert report["failed"] == 1 and not report["ok"]
    assert [e["passed"] for e in report["files"][0]["examples"]] == [True, False]
    assert report["files"][0]["path"] == str(bad)

    unparseable = cli.run("config", "test", "--config", str(broken))
    assert unparseable.returncode == 2, unparseable
    assert "TOML syntax error" in unparseable.stdout

    missing = cli.run("config", "test", "--config", str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert json.loads(cli.run("config", "test", "--config", str(good), "--json").stdout)["ok"]
