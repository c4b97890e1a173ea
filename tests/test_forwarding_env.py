"""Subagent detection, parent-session resolution and the default forwarding root."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import askgate.forwarding as forwarding
from askgate.forwarding import (
    SUBAGENT_ENV_HINT_KEYS,
    SUBAGENT_PARENT_SESSION_ENV_CANDIDATES,
    ForwardingPrompter,
    default_forwarding_root,
    is_subagent,
    resolve_forwarding,
    resolve_forwarding_target,
)
from askgate.prompters.base import PromptRequest, PromptState

ROUTER = ("PI_IS_SUBAGENT", "PI_SUBAGENT_SESSION_ID", "PI_AGENT_ROUTER_SUBAGENT")
NICOBAILON = (
    "PI_SUBAGENT_CHILD",
    "PI_SUBAGENT_RUN_ID",
    "PI_SUBAGENT_CHILD_AGENT",
    "PI_SUBAGENT_DEPTH",
)
HAZAT = ("PI_SUBAGENT_NAME", "PI_SUBAGENT_ID", "PI_SUBAGENT_SESSION", "PI_SUBAGENT_ACTIVITY_FILE")


def test_hint_keys_are_exactly_the_eleven_known_keys_in_order() -> None:
    assert SUBAGENT_ENV_HINT_KEYS == ROUTER + NICOBAILON + HAZAT
    assert len(set(SUBAGENT_ENV_HINT_KEYS)) == 11


@pytest.mark.parametrize("key", ROUTER + NICOBAILON + HAZAT)
def test_each_hint_key_alone_marks_a_subagent(key: str) -> None:
    assert is_subagent({key: "1"})
    assert not is_subagent({key: "   "})  # blank does not count


def test_depth_zero_and_paths_count_as_hints() -> None:
    assert is_subagent({"PI_SUBAGENT_DEPTH": "0"})
    assert is_subagent({"PI_SUBAGENT_ACTIVITY_FILE": "/tmp/activity.json"})


def test_parent_session_variables_are_not_hints() -> None:
    # A root process may carry PI_SUBAGENT_PARENT_SESSION naming itself (pi #722).
    env = dict.fromkeys(SUBAGENT_PARENT_SESSION_ENV_CANDIDATES, "s1")
    assert not is_subagent(env)
    assert not is_subagent({})


def test_session_dir_fallback(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    env = {"PI_CODING_AGENT_DIR": str(agent_dir)}
    child_dir = agent_dir / "subagent-sessions" / "abc"
    child_dir.mkdir(parents=True)
    assert is_subagent(env, session_dir=child_dir)
    assert not is_subagent(env, session_dir=agent_dir / "sessions" / "abc")
    assert not is_subagent(env, session_dir=agent_dir / "subagent-sessions")
    # Climbing out with ".." is resolved, not trusted.
    assert not is_subagent(env, session_dir=child_dir / ".." / ".." / "sessions")
    custom = tmp_path / "elsewhere"
    assert is_subagent({}, session_dir=custom / "x", subagent_sessions_dir=custom)


def test_candidates_and_deprecated_alias() -> None:
    assert SUBAGENT_PARENT_SESSION_ENV_CANDIDATES == (
        "PI_AGENT_ROUTER_PARENT_SESSION_ID",
        "PI_SUBAGENT_PARENT_SESSION",
    )
    with pytest.warns(DeprecationWarning):
        alias = forwarding.SUBAGENT_PARENT_SESSION_ENV_KEY
    assert alias == SUBAGENT_PARENT_SESSION_ENV_CANDIDATES[0]


def test_resolver_with_ui_returns_the_own_session() -> None:
    assert resolve_forwarding_target(True, True, "me", {"PI_SUBAGENT_PARENT_SESSION": "p"}) == "me"


def test_resolver_not_a_subagent_returns_none_without_logging(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="askgate.forwarding"):
        assert (
            resolve_forwarding_target(False, False, "me", {"PI_SUBAGENT_PARENT_SESSION": "p"})
            is None
        )
    assert caplog.records == []


@pytest.mark.parametrize("key", SUBAGENT_PARENT_SESSION_ENV_CANDIDATES)
def test_resolver_reads_each_candidate(key: str) -> None:
    assert resolve_forwarding_target(False, True, "child", {key: " parent-1 "}) == "parent-1"


def test_resolver_takes_candidates_in_order_and_skips_blank_and_unknown() -> None:
    both = {"PI_AGENT_ROUTER_PARENT_SESSION_ID": "router", "PI_SUBAGENT_PARENT_SESSION": "nico"}
    assert resolve_forwarding_target(False, True, "c", both) == "router"
    placeholder = {
        "PI_AGENT_ROUTER_PARENT_SESSION_ID": "unknown",
        "PI_SUBAGENT_PARENT_SESSION": "n",
    }
    assert resolve_forwarding_target(False, True, "c", placeholder) == "n"
    blank = {"PI_AGENT_ROUTER_PARENT_SESSION_ID": "  ", "PI_SUBAGENT_PARENT_SESSION": "n"}
    resolution = resolve_forwarding(
        has_ui=False, is_subagent=True, current_session_id="c", env=blank
    )
    assert (resolution.target, resolution.variable) == ("n", "PI_SUBAGENT_PARENT_SESSION")


def test_a_variable_naming_the_current_session_is_skipped() -> None:
    env = {"PI_AGENT_ROUTER_PARENT_SESSION_ID": "me", "PI_SUBAGENT_PARENT_SESSION": "parent"}
    assert resolve_forwarding_target(False, True, "me", env) == "parent"
    only_self = {"PI_SUBAGENT_PARENT_SESSION": "me"}
    resolution = resolve_forwarding(
        has_ui=False, is_subagent=True, current_session_id="me", env=only_self
    )
    assert resolution.target is None
    assert resolution.skipped_self == ("PI_SUBAGENT_PARENT_SESSION",)


def test_unresolved_parent_logs_one_structured_entry_naming_every_variable(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="askgate.forwarding"):
        assert resolve_forwarding_target(False, True, "child", {"PI_SUBAGENT_CHILD": "1"}) is None
    assert len(caplog.records) == 1
    record = caplog.records[0]
    assert record.event == "forwarding.target_unresolved"
    assert record.checked == list(SUBAGENT_PARENT_SESSION_ENV_CANDIDATES)
    for key in SUBAGENT_PARENT_SESSION_ENV_CANDIDATES:
        assert key in record.getMessage()


def test_prompter_from_env_without_parent_is_unavailable_not_denied(tmp_path, caplog) -> None:
    env = {"PI_SUBAGENT_CHILD": "1", "ASKGATE_FORWARDING_DIR": str(tmp_path)}
    with caplog.at_level(logging.WARNING, logger="askgate.forwarding"):
        prompter = ForwardingPrompter.from_env(current_session_id="child", env=env)
    assert len(caplog.records) == 1
    assert not prompter.available()
    reply = prompter.prompt(PromptRequest(request_id="r", surface="bash", value="x", message="m"))
    assert reply.state is PromptState.UNAVAILABLE
    assert "PI_SUBAGENT_PARENT_SESSION" in (reply.detail or "")
    assert list(tmp_path.iterdir()) == []  # nothing was written


def test_prompter_from_env_targets_the_parent(tmp_path) -> None:
    env = {
        "PI_SUBAGENT_CHILD": "1",
        "PI_SUBAGENT_PARENT_SESSION": "parent-9",
        "ASKGATE_FORWARDING_DIR": str(tmp_path),
    }
    prompter = ForwardingPrompter.from_env(current_session_id="child", env=env)
    assert prompter.target_session == "parent-9"
    assert prompter.layout.root == tmp_path
    # No heartbeat was ever published (as with a real pi parent): worth asking.
    assert prompter.available()


def test_default_root_precedence(tmp_path: Path) -> None:
    explicit = {"ASKGATE_FORWARDING_DIR": str(tmp_path / "x"), "PI_CODING_AGENT_DIR": "/pi"}
    assert default_forwarding_root(explicit) == tmp_path / "x"
    assert default_forwarding_root({"PI_CODING_AGENT_DIR": str(tmp_path)}) == (
        tmp_path / "sessions" / "permission-forwarding"
    )
    assert default_forwarding_root({}) == (
        Path.home() / ".pi" / "agent" / "sessions" / "permission-forwarding"
    )


@pytest.mark.parametrize(
    "placeholder", ["unknown", "Unknown", "UNKNOWN", " uNkNoWn ", "\tUnknown\n"]
)
def test_the_unknown_placeholder_in_any_case_is_not_a_forwarding_target(placeholder: str) -> None:
    """Seed 001: a parent session named `Unknown` would send the ask to nobody, and the child
    would wait out its whole budget; the placeholder is skipped in every spelling."""
    only = {"PI_AGENT_ROUTER_PARENT_SESSION_ID": placeholder}
    assert resolve_forwarding_target(False, True, "c", only) is None
    then_real = {**only, "PI_SUBAGENT_PARENT_SESSION": "parent-7"}
    assert resolve_forwarding_target(False, True, "c", then_real) == "parent-7"
    assert (
        resolve_forwarding_target(False, True, placeholder, {"PI_SUBAGENT_PARENT_SESSION": "p"})
        == "p"
    )
