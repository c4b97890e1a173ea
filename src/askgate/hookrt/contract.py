"""The adapter contract: what every agent's hook adapter is, and the values it trades.

An adapter is a thin translation, three functions and a few facts:

* `parse(data, process_cwd) -> HookCall`: the agent's hook JSON (a msgspec Struct of the
  agent's documented input) as the gate requests it stands for; `HookError` otherwise;
* `render(call, verdict) -> Reply`: the runtime's `Verdict` as the agent's own output
  (a msgspec Struct of the agent's documented output) and exit code;
* `failure(event, text) -> Reply`: the agent's "block" for an error (exit 2, or the deny
  JSON an agent reads instead of an exit code), `event` None when the input was unreadable;
* `ask_route(call, broken)`: where an ask goes (`"server"`: the approval server when one is
  configured, else the agent's own prompt; `"delegate"`: the agent's own prompt;
  `"refuse"`: nobody can be asked, so the gate resolves it as unavailable, a deny);
* `sandboxes(call)`: whether an allowed shell call of this event may be rewritten to run
  in the kernel sandbox.

Everything else (loading the policy, the gate, the approval server, the sandbox rewrite,
the audit record, failing closed) is the runtime's (askgate.hookrt.decide), once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import msgspec

from askgate.hookrt.reply import BLOCK, Reply, one_line

if TYPE_CHECKING:
    from askgate.outcome import ToolRequest

__all__ = [
    "BLOCK",
    "Adapter",
    "AskRoute",
    "HookCall",
    "HookError",
    "Reply",
    "Verdict",
    "decode",
    "encode",
    "one_line",
    "sniff_event",
]

MAX_INPUT_BYTES = 10 * 1024 * 1024
AskRoute = Literal["server", "delegate", "refuse"]
T = TypeVar("T")


class HookError(Exception):
    """A reason to block the call; `event` is the hook event when it is known."""

    def __init__(self, message: str, event: str | None = None) -> None:
        super().__init__(message)
        self.event = event


@dataclass
class HookCall:
    """One hook call, as the runtime needs it."""

    event: str
    requests: list[ToolRequest]
    cwd: str
    tool_name: str  # the agent's own name for the tool (the sandbox rewrites shell tools)
    tool_input: dict[str, Any]
    agent: str | None = None  # the policy's per-agent section, when the agent names one
    session: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # adapter-private facts


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """What the runtime decided, for `render`.

    `action`: allow, deny or ask. `origin`: `policy` (an outcome of the gate, possibly via
    the approval server), `delegated` (an ask left to the agent's own prompt), `sandbox`
    (an allowed call the sandbox cannot run as it stands: an ask, or a deny where the
    agent cannot ask). `reason` is the text to show; `updated_input` the agent's tool input
    rewritten to run in the kernel sandbox."""

    action: Literal["allow", "deny", "ask"]
    reason: str
    origin: Literal["policy", "delegated", "sandbox"] = "policy"
    updated_input: dict[str, Any] | None = None


class Adapter(Protocol):
    name: str  # as in `askgate hook NAME` and the relay's `agent=`
    client: str  # the review log's `client`
    prompt_budget: float | None  # seconds an approval-server ask may take (None: its own)

    def parse(self, data: bytes, process_cwd: str | None) -> HookCall: ...

    def render(self, call: HookCall, verdict: Verdict) -> Reply: ...

    def failure(self, event: str | None, text: str) -> Reply: ...

    def ask_route(self, call: HookCall, broken: bool) -> AskRoute: ...

    def sandboxes(self, call: HookCall) -> bool: ...


class _EventOnly(msgspec.Struct):
    hook_event_name: Any = None


def sniff_event(data: bytes) -> str | None:
    """The hook event `data` names, when it is a JSON object naming one as a string."""
    try:
        event = msgspec.json.decode(data, type=_EventOnly).hook_event_name
    except Exception:
        return None
    return event if isinstance(event, str) else None


def decode(data: bytes, kind: type[T], what: str) -> T:
    """`data` as `kind`, or a HookError naming what was wrong (and the event, if any)."""
    if len(data) > MAX_INPUT_BYTES:
        raise HookError(f"hook input is larger than {MAX_INPUT_BYTES} bytes")
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        raise HookError(
            f"hook input is not a {what} JSON object: {exc}", sniff_event(data)
        ) from None
    except msgspec.DecodeError as exc:
        raise HookError(f"hook input is not a {what} JSON object: {exc}") from None
    except RecursionError:
        raise HookError("hook input is JSON nested too deeply") from None


def encode(value: Any) -> bytes:
    """Compact JSON and a newline, non-ASCII as UTF-8. A lone surrogate (which msgspec
    refuses) takes the `json` path and is written as a `\\u` escape."""
    try:
        return msgspec.json.encode(value) + b"\n"
    except Exception:
        pass
    import json

    text = json.dumps(msgspec.to_builtins(value), ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace") + b"\n"
