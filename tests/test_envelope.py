"""The event envelope (spec chapter ``envelope.md``, ENV-001 .. ENV-010).

ENV-011 (a store returns the canonical bytes it was given) is tested with the
store in ``test_memory_store.py`` and ``test_archive.py``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import drafts, identifiers, json_values, occurred_ats, wire_event
from convledger import canonical, limits
from convledger.envelope import (
    REQUIRED_FIELDS,
    WIRE_FIELDS,
    Envelope,
    EventDraft,
    check_occurred_at,
    from_wire,
    validate_draft,
    validate_envelope,
)
from convledger.errors import InvalidInputError


def _wire(**members: object) -> dict[str, object]:
    """A valid wire envelope (seq 1) with some members replaced."""
    wire: dict[str, object] = dict(wire_event(1))
    wire.update(members)
    return wire


def _refused(wire: object) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as caught:
        from_wire(wire)
    assert caught.value.kind == "invalid_input"
    return caught.value


def test_valid_wire_envelope_accepted() -> None:
    """ENV-001: an object with exactly the seven members is an envelope."""
    envelope = from_wire(wire_event(3))
    assert envelope.seq == 3
    assert envelope.event_id == "e3"
    assert envelope.ignorable is False
    assert envelope.to_wire() == wire_event(3)


@pytest.mark.parametrize("member", sorted(REQUIRED_FIELDS))
def test_missing_member_refused(member: str) -> None:
    """ENV-001: an envelope missing any of the seven members is refused."""
    wire = wire_event(1)
    del wire[member]
    assert _refused(wire).requirement == "ENV-001"


@pytest.mark.parametrize("wire", [[], "envelope", None, 1, [("seq", 1)]], ids=repr)
def test_non_object_refused(wire: object) -> None:
    """ENV-001: an envelope is a JSON object."""
    _refused(wire)


@pytest.mark.parametrize("ignorable", [False, True])
def test_extra_member_refused(ignorable: bool) -> None:
    """ENV-002: any other member is refused, also on an ignorable envelope."""
    wire = _wire(extra="x")
    if ignorable:
        wire["ignorable"] = True
    assert _refused(wire).requirement == "ENV-002"


def test_extra_member_refused_on_unregistered_ignorable() -> None:
    """ENV-002: ignorable does not license unknown envelope members."""
    _refused(_wire(kind="future/kind", ignorable=True, traceId="t"))


@pytest.mark.parametrize("member", ["schemaVersion", "seq"])
@pytest.mark.parametrize(
    "value", [0, -1, 2**53, 2**64, 1.0, 1.5, "1", True, None, [1]], ids=repr
)
def test_counters_out_of_range_refused(member: str, value: object) -> None:
    """ENV-003, ENV-006: schemaVersion and seq are integers from 1 to 2**53 - 1."""
    expected = "ENV-003" if member == "schemaVersion" else "ENV-006"
    assert _refused(_wire(**{member: value})).requirement == expected


@pytest.mark.parametrize("member", ["schemaVersion", "seq"])
@pytest.mark.parametrize("value", [1, 2, canonical.MAX_SAFE_INTEGER])
def test_counters_in_range_accepted(member: str, value: int) -> None:
    """ENV-003, ENV-006: 1 and 2**53 - 1 are the bounds, both included."""
    envelope = from_wire(_wire(**{member: value}))
    assert envelope.to_wire()[member] == value


@pytest.mark.parametrize(
    ("member", "requirement"),
    [("eventId", "ENV-004"), ("conversationId", "ENV-005"), ("kind", "ENV-007")],
)
@pytest.mark.parametrize("value", ["", None, 1, ["a"], "a\ud800"], ids=repr)
def test_identifiers_refused(member: str, requirement: str, value: object) -> None:
    """ENV-004, ENV-005, ENV-007: empty, non-string or lone-surrogate identifiers are refused."""
    assert _refused(_wire(**{member: value})).requirement == requirement


@pytest.mark.parametrize("value", ["\x00", "a/b", "/", "é", "😀", " ", "a\x00b/ü"], ids=repr)
def test_unusual_identifiers_accepted_unchanged(value: str) -> None:
    """ENV-004, ENV-005: NUL, '/' and non-ASCII identifiers are accepted and kept."""
    envelope = from_wire(_wire(eventId=value, conversationId=value))
    assert envelope.event_id == value
    assert envelope.conversation_id == value


@given(identifiers, identifiers, identifiers)
def test_any_identifier_round_trips(event_id: str, conversation_id: str, kind: str) -> None:
    """ENV-004, ENV-005, ENV-007: any non-empty string round-trips through the wire form."""
    wire = _wire(eventId=event_id, conversationId=conversation_id, kind=kind)
    envelope = from_wire(canonical.decode(canonical.encode(wire)))
    assert (envelope.event_id, envelope.conversation_id, envelope.kind) == (
        event_id,
        conversation_id,
        kind,
    )


@pytest.mark.parametrize(
    "value",
    [
        "2024-05-01T12:00:00Z",
        "2024-05-01t12:00:00z",
        "2024-05-01T12:00:00.5+02:00",
        "2024-05-01T12:00:00.123456789-00:00",
        "2024-05-01T23:59:60Z",
        "2024-02-29T00:00:00+23:59",
        "2000-02-29T00:00:00Z",
        "0001-01-01T00:00:00Z",
    ],
)
def test_occurred_at_accepted_and_kept_exactly(value: str) -> None:
    """ENV-008: RFC 3339 date-times with an offset are accepted and kept as written."""
    envelope = from_wire(_wire(occurredAt=value))
    assert envelope.occurred_at == value
    assert envelope.to_wire()["occurredAt"] == value


@pytest.mark.parametrize(
    "value",
    [
        "2024-05-01T12:00:00",
        "2024-05-01 12:00:00Z",
        "2024-05-01T12:00Z",
        "2024-05-01",
        "2024-13-01T00:00:00Z",
        "2024-00-01T00:00:00Z",
        "2024-04-31T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z",
        "2024-05-01T24:00:00Z",
        "2024-05-01T12:60:00Z",
        "2024-05-01T12:00:61Z",
        "2024-05-01T12:00:00+24:00",
        "2024-05-01T12:00:00+02:60",
        "2024-05-01T12:00:00+0200",
        "2024-05-01T12:00:00.Z",
        "2024-05-01T12:00:00Z\n",
        " 2024-05-01T12:00:00Z",
        "２０２４-05-01T12:00:00Z",
        "",
        1714564800,
        None,
    ],
    ids=repr,
)
def test_occurred_at_refused(value: object) -> None:
    """ENV-008: anything but an RFC 3339 date-time with an offset is refused."""
    assert _refused(_wire(occurredAt=value)).requirement == "ENV-008"


@given(occurred_ats())
def test_generated_occurred_at_accepted(value: str) -> None:
    """ENV-008: every layout the strategy draws is accepted and kept as written."""
    assert from_wire(_wire(occurredAt=value)).occurred_at == value


@pytest.mark.parametrize(
    "payload", [math.nan, math.inf, 2**53, {"a": b"x"}, "\udc00", {1: 2}, {3}], ids=repr
)
def test_payload_without_canonical_form_refused(payload: object) -> None:
    """ENV-009: a payload that has no canonical form is refused."""
    assert _refused(_wire(payload=payload)).requirement == "ENV-009"


@given(json_values)
def test_any_json_payload_accepted(payload: Any) -> None:
    """ENV-009: any JSON value is a payload; the envelope does not judge its shape."""
    assert from_wire(_wire(payload=payload)).payload is payload


@pytest.mark.parametrize("value", [False, 1, 0, "true", None, [True]], ids=repr)
def test_ignorable_other_than_true_refused(value: object) -> None:
    """ENV-010: ignorable is the literal true when present."""
    assert _refused(_wire(ignorable=value)).requirement == "ENV-010"


def test_ignorable_written_only_when_true() -> None:
    """ENV-010: a non-ignorable envelope is written without the member."""
    envelope = from_wire(wire_event(1))
    assert "ignorable" not in envelope.to_wire()
    ignorable = from_wire(_wire(ignorable=True))
    assert ignorable.ignorable is True
    assert ignorable.to_wire()["ignorable"] is True


def test_wire_fields_are_the_spec_members() -> None:
    """ENV-001: the members are exactly the eight the spec lists."""
    assert set(WIRE_FIELDS) == {
        "schemaVersion",
        "eventId",
        "conversationId",
        "seq",
        "kind",
        "occurredAt",
        "payload",
        "ignorable",
    }
    assert set(WIRE_FIELDS) - REQUIRED_FIELDS == {"ignorable"}


@given(drafts())
def test_wire_round_trip(draft: EventDraft) -> None:
    """ENV-001 .. ENV-010: an envelope survives to_wire, canonical bytes and from_wire."""
    envelope = Envelope.from_draft(draft, "conv", 7)
    data = envelope.canonical_bytes()
    again = from_wire(canonical.decode(data))
    assert again.canonical_bytes() == data
    assert again.occurred_at == draft.occurred_at
    assert again.ignorable == draft.ignorable


@given(drafts(), st.integers(min_value=1, max_value=2**53 - 1))
def test_from_draft_places_every_field(draft: EventDraft, seq: int) -> None:
    """LED-002: from_draft (by position) is the envelope named field by field."""
    placed = Envelope.from_draft(draft, "conv", seq)
    assert placed == Envelope(
        schema_version=draft.schema_version, event_id=draft.event_id, conversation_id="conv",
        seq=seq, kind=draft.kind, occurred_at=draft.occurred_at, payload=draft.payload,
        ignorable=draft.ignorable,
    )
    assert placed.payload is draft.payload


@pytest.mark.parametrize(
    ("changes", "requirement"),
    [
        ({"event_id": ""}, "ENV-004"),
        ({"kind": ""}, "ENV-007"),
        ({"occurred_at": "yesterday"}, "ENV-008"),
        ({"schema_version": 0}, "ENV-003"),
        ({"schema_version": True}, "ENV-003"),
        ({"payload": math.nan}, "ENV-009"),
        ({"ignorable": 1}, "ENV-012"),  # a draft's ignorable (ENV-012), not an envelope's
        ({"ignorable": None}, "ENV-012"),
    ],
    ids=repr,
)
def test_invalid_draft_refused(changes: dict[str, object], requirement: str) -> None:
    """ENV-003 .. ENV-010, ENV-012: a draft is checked member by member."""
    fields: dict[str, Any] = {
        "event_id": "e1",
        "kind": "state/set",
        "occurred_at": "2024-05-01T12:00:00Z",
        "payload": {},
        **changes,
    }
    with pytest.raises(InvalidInputError) as caught:
        validate_draft(EventDraft(**fields))
    assert caught.value.requirement == requirement


@pytest.mark.parametrize("value", [None, {"eventId": "e1"}, "draft", wire_event(1)], ids=repr)
def test_non_draft_refused(value: object) -> None:
    """LED-001: only an EventDraft is a draft."""
    with pytest.raises(InvalidInputError):
        validate_draft(value)


def _in_range(year: int, month: int, day: int, hour: int, minute: int, second: int,
              offset: tuple[int, int] | None) -> bool:
    """ENV-013 and LIM-009 written out plainly: the oracle of the field check's regression test."""
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if not (1 <= month <= 12 and 1 <= day <= days[month - 1]):
        return False
    if hour > 23 or minute > 59 or second > 60:
        return False
    return offset is None or (offset[0] <= 23 and offset[1] <= 59)


@given(
    year=st.integers(0, 9999), month=st.integers(0, 99), day=st.integers(0, 99),
    hour=st.integers(0, 99), minute=st.integers(0, 99), second=st.integers(0, 99),
    offset=st.none() | st.tuples(st.integers(0, 99), st.integers(0, 99)),
    fraction=st.sampled_from(["", ".1", ".123456"]),
)
def test_occurred_at_field_ranges_match_a_plain_oracle(
    year: int, month: int, day: int, hour: int, minute: int, second: int,
    offset: tuple[int, int] | None, fraction: str,
) -> None:
    """ENV-013, LIM-009: each two-digit field is judged by its value (the check compares text)."""
    zone = "Z" if offset is None else f"+{offset[0]:02d}:{offset[1]:02d}"
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{fraction}{zone}"
    expected = _in_range(year, month, day, hour, minute, second, offset)
    if expected:
        assert check_occurred_at(text) == text
    else:
        with pytest.raises(InvalidInputError) as refused:
            check_occurred_at(text)
        assert refused.value.requirement == "ENV-008"


@pytest.mark.parametrize("text", [
    "2024-02-29T00:00:00Z", "2000-02-29T23:59:60Z", "0000-02-29T00:00:00+23:59",
    "2024-12-31T23:59:59.999-00:00",
])
def test_edge_date_times_accepted(text: str) -> None:
    """ENV-013: leap days (0000 and 2000 too), a leap second, the offset bounds."""
    assert check_occurred_at(text) == text


@pytest.mark.parametrize("text", [
    "1900-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2024-04-31T00:00:00Z",
    "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z", "2024-01-01T00:00:61Z",
    "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00+00:60", "2024-00-01T00:00:00Z",
])
def test_edge_date_times_refused(text: str) -> None:
    """ENV-013: a field one past its range is refused as ENV-008."""
    with pytest.raises(InvalidInputError):
        check_occurred_at(text)


# -- from_wire's payload in one walk: the refusals of the two-walk definition --------------------


def _nested(depth: int, leaf: object = 0) -> object:
    """``leaf`` inside ``depth`` arrays (the outermost is level 1)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _two_walks(wire: dict[str, object]) -> Envelope:
    """from_wire as it was defined before its payload took one walk: the envelope's checks
    (validate_envelope, ENV-009 by encoding), then LIM-005 by its own walk."""
    envelope = Envelope(
        schema_version=wire["schemaVersion"],  # type: ignore[arg-type]
        event_id=wire["eventId"],  # type: ignore[arg-type]
        conversation_id=wire["conversationId"],  # type: ignore[arg-type]
        seq=wire["seq"],  # type: ignore[arg-type]
        kind=wire["kind"],  # type: ignore[arg-type]
        occurred_at=wire["occurredAt"],  # type: ignore[arg-type]
        payload=wire["payload"],  # type: ignore[arg-type]
        ignorable=wire.get("ignorable", False) is True,
    )
    validate_envelope(envelope)
    limits.check_depth(envelope.payload, "payload")
    return envelope


def _verdict(decide: Any, wire: dict[str, object]) -> tuple[str, str] | Envelope:
    try:
        return decide(wire)  # type: ignore[no-any-return]
    except InvalidInputError as error:
        return error.requirement, error.field


@pytest.mark.parametrize(
    ("members", "requirement"),
    [
        ({"payload": _nested(limits.MAX_DEPTH)}, None),
        ({"payload": _nested(limits.MAX_DEPTH + 1)}, "LIM-005"),
        ({"payload": _nested(limits.MAX_DEPTH + 1, math.nan)}, "ENV-009"),
        ({"payload": [math.nan, _nested(limits.MAX_DEPTH + 1)]}, "ENV-009"),
        ({"payload": [_nested(limits.MAX_DEPTH + 1), "\udc00"]}, "ENV-009"),
        ({"payload": _nested(limits.MAX_DEPTH + 1), "seq": 0}, "ENV-006"),
        ({"payload": _nested(limits.MAX_DEPTH + 1), "conversationId": ""}, "ENV-005"),
        ({"payload": _nested(limits.MAX_DEPTH + 1, math.inf), "seq": 0}, "ENV-009"),
        ({"payload": math.nan, "kind": ""}, "ENV-007"),
    ],
    ids=repr,
)
def test_from_wire_refusals_keep_their_order(
    members: dict[str, object], requirement: str | None
) -> None:
    """ENV-009 before ENV-005/ENV-006, and LIM-005 after them, as the two walks decided."""
    wire = _wire(**members)
    if requirement is None:
        assert from_wire(wire).payload is wire["payload"]
    else:
        assert _refused(wire).requirement == requirement
    assert _verdict(from_wire, wire) == _verdict(_two_walks, wire)


_payload_parts = st.recursive(
    st.one_of(st.integers(), st.text(max_size=3), st.just(math.nan), st.just("\udc00"),
              st.just(2**60), st.none()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                max_size=3),
    max_leaves=12,
)


@given(_payload_parts, st.integers(0, limits.MAX_DEPTH + 3), st.sampled_from([1, 0, "1"]),
       st.sampled_from(["c", ""]))
def test_from_wire_matches_the_two_walks(payload: object, depth: int, seq: object,
                                         conversation_id: str) -> None:
    """Any payload at any depth, with or without another refusal: the same verdict."""
    wire = _wire(payload=_nested(depth, payload), seq=seq, conversationId=conversation_id)
    assert _verdict(from_wire, wire) == _verdict(_two_walks, wire)
