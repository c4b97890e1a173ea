"""OpenAI Agents SDK behind the gate: the real `Runner` loop over a protected Agent, driven
by a scripted `Model` (the SDK's documented model interface: a stand-in for the OpenAI API,
which cannot be reached here), asserting what ran — function tools and the next-generation
`ShellTool`, which the SDK's own tool guardrails skip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from framework_support import delete_db, make_world, require, run_shell

require("agents", "openai-agents")

from agents import Agent, ModelSettings, Runner, ShellTool, function_tool  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionShellToolCall,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from askgate.frameworks.openai_agents import protect  # noqa: E402
from askgate.prompters.base import PromptState  # noqa: E402
from conftest import ScriptedPrompter  # noqa: E402


class ScriptedModel(Model):
    """First turn: the scripted calls; afterwards: a final message. Every input it was given
    is kept, so a test can read what the model was told."""

    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions, input, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.inputs.append(input)
        if len(self.inputs) == 1:
            return ModelResponse(output=self.calls, usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="finished", annotations=[])
        message = ResponseOutputMessage(
            id="m1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError


def _call(name: str, args: dict, i: int) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", name=name, arguments=json.dumps(args), call_id=f"c{i}", id=f"f{i}"
    )


def _shell_call(commands: list[str]) -> ResponseFunctionShellToolCall:
    return ResponseFunctionShellToolCall.model_validate(
        {
            "type": "shell_call",
            "id": "s1",
            "call_id": "sc1",
            "status": "completed",
            "action": {"commands": commands, "timeout_ms": 10000, "max_output_length": 4000},
        }
    )


def _agent(world, calls: list[Any]) -> tuple[Agent, ScriptedModel]:
    project = world.project

    @function_tool
    def shell(command: str) -> str:
        """Run a shell command in the project."""
        return run_shell(project, command)

    @function_tool
    def get_weather(city: str) -> str:
        """The weather."""
        return f"sunny in {city}"

    @function_tool(name_override="delete_db")
    def delete_db_tool() -> str:
        """Delete the database."""
        return delete_db(project)

    def execute(request: Any) -> str:
        return "".join(run_shell(project, c) for c in request.data.action.commands)

    model = ScriptedModel(calls)
    agent = Agent(
        name="dev",
        model=model,
        model_settings=ModelSettings(),
        tools=[shell, get_weather, delete_db_tool, ShellTool(executor=execute)],
    )
    return protect(agent, world.guard), model


def _told(model: ScriptedModel) -> str:
    return json.dumps(model.inputs[-1], default=str)


def test_allowed_function_tools_run_denied_do_not_and_the_model_hears_why(tmp_path: Path) -> None:
    world = make_world(tmp_path, "openai-agents")
    calls = [
        _call("shell", {"command": "touch ran"}, 1),
        _call("get_weather", {"city": "Oslo"}, 2),
        _call("delete_db", {}, 3),
    ]
    agent, model = _agent(world, calls)
    result = Runner.run_sync(agent, "go")
    assert result.final_output == "finished"
    assert world.ran("ran") and not world.ran("db-deleted")
    assert "databases stay" in _told(model) and "sunny in Oslo" in _told(model)
    assert {r.get("client") for r in world.records()} == {"openai-agents"}


def test_the_shell_tool_the_guardrails_skip_is_decided_too(tmp_path: Path) -> None:
    world = make_world(tmp_path, "openai-agents")
    (world.project / "keep").write_text("x")
    agent, model = _agent(world, [_shell_call(["touch ran", "rm keep"])])
    Runner.run_sync(agent, "go")
    assert not world.ran("ran") and world.ran("keep")  # one denied command: none ran
    assert "no deleting here" in _told(model)


def test_an_allowed_shell_call_runs(tmp_path: Path) -> None:
    world = make_world(tmp_path, "openai-agents")
    agent, _ = _agent(world, [_shell_call(["touch ran", "echo ok"])])
    Runner.run_sync(agent, "go")
    assert world.ran("ran")


def test_asks_go_to_the_prompter_chain_bound_to_the_call(tmp_path: Path) -> None:
    yes = make_world(tmp_path / "a", "openai-agents", ScriptedPrompter([PromptState.APPROVED]))
    agent, _ = _agent(yes, [_call("shell", {"command": "make x; touch made"}, 1)])
    Runner.run_sync(agent, "go")
    assert yes.ran("made")
    silent = make_world(tmp_path / "b", "openai-agents", ScriptedPrompter([PromptState.TIMED_OUT]))
    agent, _ = _agent(silent, [_shell_call(["make x", "touch made"])])
    Runner.run_sync(agent, "go")
    assert not silent.ran("made")


def test_askgate_failing_rejects(tmp_path: Path) -> None:
    world = make_world(tmp_path, "openai-agents")

    def broken(request):  # type: ignore[no-untyped-def]
        raise RuntimeError("policy exploded")

    world.guard.gate.preflight = broken  # type: ignore[method-assign]
    agent, model = _agent(world, [_call("shell", {"command": "touch ran"}, 1)])
    Runner.run_sync(agent, "go")
    assert not world.ran("ran") and "askgate could not decide" in _told(model)
