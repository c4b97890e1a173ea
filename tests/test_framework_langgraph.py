"""LangChain v1 / LangGraph behind the gate: the real `create_agent` loop with the
AskgateMiddleware, driven by LangChain's own fake chat model (scripted tool calls), asserting
what ran (files in the project), what the model was told, and the review log."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework_support import require

require("langgraph", "langgraph")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

from askgate.frameworks.langgraph import AskgateMiddleware  # noqa: E402
from askgate.prompters.base import PromptState  # noqa: E402
from conftest import ScriptedPrompter  # noqa: E402
from framework_support import delete_db, make_world, run_shell  # noqa: E402


class ToolCallingFake(GenericFakeChatModel):
    """LangChain's fake chat model, which `create_agent` can bind tools to."""

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        return self


def _agent(world, calls: list[tuple[str, dict]], **middleware_kw):
    project = world.project

    @tool
    def shell(command: str) -> str:
        """Run a shell command in the project."""
        return run_shell(project, command)

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    @tool("delete_db")
    def delete_db_tool() -> str:
        """Delete the database."""
        return delete_db(project)

    script = [
        AIMessage(
            content="",
            tool_calls=[
                {"name": n, "args": a, "id": f"call-{i}"} for i, (n, a) in enumerate(calls)
            ],
        ),
        AIMessage(content="finished"),
    ]
    model = ToolCallingFake(messages=iter(script))
    return create_agent(
        model,
        [shell, get_weather, delete_db_tool],
        middleware=[AskgateMiddleware(world.guard, **middleware_kw)],
        checkpointer=InMemorySaver(),
    )


def _tool_messages(result) -> dict[str, ToolMessage]:
    return {m.name: m for m in result["messages"] if isinstance(m, ToolMessage)}


CONFIG = {"configurable": {"thread_id": "t1"}}


def test_allowed_tools_run_and_denied_ones_do_not_and_the_model_hears_why(tmp_path) -> None:
    world = make_world(tmp_path, "langgraph")
    agent = _agent(
        world,
        [("shell", {"command": "touch ran"}), ("get_weather", {"city": "Oslo"}), ("delete_db", {})],
    )
    result = agent.invoke({"messages": [("user", "go")]}, CONFIG)
    assert world.ran("ran")  # allowed: the tool ran
    assert not world.ran("db-deleted")  # denied: it did not
    messages = _tool_messages(result)
    assert "databases stay" in messages["delete_db"].content
    assert messages["delete_db"].status == "error"
    assert messages["get_weather"].content == "sunny in Oslo"
    clients = {r.get("client") for r in world.records()}
    assert clients == {"langgraph"}


def test_a_compound_command_with_a_denied_part_does_not_run(tmp_path) -> None:
    world = make_world(tmp_path, "langgraph")
    (world.project / "keep").write_text("x")
    agent = _agent(world, [("shell", {"command": "touch ran && rm keep"})])
    result = agent.invoke({"messages": [("user", "go")]}, CONFIG)
    assert not world.ran("ran") and world.ran("keep")
    assert "no deleting here" in _tool_messages(result)["shell"].content


def test_an_ask_pauses_the_graph_and_an_approval_bound_to_the_call_resumes_it(tmp_path) -> None:
    world = make_world(tmp_path, "langgraph")
    agent = _agent(world, [("shell", {"command": "make touch-it; touch made"})])
    paused = agent.invoke({"messages": [("user", "go")]}, CONFIG)
    (interrupt,) = paused["__interrupt__"]
    assert interrupt.value["askgate"] == "approval" and not world.ran("made")
    token = interrupt.value["token"]
    agent.invoke(Command(resume={"approved": True, "token": token}), CONFIG)
    assert world.ran("made")  # approved: ran once the graph resumed
    resolutions = [r.get("resolution") for r in world.records()]
    assert "user_approved" in resolutions


@pytest.mark.parametrize(
    "resume",
    [
        {"approved": False, "reason": "not today"},
        {"approved": True, "token": "0" * 64},  # an approval for another call
        {"approved": True},  # no token at all
        "yes",  # not an approval
    ],
)
def test_an_ask_denied_or_answered_for_another_call_does_not_run(tmp_path, resume) -> None:
    world = make_world(tmp_path, "langgraph")
    agent = _agent(world, [("shell", {"command": "make x; touch made"})])
    paused = agent.invoke({"messages": [("user", "go")]}, CONFIG)
    (interrupt,) = paused["__interrupt__"]
    if isinstance(resume, dict) and resume.get("approved") is False:
        resume = {**resume, "token": interrupt.value["token"]}
    result = agent.invoke(Command(resume=resume), CONFIG)
    assert not world.ran("made")
    assert _tool_messages(result)["shell"].status == "error"


def test_an_ask_through_the_prompter_chain_runs_when_approved_and_not_when_unanswered(
    tmp_path: Path,
) -> None:
    approved = make_world(tmp_path / "a", "langgraph", ScriptedPrompter([PromptState.APPROVED]))
    _agent(approved, [("shell", {"command": "make t; touch made"})], ask="prompter").invoke(
        {"messages": [("user", "go")]}, CONFIG
    )
    assert approved.ran("made")
    silent = make_world(tmp_path / "b", "langgraph", ScriptedPrompter([PromptState.TIMED_OUT]))
    _agent(silent, [("shell", {"command": "make t; touch made"})], ask="prompter").invoke(
        {"messages": [("user", "go")]}, CONFIG
    )
    assert not silent.ran("made")


def test_askgate_failing_denies(tmp_path) -> None:
    world = make_world(tmp_path, "langgraph")

    def broken(request):  # type: ignore[no-untyped-def]
        raise RuntimeError("policy exploded")

    world.guard.gate.preflight = broken  # type: ignore[method-assign]
    agent = _agent(world, [("shell", {"command": "touch ran"})])
    result = agent.invoke({"messages": [("user", "go")]}, CONFIG)
    assert not world.ran("ran")
    assert "askgate could not decide" in _tool_messages(result)["shell"].content
