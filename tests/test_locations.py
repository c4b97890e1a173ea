"""Every state path askgate owns comes from askgate.locations, with the XDG rules in one place."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from askgate import locations
from askgate.audit import default_log_path
from askgate.forwarding.env import default_forwarding_root, pi_agent_dir
from askgate.policy.config import managed_policy_path, user_policy_path
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Surface
from askgate.policy.protected import protected_paths
from askgate.policy.trust import trust_store_path

HOME = "/home/tester"


def test_defaults_without_xdg_variables() -> None:
    env = {"HOME": HOME}
    assert locations.user_policy_path(env) == f"{HOME}/.config/askgate/policy.toml"
    assert locations.trust_store_path(env) == f"{HOME}/.local/share/askgate/trusted.json"
    assert locations.server_data_dir(env) == f"{HOME}/.local/share/askgate/server"
    assert locations.review_log_path(env) == f"{HOME}/.local/state/askgate/review.jsonl"
    assert locations.forwarding_root(env) == f"{HOME}/.pi/agent/sessions/permission-forwarding"
    assert locations.daemon_socket_dir(env) == f"/tmp/askgate-{os.getuid()}"


def test_absolute_xdg_variables_are_used() -> None:
    env = {
        "HOME": HOME,
        "XDG_CONFIG_HOME": "/x/config",
        "XDG_DATA_HOME": "/x/data",
        "XDG_STATE_HOME": "/x/state",
        "XDG_RUNTIME_DIR": "/run/user/1000",
    }
    assert locations.user_policy_path(env) == "/x/config/askgate/policy.toml"
    assert locations.trust_store_path(env) == "/x/data/askgate/trusted.json"
    assert locations.server_data_dir(env) == "/x/data/askgate/server"
    assert locations.review_log_path(env) == "/x/state/askgate/review.jsonl"
    assert locations.daemon_socket_dir(env) == "/run/user/1000/askgate"


@pytest.mark.parametrize(
    "variable",
    ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"],
)
@pytest.mark.parametrize("value", ["relative", "./proj/state", "", "a\x00b"])
def test_relative_or_bad_xdg_values_are_ignored(variable: str, value: str) -> None:
    env = {"HOME": HOME, variable: value}
    assert locations.user_policy_path(env) == f"{HOME}/.config/askgate/policy.toml"
    assert locations.trust_store_path(env) == f"{HOME}/.local/share/askgate/trusted.json"
    assert locations.review_log_path(env) == f"{HOME}/.local/state/askgate/review.jsonl"
    assert locations.daemon_socket_dir(env) == f"/tmp/askgate-{os.getuid()}"


def test_a_relative_xdg_state_home_never_puts_the_review_log_in_the_project() -> None:
    # The reported bug: the log landed under the agent's working directory.
    env = {"HOME": HOME, "XDG_STATE_HOME": ".state"}
    assert default_log_path(env) == f"{HOME}/.local/state/askgate/review.jsonl"


def test_relative_askgate_directories_are_ignored() -> None:
    env = {"HOME": HOME, "ASKGATE_FORWARDING_DIR": "fwd", "PI_CODING_AGENT_DIR": "pi"}
    assert locations.forwarding_root(env) == f"{HOME}/.pi/agent/sessions/permission-forwarding"
    assert locations.pi_agent_dir(env) == f"{HOME}/.pi/agent"
    assert locations.review_log_path({"HOME": HOME, "ASKGATE_AUDIT_LOG": "log.jsonl"}) == (
        f"{HOME}/.local/state/askgate/review.jsonl"
    )
    tilde = {"HOME": HOME, "ASKGATE_FORWARDING_DIR": "~/fwd"}
    assert locations.forwarding_root(tilde) == f"{HOME}/fwd"


def test_every_old_resolution_now_agrees_with_locations() -> None:
    env = {
        "HOME": HOME,
        "XDG_CONFIG_HOME": "rel-config",
        "XDG_DATA_HOME": "/x/data",
        "XDG_STATE_HOME": "rel-state",
        "PI_CODING_AGENT_DIR": "/x/pi",
    }
    assert user_policy_path(env) == locations.user_policy_path(env)
    assert trust_store_path(env) == locations.trust_store_path(env)
    assert default_log_path(env) == locations.review_log_path(env)
    assert str(default_forwarding_root(env)) == locations.forwarding_root(env)
    assert str(pi_agent_dir(env)) == locations.pi_agent_dir(env)
    assert managed_policy_path(env) == locations.managed_policy_path(env)


def test_protected_paths_cover_every_state_location(tmp_path: Path) -> None:
    env = {"HOME": HOME, "XDG_RUNTIME_DIR": "/run/user/7"}
    found = protected_paths(env, str(tmp_path))
    for expected in (
        f"{HOME}/.config/askgate/**",
        f"{HOME}/.local/share/askgate/**",
        f"{HOME}/.local/state/askgate/review.jsonl",
        f"{HOME}/.pi/agent/sessions/permission-forwarding/**",
        "/run/user/7/askgate/**",
        "/etc/askgate/policy.toml",
        f"{tmp_path}/.askgate/**",
    ):
        assert expected in found, expected


def test_the_daemon_socket_and_server_data_are_not_writable_by_agents(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    env = {"HOME": str(home), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    loaded = Policy.load(str(project), env=env | {"ASKGATE_MANAGED_POLICY": "/nonexistent"})
    for target in (
        tmp_path / "run" / "askgate" / "daemon.sock",
        home / ".local" / "share" / "askgate" / "server" / "approvals.db",
    ):
        decision = loaded.decide(Surface.WRITE, str(target), cwd=str(project))
        assert decision.action is Action.DENY, target


def _askgate_modules_after(code: str) -> list[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules"
    probe += " if m.startswith('askgate'))))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_locations_imports_nothing_of_ours() -> None:
    assert _askgate_modules_after("import askgate.locations") == ["askgate", "askgate.locations"]


def test_policy_needs_nothing_above_it_to_protect_askgate_state(tmp_path: Path) -> None:
    """policy/ imports nothing else of ours but the leaf askgate.locations."""
    code = (
        "from askgate.policy.engine import Policy\n"
        f"p = Policy.load({str(tmp_path)!r}, env={{'HOME': {str(tmp_path)!r}}})\n"
        "assert p.rules\n"
    )
    modules = _askgate_modules_after(code)
    outside = [
        m
        for m in modules
        if m not in ("askgate", "askgate.locations") and not m.startswith("askgate.policy")
    ]
    assert outside == []


def test_the_whole_state_directory_and_an_explicit_runtime_dir_are_protected(
    tmp_path: Path,
) -> None:
    """The daemon keeps its secret and state beside the review log ($XDG_STATE_HOME/askgate)
    and may be told where its socket lives ($ASKGATE_RUNTIME_DIR): agents write neither."""
    env = {"HOME": HOME, "ASKGATE_RUNTIME_DIR": "/run/askgate-test"}
    assert locations.daemon_socket_dir(env) == "/run/askgate-test"
    assert locations.state_dir(env) == f"{HOME}/.local/state/askgate"
    found = protected_paths(env, str(tmp_path))
    assert f"{HOME}/.local/state/askgate/**" in found
    assert "/run/askgate-test/**" in found
    relative = {"HOME": HOME, "ASKGATE_RUNTIME_DIR": "run", "XDG_RUNTIME_DIR": "/run/user/9"}
    assert locations.daemon_socket_dir(relative) == "/run/user/9/askgate"
