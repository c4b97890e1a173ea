"""pydantic-ai behind the gate: the real Agent loop with AskgateCapability, driven by
pydantic-ai's own FunctionModel (scripted tool calls), asserting what ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework_support import delete_db, make_world, require, run_shell

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402

from askgate.frameworks.pydantic_ai import TOKEN_KEY, AskgateCapability  # noqa: E402
from askgate.prompters.base import PromptState  # noqa: E402
from conftest import ScriptedPrompter  # noqa: E402


def _agent(world, calls: list[tuple[str, dict]], **capability_kw) -> Agent:
    def script(messages, info):  # type: ignore[no-untyped-def]
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(name, args, tool_call_id=f"call-{i}")
                    for i, (name, args) in enumerate(calls)
                ]
            )
        return ModelResponse(parts=[TextPart("finished")])

    agent = Agent(
        FunctionModel(script),
        output_type=[str, DeferredToolRequests],
        capabilities=[AskgateCapability(world.guard, **capability_kw)],
    )
    project = world.project

    @agent.tool_plain
    def shell(command: str) -> str:
        """Run a shell command in the project."""
        return run_shell(project, command)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather."""
        return f"sunny in {city}"

    @agent.tool_plain(name="delete_db")
    def delete_db_tool() -> str:
        """Delete the database."""
        return delete_db(project)

    return agent


def _returns(result) -> dict[str, str]:
    return {
        part.tool_name: str(part.content)
        for message in result.all_messages()
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }


def test_allowed_runs_denied_does_not_and_the_model_hears_why(tmp_path: Path) -> None:
    world = make_world(tmp_path, "pydantic-ai")
    agent = _agent(
        world,
        [("shell", {"command": "touch ran"}), ("get_weather", {"city": "Oslo"}), ("delete_db", {})],
    )
    result = agent.run_sync("go")
    assert world.ran("ran") and not world.ran("db-deleted")
    returns = _returns(result)
    assert "databases stay" in returns["delete_db"]
    assert returns["get_weather"] == "sunny in Oslo"
    assert {r.get("client") for r in world.records()} == {"pydantic-ai"}


def test_a_compound_command_with_a_denied_part_does_not_run(tmp_path: Path) -> None:
    world = make_world(tmp_path, "pydantic-ai")
    (world.project / "keep").write_text("x")
    _agent(world, [("shell", {"command": "touch ran; rm keep"})]).run_sync("go")
    assert not world.ran("ran") and world.ran("keep")


def test_an_ask_defers_and_an_approval_with_the_calls_token_runs_it(tmp_path: Path) -> None:
    world = make_world(tmp_path, "pydantic-ai")
    agent = _agent(world, [("shell", {"command": "make x; touch made"})])
    first = agent.run_sync("go")
    assert isinstance(first.output, DeferredToolRequests) and not world.ran("made")
    (call,) = first.output.approvals
    token = first.output.metadata[call.tool_call_id][TOKEN_KEY]
    agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={call.tool_call_id: True}, metadata={call.tool_call_id: {TOKEN_KEY: token}}
        ),
    )
    assert world.ran("made")


@pytest.mark.parametrize("metadata", [{}, {TOKEN_KEY: "0" * 64}])
def test_an_approval_without_the_calls_token_does_not_run(tmp_path: Path, metadata) -> None:
    world = make_world(tmp_path, "pydantic-ai")
    agent = _agent(world, [("shell", {"command": "make x; touch made"})])
    first = agent.run_sync("go")
    (call,) = first.output.approvals
    agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={call.tool_call_id: True}, metadata={call.tool_call_id: metadata}
        ),
    )
    assert not world.ran("made")


def test_an_ask_through_the_prompter_chain(tmp_path: Path) -> None:
    yes = make_world(tmp_path / "a", "pydantic-ai", ScriptedPrompter([PromptState.APPROVED]))
    _agent(yes, [("shell", {"command": "make x; touch made"})], ask="prompter").run_sync("go")
    assert yes.ran("made")
    silent = make_world(tmp_path / "b", "pydantic-ai", ScriptedPrompter([PromptState.TIMED_OUT]))
    _agent(silent, [("shell", {"command": "make x; touch made"})], ask="prompter").run_sync("go")
    assert not silent.ran("made")
