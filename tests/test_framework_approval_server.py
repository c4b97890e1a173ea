"""A framework agent's ask answered through a real approval server (SQLite), as a team
would run it: approved on the server → the tool ran; nobody answering within the budget →
it did not. pydantic-ai's loop stands for every adapter here (they share `Guard.resolve`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from framework_support import make_world, require

require("pydantic_ai", "pydantic-ai")

from askgate.prompters.server import ServerPrompter  # noqa: E402
from server_support import AutoDecider, LiveServer  # noqa: E402
from test_framework_pydantic_ai import _agent  # noqa: E402


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    with LiveServer(tmp_path / "data", f"sqlite+aiosqlite:///{tmp_path / 'a.db'}") as server:
        yield server


@pytest.mark.parametrize(("decision", "budget", "ran"), [("allow", 30, True), (None, 1, False)])
def test_an_ask_answered_on_the_approval_server(tmp_path, live, decision, budget, ran) -> None:
    token = live.add_user("alice")
    world = make_world(
        tmp_path / "w", "pydantic-ai", ServerPrompter(live.url, token, budget=budget)
    )
    with AutoDecider(live, token, decision) as human:
        _agent(world, [("shell", {"command": "make x; touch made"})], ask="prompter").run_sync("go")
    assert world.ran("made") is ran
    assert len(human.seen) == 1  # the approval reached the server once, bound to this call
