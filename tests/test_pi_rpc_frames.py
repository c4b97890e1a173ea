"""The strict-LF frame codec: arbitrary chunking, U+2028, CRLF, garbage, bounds."""

from __future__ import annotations

import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.adapters.pi_rpc.frames import (
    AgentSettled,
    AgentStart,
    ExtensionUIRequest,
    ExtensionUIResponse,
    FrameDecoder,
    MessageUpdate,
    Prompt,
    Response,
    ToolExecutionEnd,
    UnknownFrame,
    encode,
    frame_type,
)

texts = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"), st.sampled_from(["\u2028", "\u2029", "\r", "\n", '"'])
    ),
    max_size=40,
)


@st.composite
def frames(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["message_update", "extension_ui_request", "response", "new"]))
    text = draw(texts)
    if kind == "message_update":
        return {
            "type": kind,
            "message": {"role": "assistant"},
            "assistantMessageEvent": {"type": "text_delta", "delta": text},
        }
    if kind == "extension_ui_request":
        return {"type": kind, "id": text or "x", "method": "select", "options": [text, "No"]}
    if kind == "response":
        return {"type": kind, "id": text, "command": "prompt", "success": True}
    return {"type": "some_future_event", "payload": text}


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for point in points:
        pieces.append(data[last:point])
        last = point
    pieces.append(data[last:])
    return pieces


def _as_dict(frame) -> dict:
    if isinstance(frame, UnknownFrame):
        return frame.fields
    return json.loads(encode(frame))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(frames(), max_size=12), st.lists(st.integers(min_value=0), max_size=20), st.booleans()
)
def test_any_chunking_round_trips(originals, cuts, crlf):
    end = b"\r\n" if crlf else b"\n"
    data = b"".join(
        json.dumps(f, ensure_ascii=False, separators=(",", ":")).encode() + end for f in originals
    )
    decoder = FrameDecoder()
    got = []
    for piece in _chunks(data, cuts):
        got.extend(decoder.feed(piece))
    got.extend(decoder.close())
    assert decoder.malformed == 0
    assert len(got) == len(originals)
    for frame, original in zip(got, originals, strict=True):
        assert frame_type(frame) == original["type"]
        decoded = _as_dict(frame)
        for key, value in original.items():
            assert decoded[key] == value


def test_line_separators_inside_strings_do_not_split():
    line = '{"type":"message_update","assistantMessageEvent":{"delta":"a\u2028b\u2029c"}}\n'
    frames_ = FrameDecoder().feed(line.encode())
    assert len(frames_) == 1
    assert isinstance(frames_[0], MessageUpdate)
    assert frames_[0].assistantMessageEvent["delta"] == "a\u2028b\u2029c"


def test_one_trailing_cr_is_stripped_and_only_one():
    decoder = FrameDecoder()
    got = decoder.feed(b'{"type":"agent_settled","aborted":true}\r\n')
    assert got == [AgentSettled(aborted=True)]
    # A CR-only line is a blank line after stripping: skipped, not malformed; a CR that
    # is not at the end of the line is kept (JSON reads it as whitespace here).
    assert decoder.feed(b"\r\n") == []
    assert decoder.feed(b'{"type":"agent_start"}\r \n') == [AgentStart()]
    assert decoder.malformed == 0


def test_final_unterminated_line_is_emitted_at_close():
    decoder = FrameDecoder()
    assert decoder.feed(b'{"type":"response","command":"prompt","success":true}') == []
    assert decoder.close() == [Response(command="prompt", success=True)]
    assert decoder.close() == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=30).filter(lambda b: b"\n" not in b), max_size=10))
def test_garbage_lines_are_counted_never_raised(garbage):
    good = b'{"type":"agent_start"}\n'
    decoder = FrameDecoder()
    got = decoder.feed(b"".join(g + b"\n" + good for g in garbage))
    got += decoder.close()
    assert sum(frame_type(f) == "agent_start" for f in got) == len(garbage)
    # Every non-blank garbage line is either counted as malformed or (if it happens to
    # be a JSON object with a type) decoded: nothing is lost silently, nothing raises.
    nonblank = [g for g in garbage if g.strip(b"\r") != b""]
    assert decoder.malformed + (len(got) - len(garbage)) == len(nonblank)


def test_non_frames_are_malformed():
    decoder = FrameDecoder()
    data = b'not json\n[1,2]\n42\n{"no_type":1}\n{"type":""}\n{"type":7}\n' + b"[" * 100_000 + b"\n"
    assert decoder.feed(data) == []
    assert decoder.malformed == 7


def test_unknown_types_and_misshapen_known_types_pass_through():
    decoder = FrameDecoder()
    got = decoder.feed(
        b'{"type":"brand_new","a":[1]}\n{"type":"response","success":"yes","command":1}\n'
    )
    assert got == [
        UnknownFrame("brand_new", {"type": "brand_new", "a": [1]}),
        UnknownFrame("response", {"type": "response", "success": "yes", "command": 1}),
    ]
    assert decoder.malformed == 0


def test_known_frames_ignore_new_fields():
    line = (
        b'{"type":"tool_execution_end","toolCallId":"c","toolName":"bash","isError":false,'
        b'"result":{"content":[],"structuredContent":{"k":1}},"durationMs":12}\n'
    )
    (frame,) = FrameDecoder().feed(line)
    assert isinstance(frame, ToolExecutionEnd)
    assert frame.durationMs == 12
    assert frame.result["structuredContent"] == {"k": 1}


def test_line_length_is_bounded_across_chunks():
    decoder = FrameDecoder(max_line_bytes=100)
    big = b'{"type":"agent_start","pad":"' + b"x" * 300 + b'"}'
    got = []
    for i in range(0, len(big), 7):
        got += decoder.feed(big[i : i + 7])
    got += decoder.feed(b'\n{"type":"agent_start"}\n')
    assert [frame_type(f) for f in got] == ["agent_start"]
    assert decoder.malformed == 1
    # In one chunk too.
    got = decoder.feed(big + b'\n{"type":"agent_end"}\n')
    assert [frame_type(f) for f in got] == ["agent_end"]
    assert decoder.malformed == 2


def test_encoder_is_compact_json_and_one_newline():
    data = encode(ExtensionUIResponse(id="u1", value="Yes, for this session"))
    assert data == b'{"type":"extension_ui_response","id":"u1","value":"Yes, for this session"}\n'
    assert encode(ExtensionUIResponse(id="u2", cancelled=True)).count(b"\n") == 1
    assert encode(Prompt(id="1", message="a\nb\u2028")) == (
        '{"type":"prompt","message":"a\\nb\u2028","id":"1"}\n'.encode()
    )
    # The decoder reads what the encoder writes.
    (frame,) = FrameDecoder().feed(encode(ExtensionUIRequest(id="d", method="confirm")))
    assert frame == ExtensionUIRequest(id="d", method="confirm")
    assert msgspec.json.decode(encode({"type": "x"})) == {"type": "x"}
