"""Area: the Python framework adapters' overhead over a bare `Gate.decide`.

Each row times one tool call's decision through the adapter's own hook (the LangGraph
middleware's wrap_tool_call, the pydantic-ai capability's before_tool_execute, the OpenAI
Agents input guardrail, the ADK plugin's before_tool_callback, a smolagents guarded
forward) against `Gate.decide` on the equivalent request, interleaved in one run, with the
same allowed shell command (the tool body itself does nothing). Target: ≤ 20 µs p50 added.
A framework that is not installed is reported as such (`pip install askgate[frameworks]`).
"""

from __future__ import annotations

import asyncio
import importlib
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import AreaReport, Budget, Figure, Row, sample_interleaved

NAME = "frameworks"
TITLE = "Python framework adapters: added time per tool call over Gate.decide"
TARGET_US = 20.0
COMMAND = "git status && echo ok"
ASYNC_HOOKS = frozenset({"pydantic-ai", "google-adk"})


def _guard(tmp: str) -> Any:
    from askgate.frameworks.core import Guard
    from askgate.gate import Gate
    from askgate.policy.engine import Policy
    from askgate.policy.model import Action, Origin, Rule, Surface

    project = Path(tmp) / "project"
    project.mkdir()
    rules = [
        Rule(surface=Surface.BASH, pattern=p, action=Action.ALLOW, origin=Origin.USER, rank=10)
        for p in ("git status", "echo *")
    ]
    policy = Policy(rules, project_root=str(project), env={"HOME": tmp, "PATH": "/usr/bin:/bin"})
    return Guard(Gate(policy), client="bench", cwd=str(project))


def _callers(guard: Any) -> dict[str, Callable[[int], object]]:
    """One hook call per framework that is installed."""
    callers: dict[str, Callable[[int], object]] = {}
    args = {"command": COMMAND}

    def bare(i: int) -> object:
        request = guard.request_for("shell", args, f"c{i}")
        return guard.gate.decide(request)

    callers["Gate.decide"] = bare
    bare_loop = asyncio.new_event_loop()

    async def bare_async(i: int) -> object:
        return bare(i)

    # The async hooks' peer: the same decision awaited on an event loop, so the row shows
    # the adapter, not `run_until_complete`.
    callers["Gate.decide, awaited"] = lambda i: bare_loop.run_until_complete(bare_async(i))

    def core(i: int) -> object:
        return guard.decide_call("shell", args, f"c{i}")

    callers["decide_call"] = core

    if _has("langchain"):
        from askgate.frameworks.langgraph import AskgateMiddleware

        middleware = AskgateMiddleware(guard)

        class _Request:
            def __init__(self, i: int) -> None:
                self.tool_call = {"name": "shell", "args": args, "id": f"c{i}"}

        callers["langgraph"] = lambda i: middleware.wrap_tool_call(_Request(i), lambda r: r)
    if _has("pydantic_ai"):
        from pydantic_ai.messages import ToolCallPart

        from askgate.frameworks.pydantic_ai import AskgateCapability

        capability = AskgateCapability(guard)
        loop = asyncio.new_event_loop()

        def pydantic(i: int) -> object:
            call = ToolCallPart("shell", args, tool_call_id=f"c{i}")
            hook = capability.before_tool_execute(None, call=call, tool_def=None, args=args)
            return loop.run_until_complete(hook)

        callers["pydantic-ai"] = pydantic
    if _has("google.adk"):
        from askgate.frameworks.google_adk import AskgatePlugin

        plugin = AskgatePlugin(guard)
        adk_loop = asyncio.new_event_loop()

        class _Tool:
            name = "shell"

        class _Context:
            def __init__(self, i: int) -> None:
                self.function_call_id = f"c{i}"

        def adk(i: int) -> object:
            hook = plugin.before_tool_callback(
                tool=_Tool(), tool_args=args, tool_context=_Context(i)
            )
            return adk_loop.run_until_complete(hook)

        callers["google-adk"] = adk
    if _has("smolagents"):
        from askgate.frameworks.smolagents import protect_tool

        class _SmolTool:
            name = "shell"
            inputs = {"command": {}}  # noqa: RUF012

            def forward(self, command: str) -> str:
                return command

        smol = _SmolTool()
        protect_tool(smol, guard)
        callers["smolagents"] = lambda i: smol.forward(COMMAND)
    return callers


def _has(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    budget = (
        Budget(warmup=50, min_samples=200, max_samples=600, seconds=0.2)
        if quick
        else Budget(warmup=500, min_samples=3000, max_samples=20000, seconds=2.0)
    )
    with tempfile.TemporaryDirectory(prefix="askgate-bench-fw-") as tmp:
        callers = _callers(_guard(tmp))
        stats = sample_interleaved(
            {name: (call, budget) for name, call in callers.items()}, rounds=1 if quick else 5
        )
    rows = []
    notes = []
    for name, figure in stats.items():
        if name.startswith("Gate.decide"):
            continue
        peer = "Gate.decide, awaited" if name in ASYNC_HOOKS else "Gate.decide"
        base = stats[peer]
        added = (figure.median_ns - base.median_ns) / 1000
        rows.append(
            Row(
                measured=f"{name}: one allowed shell call ({added:+.1f} µs p50)",
                ours=Figure(name=name, stats=figure),
                peers=(Figure(name=peer, stats=base),),
                target=f"≤ {TARGET_US:g} µs added",
            )
        )
        notes.append(f"{name}: {added:+.1f} µs p50 over {peer}")
    missing = {"langgraph", "pydantic-ai", "google-adk", "smolagents"} - set(stats)
    if missing:
        notes.append("not installed: " + ", ".join(sorted(missing)))
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok" if not missing else "partial",
        rows=tuple(rows),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )
