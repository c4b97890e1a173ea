"""pi's RPC framing as a sans-IO codec: bytes in, frames out; frames in, bytes out.

pi `--mode rpc` speaks strict JSONL (reference pi-ecosystem.md §3.1): one JSON object
per line, lines end at ``\\n`` and nowhere else. U+2028 and U+2029 are legal inside JSON
strings, so ``str.splitlines()`` (like Node's readline) would cut frames in half; this
decoder splits bytes on ``b"\\n"`` only, strips one trailing ``\\r``, emits a final
unterminated line when the stream ends, bounds the length of a line, and counts
malformed lines instead of raising.

Frames whose ``type`` is known decode into the typed structs below; any other object
with a string ``type`` (a newer pi's event, an extension's frame) becomes an
`UnknownFrame` that keeps every field, so subscribers see it and nothing breaks when
pi grows. Known frames ignore fields they do not name (pi 1.6 added several).
"""

from __future__ import annotations

from typing import Any

import msgspec

# A line longer than this is dropped as malformed (pi's tool results are truncated far
# below it; a runaway worker must not grow our memory without bound).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


class _Frame(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


# ------------------------------------------------------------------ worker -> host


class Response(_Frame, frozen=True, tag="response"):
    """The answer to a command; `id` echoes the command's id."""

    command: str = ""
    success: bool = False
    id: str | None = None
    data: Any = None
    error: str | None = None


class ExtensionUIRequest(_Frame, frozen=True, tag="extension_ui_request"):
    """An extension wants the host's UI: a dialog (select, confirm, input, editor) that
    waits for an `extension_ui_response`, or a fire-and-forget update."""

    id: str
    method: str
    title: str | None = None
    message: str | None = None
    options: list[str] | None = None
    placeholder: str | None = None
    prefill: str | None = None
    timeout: float | None = None
    notifyType: str | None = None
    statusKey: str | None = None
    statusText: str | None = None
    widgetKey: str | None = None
    text: str | None = None


class AgentStart(_Frame, frozen=True, tag="agent_start"):
    pass


class AgentEnd(_Frame, frozen=True, tag="agent_end"):
    messages: list[Any] = []


class AgentSettled(_Frame, frozen=True, tag="agent_settled"):
    """pi 1.6+: sent after `agent_end` once nothing more is queued."""

    aborted: bool = False


class TurnStart(_Frame, frozen=True, tag="turn_start"):
    pass


class TurnEnd(_Frame, frozen=True, tag="turn_end"):
    message: Any = None
    toolResults: list[Any] = []


class MessageStart(_Frame, frozen=True, tag="message_start"):
    message: Any = None


class MessageEnd(_Frame, frozen=True, tag="message_end"):
    message: Any = None


class MessageUpdate(_Frame, frozen=True, tag="message_update"):
    message: Any = None
    assistantMessageEvent: Any = None


class ToolExecutionStart(_Frame, frozen=True, tag="tool_execution_start"):
    toolCallId: str = ""
    toolName: str = ""
    args: Any = None


class ToolExecutionUpdate(_Frame, frozen=True, tag="tool_execution_update"):
    toolCallId: str = ""
    toolName: str = ""
    partialResult: Any = None


class ToolExecutionEnd(_Frame, frozen=True, tag="tool_execution_end"):
    toolCallId: str = ""
    toolName: str = ""
    result: Any = None
    isError: bool = False
    durationMs: float | None = None


class ExtensionError(_Frame, frozen=True, tag="extension_error"):
    extensionPath: str | None = None
    event: str | None = None
    error: str | None = None


KnownFrame = (
    Response
    | ExtensionUIRequest
    | AgentStart
    | AgentEnd
    | AgentSettled
    | TurnStart
    | TurnEnd
    | MessageStart
    | MessageEnd
    | MessageUpdate
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | ExtensionError
)


class UnknownFrame(msgspec.Struct, frozen=True):
    """A frame of a type this codec does not model (or whose known shape it breaks):
    passed to subscribers as is."""

    type: str
    fields: dict[str, Any]


Frame = KnownFrame | UnknownFrame

# ------------------------------------------------------------------ host -> worker


class _Command(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True):
    id: str | None = None


class Prompt(_Command, frozen=True, tag="prompt"):
    message: str
    streamingBehavior: str | None = None


class Abort(_Command, frozen=True, tag="abort"):
    pass


class GetState(_Command, frozen=True, tag="get_state"):
    pass


class GetLastAssistantText(_Command, frozen=True, tag="get_last_assistant_text"):
    pass


class Steer(_Command, frozen=True, tag="steer"):
    """A message for the running agent, delivered after the current turn's tool calls and
    before its next model call (pi answers `{"disposition": "queued" | "handled"}`)."""

    message: str
    images: list[Any] | None = None


class FollowUp(_Command, frozen=True, tag="follow_up"):
    """A message processed once the agent has no more tool calls or steering messages."""

    message: str
    images: list[Any] | None = None


class ExtensionUIResponse(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="type",
    tag="extension_ui_response",
    omit_defaults=True,
):
    """The host's answer to a dialog: exactly one of value, confirmed, cancelled."""

    id: str
    value: str | None = None
    confirmed: bool | None = None
    cancelled: bool | None = None


Command = Prompt | Steer | FollowUp | Abort | GetState | GetLastAssistantText

_encoder = msgspec.json.Encoder()


def encode(frame: msgspec.Struct | dict[str, Any]) -> bytes:
    """Compact JSON and a single ``\\n`` (pi's `serializeJsonLine`)."""
    return _encoder.encode(frame) + b"\n"


# ------------------------------------------------------------------ decoder


class FrameDecoder:
    """Feed bytes as they arrive; get every complete frame back.

    Never raises on input: a line that is not a JSON object with a string ``type``, or
    that exceeds `max_line_bytes`, is dropped and counted in `malformed`. Blank lines are
    skipped without counting (a stray newline is not a frame).
    """

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self.malformed = 0
        self.decoded = 0
        self._pending: list[bytes] = []  # pieces of the current, unterminated line
        self._pending_size = 0
        self._discarding = False  # inside an over-long line: drop until its newline
        self._typed = msgspec.json.Decoder(KnownFrame)
        self._generic = msgspec.json.Decoder()

    def feed(self, data: bytes) -> list[Frame]:
        if not data:
            return []
        lines = data.split(b"\n")
        tail = lines.pop()  # after the last newline: the start of the next line
        frames: list[Frame] = []
        if lines:
            if self._pending or self._discarding:
                first = self._take_pending(lines[0])
                if first is not None:
                    self._line(first, frames)
                del lines[0]
            self._lines(lines, frames)
        self._hold(tail)
        return frames

    def close(self) -> list[Frame]:
        """End of stream: the final unterminated line, if any, is a frame too."""
        frames: list[Frame] = []
        last = self._take_pending(b"")
        if last is not None and last:
            self._line(last, frames)
        return frames

    # -- internals

    def _hold(self, piece: bytes) -> None:
        if not piece or self._discarding:
            return
        self._pending_size += len(piece)
        if self._pending_size > self.max_line_bytes:
            self._pending.clear()
            self._pending_size = 0
            self._discarding = True
            self.malformed += 1
            return
        self._pending.append(piece)

    def _take_pending(self, end: bytes) -> bytes | None:
        """Join the held pieces with `end`; None when the line was already dropped."""
        if self._discarding:
            self._discarding = False
            return None
        if not self._pending:
            return end
        self._pending.append(end)
        line = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        return line

    def _lines(self, lines: list[bytes], out: list[Frame]) -> None:
        """The hot loop: well-formed known frames decode inline; anything else (blank,
        CR-terminated, over-long, unknown or malformed) takes the careful path."""
        decode = self._typed.decode
        append = out.append
        limit = self.max_line_bytes
        decoded = 0
        for line in lines:
            if line and line[-1] != 13 and len(line) <= limit:
                try:
                    append(decode(line))
                    decoded += 1
                    continue
                except (msgspec.DecodeError, RecursionError):
                    pass  # ValidationError is a DecodeError: unknown types land here too
            self._line(line, out)
        self.decoded += decoded

    def _line(self, line: bytes, out: list[Frame]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            return
        if len(line) > self.max_line_bytes:
            self.malformed += 1
            return
        try:
            out.append(self._typed.decode(line))
            self.decoded += 1
            return
        except msgspec.ValidationError:
            pass  # valid JSON, but not a known frame: maybe an unknown type
        except (msgspec.DecodeError, RecursionError):
            self.malformed += 1
            return
        frame = self._unknown(line)
        if frame is None:
            self.malformed += 1
        else:
            out.append(frame)
            self.decoded += 1

    def _unknown(self, line: bytes) -> UnknownFrame | None:
        try:
            value = self._generic.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        kind = value.get("type")
        if not isinstance(kind, str) or not kind:
            return None
        return UnknownFrame(kind, value)


def frame_type(frame: Frame) -> str:
    """The wire ``type`` of any frame."""
    if isinstance(frame, UnknownFrame):
        return frame.type
    return type(frame).__struct_config__.tag  # type: ignore[return-value]
