"""Built-in rule files (policy/builtin/rules/*.toml): asks above every scope that lift
nothing, named with their file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.builtin import RULES_DIR, builtin_rule_paths, load_builtin_rules
from askgate.policy.engine import Policy
from askgate.policy.model import Action

PROGRAM_CONFIG = [".git/config", ".git/hooks/pre-commit", ".gitattributes", ".envrc", ".npmrc"]


def _policy(tmp_path: Path, text: str) -> tuple[Policy, Path]:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    config = tmp_path / "p.toml"
    config.write_text(text)
    env = {"HOME": str(tmp_path / "home"), "ASKGATE_MANAGED_POLICY": str(tmp_path / "m.toml")}
    return Policy.load(str(root), config_files=[str(config)], env=env), root


def test_the_rule_files_load_with_their_examples_and_hold_no_allow(tmp_path: Path) -> None:
    assert builtin_rule_paths(), "at least one built-in rule file ships"
    files = load_builtin_rules(base_dir=str(tmp_path), env={"HOME": str(tmp_path)})
    assert all(example.passed for f in files for example in f.examples)
    assert {rule.action for f in files for rule in f.rules} <= {Action.ASK, Action.DENY}
    assert all(not rule.trusted for f in files for rule in f.rules), "they lift nothing"


@pytest.mark.parametrize("name", PROGRAM_CONFIG)
def test_writing_a_file_that_makes_programs_run_programs_asks_even_when_allowed(
    tmp_path: Path, name: str
) -> None:
    policy, root = _policy(tmp_path, '[write]\n"./**" = "allow"\n[bash]\n"echo *" = "allow"\n')
    decision = policy.decide("write", str(root / name), cwd=str(root))
    assert decision.action is Action.ASK, decision.reason
    assert RULES_DIR not in decision.reason and "built-in program-config.toml line" in (
        decision.reason
    )
    assert policy.decide("bash", f"echo x >> {name}", cwd=str(root)).action is Action.ASK


def test_a_builtin_ask_never_lifts_a_users_deny(tmp_path: Path) -> None:
    policy, root = _policy(tmp_path, '[write]\n"**" = "deny"\n')
    assert policy.decide("write", str(root / ".git/config"), cwd=str(root)).action is Action.DENY
    assert policy.decide("bash", "echo x > .envrc", cwd=str(root)).action is Action.DENY
