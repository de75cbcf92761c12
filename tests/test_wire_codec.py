"""The wire codec and the reference server, in process: frames, value mapping, refusals."""

from __future__ import annotations

import io
import struct

import cbor2
import pytest

from convledger.envelope import EventDraft
from convledger.errors import (
    ERROR_KINDS,
    ConflictError,
    DuplicateError,
    InvalidInputError,
    LedgerError,
    NotFoundError,
    NotSupportedError,
    PurgedError,
    ReplayRefusedError,
)
from convledger.memory import MemoryStore
from convledger.wire import values
from convledger.wire.frames import (
    MAX_FRAME,
    EndOfStream,
    FrameError,
    FramingLost,
    decode_body,
    encode_frame,
    read_frame,
)
from convledger.wire.server import PROTOCOL_VERSION, WireServer


def frame(message: object) -> bytes:
    """A frame of any CBOR value, deterministic."""
    body = cbor2.dumps(message, canonical=True)
    return struct.pack(">I", len(body)) + body


def test_frame_round_trip_keeps_every_value() -> None:
    """A frame decodes to the map it encoded: bytes, bignums, floats and nesting included."""
    message = {
        "id": 3,
        "op": "append",
        "args": {"b": b"\x00\xff", "big": 2**70, "neg": -(2**64) - 1, "f": [1.0, 0.1, -0.0],
                 "t": "\U0001f600\x00", "n": None, "flags": [True, False]},
    }
    decoded = decode_body(encode_frame(message)[4:])
    assert decoded == message
    assert str(decoded["args"]["f"][2]) == "-0.0"


def test_frames_are_deterministic() -> None:
    """The same map encodes to the same bytes whatever its insertion order (WIR-002)."""
    one = encode_frame({"a": 1, "bb": 2.5, "c": {"y": 1, "x": 2}})
    two = encode_frame({"c": {"x": 2, "y": 1}, "bb": 2.5, "a": 1})
    assert one == two
    assert one[4:] == bytes.fromhex("a36161016163a2617802617901626262f94100")


@pytest.mark.parametrize(
    "body",
    [
        cbor2.dumps([1, 2]),
        cbor2.dumps({"id": 1}) + b"\x00",
        b"\xff",
        bytes.fromhex("a16161c11a514b67b0"),
        bytes.fromhex("bf616101ff"),
        bytes.fromhex("a16161f7"),
        bytes.fromhex("a2616101"),
    ],
    ids=["array", "trailing", "not-cbor", "date-tag", "indefinite", "undefined", "cut"],
)
def test_malformed_bodies_are_frame_errors(body: bytes) -> None:
    """Bodies that are not one map of the protocol's CBOR subset are refused (WIR-003, WIR-004)."""
    with pytest.raises(FrameError):
        decode_body(body)


def test_over_long_and_cut_frames_lose_framing() -> None:
    """A length over the limit or a stream cut inside a frame is FramingLost; a clean end is not."""
    with pytest.raises(FramingLost):
        read_frame(io.BytesIO(struct.pack(">I", MAX_FRAME + 1)))
    with pytest.raises(FramingLost):
        read_frame(io.BytesIO(encode_frame({"id": 1})[:-1]))
    with pytest.raises(EndOfStream):
        read_frame(io.BytesIO(b""))


@pytest.mark.parametrize(
    "value",
    ["\ud800", {"a": {1, 2}}, object()],
    ids=["lone-surrogate", "set", "object"],
)
def test_values_without_cbor_image_are_unencodable(value: object) -> None:
    """A lone surrogate, a set or a foreign object has no CBOR image (WIR-011)."""
    with pytest.raises(values.Unencodable):
        values.value_out(value)


def test_self_reference_is_unencodable() -> None:
    """A value that contains itself nests without end and has no CBOR image (WIR-011)."""
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(values.Unencodable):
        values.value_out(loop)


def test_drafts_travel_as_maps_and_anything_else_as_null() -> None:
    """A draft becomes its map with ignorable always present; a non-draft becomes null (WIR-012)."""
    draft = EventDraft("e", "state/set", "2024-05-01T12:00:00Z", {"v": 1.5})
    assert values.drafts_out([draft, {"eventId": "x"}]) == [
        {"eventId": "e", "kind": "state/set", "occurredAt": "2024-05-01T12:00:00Z",
         "payload": {"v": 1.5}, "schemaVersion": 1, "ignorable": False},
        None,
    ]
    assert values.drafts_in(values.drafts_out([draft])) == [draft]


def test_reply_envelopes_are_read_strictly() -> None:
    """An envelope reply with ignorable false or an extra member is a ReplyError (WIR-012)."""
    wire = {"schemaVersion": 1, "eventId": "e", "conversationId": "c", "seq": 1,
            "kind": "x/y", "occurredAt": "2024-05-01T12:00:00Z", "payload": None}
    assert values.envelope_in({**wire, "ignorable": True}).ignorable is True
    for broken in ({**wire, "ignorable": False}, {**wire, "extra": 1}, {"seq": 1}, [wire]):
        with pytest.raises(values.ReplyError):
            values.envelope_in(broken)


@pytest.mark.parametrize(
    "error",
    [
        ConflictError("m", requirement="LED-005", actual=7),
        DuplicateError("m", requirement="LED-003", identity="e"),
        NotFoundError("m", requirement="ARC-005"),
        InvalidInputError("m", requirement="LED-010", field="limit"),
        NotSupportedError("m", requirement="CAP-002", capability="purge"),
        PurgedError("m", requirement="TRN-092", conversation_id="c"),
        ReplayRefusedError("m", requirement="RPL-003", conversation_id="c", seq=2,
                           event_id="e", schema_version=1, event_kind="x/y"),
    ],
    ids=lambda error: error.kind,
)
def test_refusals_round_trip_with_kind_and_details(error: LedgerError) -> None:
    """error_in(error_out(e)) has e's class and the members checks read (WIR-008, ERR-005)."""
    again = values.error_in(decode_body(encode_frame({"e": values.error_out(error)})[4:])["e"])
    assert type(again) is type(error)
    assert again.kind == error.kind and again.requirement == error.requirement
    assert vars(again) == vars(error)


def test_internal_and_unknown_kinds_are_not_refusals() -> None:
    """A reply of kind internal, or of any kind outside ERR-001, is a ReplyError (WIR-008)."""
    assert values.INTERNAL not in ERROR_KINDS
    for kind in (values.INTERNAL, "oops", None):
        with pytest.raises(values.ReplyError):
            values.error_in({"kind": kind, "message": "m"})


def serve(*messages: object) -> tuple[int, list[dict[str, object]]]:
    """Run a reference server over the frames of ``messages``; its exit status and replies."""
    out = io.BytesIO()
    status = WireServer(MemoryStore).serve(
        io.BytesIO(b"".join(frame(m) for m in messages)), out
    )
    replies = []
    stream = io.BytesIO(out.getvalue())
    while True:
        try:
            replies.append(read_frame(stream))
        except EndOfStream:
            return status, replies


def test_server_requires_hello_first() -> None:
    """Before hello every request is invalid_input; after it the same request succeeds (WIR-006)."""
    status, replies = serve(
        {"id": 1, "op": "newStore"},
        {"id": 2, "op": "hello", "args": {"protocol": PROTOCOL_VERSION}},
        {"id": 3, "op": "newStore"},
    )
    assert status == 0
    assert replies[0]["error"]["kind"] == "invalid_input"  # type: ignore[index]
    assert replies[1]["ok"]["protocol"] == PROTOCOL_VERSION  # type: ignore[index]
    assert replies[2]["ok"]["store"] == 1  # type: ignore[index]


def test_server_answers_unknown_requests_not_supported() -> None:
    """An unknown request type is not_supported and the server goes on (WIR-007)."""
    status, replies = serve(
        {"id": 1, "op": "hello", "args": {"protocol": PROTOCOL_VERSION}},
        {"id": 2, "op": "newStore"},
        {"id": 3, "op": "launchRocket", "args": {"store": 1}},
        {"id": 4, "op": "head", "args": {"store": 1, "conversationId": "c"}},
    )
    assert status == 0
    assert replies[2]["error"]["kind"] == "not_supported"  # type: ignore[index]
    assert replies[3] == {"id": 4, "ok": 0}


def test_server_reports_a_store_bug_as_internal() -> None:
    """An exception that is not a refusal is answered with kind internal (WIR-008)."""

    class Exploding(MemoryStore):
        def _head(self, conversation_id: str) -> int:
            raise RuntimeError("disk on fire")

    server = WireServer(Exploding)
    replies = server.answer_frames(
        encode_frame({"id": 1, "op": "hello", "args": {"protocol": PROTOCOL_VERSION}})
        + encode_frame({"id": 2, "op": "newStore"})
        + encode_frame({"id": 3, "op": "head", "args": {"store": 1, "conversationId": "c"}})
    )
    assert replies[2]["error"]["kind"] == values.INTERNAL


def test_server_exits_2_when_framing_is_lost() -> None:
    """Input cut inside a frame gets an invalid_input reply with id null and exit status 2."""
    out = io.BytesIO()
    data = frame({"id": 1, "op": "hello", "args": {"protocol": PROTOCOL_VERSION}})
    status = WireServer(MemoryStore).serve(io.BytesIO(data + frame({"id": 2})[:-1]), out)
    stream = io.BytesIO(out.getvalue())
    assert read_frame(stream)["id"] == 1
    last = read_frame(stream)
    assert status == 2
    assert last["id"] is None and last["error"]["kind"] == "invalid_input"
