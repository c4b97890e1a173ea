"""Google ADK behind the gate: a real InMemoryRunner with the AskgatePlugin over an LlmAgent,
driven by a scripted `BaseLlm` (ADK's model interface: a stand-in for Gemini, which cannot be
reached here), asserting what ran."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from framework_support import delete_db, make_world, require, run_shell

require("google.adk", "google-adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

from askgate.frameworks.google_adk import AskgatePlugin  # noqa: E402
from askgate.prompters.base import PromptState  # noqa: E402
from conftest import ScriptedPrompter  # noqa: E402

SEEN: list[Any] = []
CONFIRMATION = "adk_request_confirmation"


class ScriptedLlm(BaseLlm):
    """First turn: the scripted calls; after a tool result: a final text."""

    calls: list[tuple[str, dict]] = []  # noqa: RUF012 - a pydantic field

    async def generate_content_async(self, llm_request, stream=False):  # type: ignore[no-untyped-def]
        SEEN.append(llm_request.contents)
        last = llm_request.contents[-1].parts if llm_request.contents else []
        if any(p.function_response for p in last):
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text="finished")])
            )
            return
        parts = [
            types.Part(function_call=types.FunctionCall(name=n, args=a, id=f"c{i}"))
            for i, (n, a) in enumerate(self.calls)
        ]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def _run(world, calls, *, answer=None, **plugin_kw) -> None:
    """Run once; with `answer(confirmation_args) -> (confirmed, payload)`, answer ADK's
    confirmation request in a second turn, as an app would."""
    project = world.project

    def shell(command: str) -> str:
        """Run a shell command in the project."""
        return run_shell(project, command)

    def delete_database() -> str:
        """Delete the database."""
        return delete_db(project)

    delete_database.__name__ = "delete_db"
    agent = LlmAgent(
        name="dev", model=ScriptedLlm(model="scripted", calls=calls), tools=[shell, delete_database]
    )
    plugin = AskgatePlugin(world.guard, **plugin_kw)
    runner = InMemoryRunner(app=App(name="askgate_test", root_agent=agent, plugins=[plugin]))

    async def go() -> None:
        await runner.session_service.create_session(
            app_name=runner.app_name, user_id="u", session_id="s"
        )
        message = types.Content(role="user", parts=[types.Part(text="go")])
        requests = []
        async for event in runner.run_async(user_id="u", session_id="s", new_message=message):
            requests += [c for c in event.get_function_calls() if c.name == CONFIRMATION]
        if answer is None:
            return
        (request,) = requests
        confirmed, payload = answer(request.args)
        reply = types.Part(
            function_response=types.FunctionResponse(
                name=CONFIRMATION,
                id=request.id,
                response={"confirmed": confirmed, "payload": payload},
            )
        )
        second = types.Content(role="user", parts=[reply])
        async for _ in runner.run_async(user_id="u", session_id="s", new_message=second):
            pass

    SEEN.clear()
    asyncio.run(go())


def _told() -> str:
    return json.dumps([c.model_dump(mode="json") for c in SEEN[-1]])


def test_allowed_runs_denied_does_not_and_the_model_hears_why(tmp_path: Path) -> None:
    world = make_world(tmp_path, "google-adk")
    _run(world, [("shell", {"command": "touch ran"}), ("delete_db", {})])
    assert world.ran("ran") and not world.ran("db-deleted")
    assert "databases stay" in _told()
    assert {r.get("client") for r in world.records()} == {"google-adk"}


def test_a_compound_command_with_a_denied_part_does_not_run(tmp_path: Path) -> None:
    world = make_world(tmp_path, "google-adk")
    (world.project / "keep").write_text("x")
    _run(world, [("shell", {"command": "touch ran || rm keep"})])
    assert not world.ran("ran") and world.ran("keep")


def test_an_ask_requests_adks_confirmation_and_does_not_run_meanwhile(tmp_path: Path) -> None:
    world = make_world(tmp_path, "google-adk")
    _run(world, [("shell", {"command": "make x; touch made"})])
    assert not world.ran("made")
    assert "waiting for a human" in _told() or "adk_request_confirmation" in _told()


def _payload(args: dict) -> dict:
    return args["toolConfirmation"]["payload"]


def test_a_confirmation_with_the_calls_token_runs_it(tmp_path: Path) -> None:
    world = make_world(tmp_path, "google-adk")
    _run(
        world, [("shell", {"command": "make x; touch made"})], answer=lambda a: (True, _payload(a))
    )
    assert world.ran("made")


def test_a_confirmation_without_the_calls_token_or_refused_does_not_run(tmp_path: Path) -> None:
    forged = make_world(tmp_path / "a", "google-adk")
    _run(forged, [("shell", {"command": "make x; touch made"})], answer=lambda a: (True, {}))
    assert not forged.ran("made")
    refused = make_world(tmp_path / "b", "google-adk")
    _run(
        refused,
        [("shell", {"command": "make x; touch made"})],
        answer=lambda a: (False, _payload(a)),
    )
    assert not refused.ran("made")


def test_asks_through_the_prompter_chain(tmp_path: Path) -> None:
    yes = make_world(tmp_path / "a", "google-adk", ScriptedPrompter([PromptState.APPROVED]))
    _run(yes, [("shell", {"command": "make x; touch made"})], ask="prompter")
    assert yes.ran("made")
    silent = make_world(tmp_path / "b", "google-adk", ScriptedPrompter([PromptState.TIMED_OUT]))
    _run(silent, [("shell", {"command": "make x; touch made"})], ask="prompter")
    assert not silent.ran("made")
