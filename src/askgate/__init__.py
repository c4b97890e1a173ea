"""askgate: a permission gateway for AI coding agents.

The public surface, loaded on first use so that `import askgate` (which every hook
process does) stays cheap:

    from askgate import Gate, Policy, ToolRequest
    gate = Gate(Policy.load("/path/to/project"))
    request = ToolRequest(tool="Bash", input={"command": "make"}, cwd="/path/to/project")
    outcome = gate.decide(request)
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`: every hook process imports this package

__version__ = "0.1.0"

_LAZY = {
    "Action": "askgate.policy.model",
    "AuditLog": "askgate.audit",
    "Decision": "askgate.policy.model",
    "EventBus": "askgate.events",
    "Gate": "askgate.gate",
    "NoPrompter": "askgate.prompt",
    "Outcome": "askgate.outcome",
    "Policy": "askgate.policy.engine",
    "PromptReply": "askgate.prompt",
    "PromptRequest": "askgate.prompt",
    "PromptState": "askgate.prompt",
    "Prompter": "askgate.prompt",
    "Resolution": "askgate.outcome",
    "Surface": "askgate.policy.model",
    "ToolRequest": "askgate.outcome",
    "analyze": "askgate.policy.shell",
    "default_prompter": "askgate.prompters.choose",
}

__all__ = [
    "Action",
    "AuditLog",
    "Decision",
    "EventBus",
    "Gate",
    "NoPrompter",
    "Outcome",
    "Policy",
    "PromptReply",
    "PromptRequest",
    "PromptState",
    "Prompter",
    "Resolution",
    "Surface",
    "ToolRequest",
    "__version__",
    "analyze",
    "default_prompter",
]

if TYPE_CHECKING:
    from typing import Any

    from askgate.audit import AuditLog
    from askgate.events import EventBus
    from askgate.gate import Gate
    from askgate.outcome import Outcome, Resolution, ToolRequest
    from askgate.policy.engine import Policy
    from askgate.policy.model import Action, Decision, Surface
    from askgate.policy.shell import analyze
    from askgate.prompt import NoPrompter, Prompter, PromptReply, PromptRequest, PromptState
    from askgate.prompters.choose import default_prompter


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'askgate' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
