"""smolagents behind the gate: a real ToolCallingAgent loop over protected tools, driven by
a scripted smolagents `Model` (its documented model interface), asserting what ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from framework_support import delete_db, make_world, require, run_shell

require("smolagents", "smolagents")

from smolagents import Tool, ToolCallingAgent  # noqa: E402
from smolagents.models import (  # noqa: E402
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

from askgate.frameworks.smolagents import protect  # noqa: E402
from askgate.prompters.base import PromptState  # noqa: E402
from conftest import ScriptedPrompter  # noqa: E402


class ScriptedModel(Model):
    """Each scripted call in turn, then `final_answer`; what the model was shown is kept."""

    def __init__(self, calls: list[tuple[str, dict]]) -> None:
        super().__init__(model_id="scripted")
        self.calls = list(calls)
        self.seen: list[Any] = []

    def generate(
        self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kw
    ):  # type: ignore[no-untyped-def]
        self.seen.append(messages)
        name, args = self.calls.pop(0) if self.calls else ("final_answer", {"answer": "done"})
        call = ChatMessageToolCall(
            id=f"c{len(self.seen)}",
            type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=args),
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def _tools(project: Path) -> list[Tool]:
    class Shell(Tool):
        name = "shell"
        description = "Run a shell command in the project."
        inputs = {"command": {"type": "string", "description": "the command"}}  # noqa: RUF012
        output_type = "string"

        def forward(self, command: str) -> str:
            return run_shell(project, command)

    class DeleteDb(Tool):
        name = "delete_db"
        description = "Delete the database."
        inputs: dict[str, Any] = {}  # noqa: RUF012
        output_type = "string"

        def forward(self) -> str:
            return delete_db(project)

    return [Shell(), DeleteDb()]


def _run(world, calls) -> ScriptedModel:
    model = ScriptedModel(calls)
    agent = protect(
        ToolCallingAgent(tools=_tools(world.project), model=model, max_steps=5), world.guard
    )
    agent.run("go")
    return model


def _told(model: ScriptedModel) -> str:
    return json.dumps([str(m) for m in model.seen[-1]])


def test_allowed_runs_denied_does_not_and_the_model_hears_why(tmp_path: Path) -> None:
    world = make_world(tmp_path, "smolagents")
    model = _run(world, [("shell", {"command": "touch ran"}), ("delete_db", {})])
    assert world.ran("ran") and not world.ran("db-deleted")
    assert "databases stay" in _told(model)
    assert {r.get("client") for r in world.records()} == {"smolagents"}


def test_a_compound_command_with_a_denied_part_does_not_run(tmp_path: Path) -> None:
    world = make_world(tmp_path, "smolagents")
    (world.project / "keep").write_text("x")
    _run(world, [("shell", {"command": "touch ran && rm keep"})])
    assert not world.ran("ran") and world.ran("keep")


def test_asks_go_to_the_prompter_chain(tmp_path: Path) -> None:
    yes = make_world(tmp_path / "a", "smolagents", ScriptedPrompter([PromptState.APPROVED]))
    _run(yes, [("shell", {"command": "make x; touch made"})])
    assert yes.ran("made")
    silent = make_world(tmp_path / "b", "smolagents", ScriptedPrompter([PromptState.TIMED_OUT]))
    _run(silent, [("shell", {"command": "make x; touch made"})])
    assert not silent.ran("made")
