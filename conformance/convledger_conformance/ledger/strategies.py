"""Hypothesis strategies for the ledger core: identifiers, timestamps, payloads, drafts, reads.

Valid values reach every corner the spec allows: identifiers with NUL, ``/``
and astral characters (ENV-004, ENV-005), timestamps of every precision and
offset (ENV-008), payload numbers whose canonical form differs from Python's
(CAN-005) and member names that sort differently by UTF-16 code units
(CAN-002). Invalid values carry the requirement they break, so a failure
names it (:class:`InvalidDraft`, :data:`READ_WINDOW_INVALID`).

Archives and their faults are in
:mod:`convledger_conformance.ledger.strategies_archive`; unregistered
ignorable pairs, the ``ignorable`` member and an example payload of every
registered pair in :mod:`convledger_conformance.ledger.strategies_kinds`.

Values are attrs classes or plain data, so the program Hypothesis prints for a
failure is runnable after ``from convledger import EventDraft`` and
``from convledger_conformance.ledger.strategies import InvalidDraft`` (non-finite
floats print as ``nan``/``inf``: add ``from math import nan, inf``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

import attrs
from hypothesis import strategies as st

from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger_conformance.ledger.model import MAX_LIMIT
from convledger_conformance.spec_values import MAX_SAFE_INTEGER

SCALAR_TEXT: Final = st.characters(codec="utf-8")
"""Any Unicode scalar value (every code point but the surrogates), NUL included."""
SPECIAL_IDENTIFIERS: Final = ("\x00", "/", "a/b", "..", "😀", "\U0010ffff", " ", "ﬁ", "\\")
SPECIAL_NUMBERS: Final = (
    -0.0, 0.5, 1.0, 1e16, 1e21, 1e-6, 1e-7, 5e-324, 1.7976931348623157e308,
    0.1, 2.0**53, -1e300, 123456789012345680.0, 4.35,
)
"""Numbers whose canonical form (CAN-005) differs from what most encoders write."""
SPECIAL_KEYS: Final = ("😀", "ﬁ", "\x00", "", "a", "\x7f", "é", "e\u0301")
"""Member names whose UTF-16 order differs from code point order (CAN-002)."""
STATE_SET: Final = "state/set"
UNKNOWN_KIND: Final = "x-conformance/unknown"
"""A kind no version of the registry will ever hold (the registry has no ``x-`` prefix)."""


_IDENTIFIERS: st.SearchStrategy[str] = st.one_of(
    st.sampled_from(SPECIAL_IDENTIFIERS),
    st.text(SCALAR_TEXT, min_size=1, max_size=8),
    st.uuids().map(str),
)


def identifiers() -> st.SearchStrategy[str]:
    """Non-empty strings of Unicode scalar values, biased to NUL, ``/`` and astral ones."""
    return _IDENTIFIERS


_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _stamp(parts: tuple[int, int, int, int, int, int, str | None, str, str]) -> str:
    """Format drawn parts as an RFC 3339 date-time; a day past the month's end is clamped."""
    year, month, day, hour, minute, second, fraction, separator, offset = parts
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    day = min(day, 29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1])
    stamp = f"{year:04d}-{month:02d}-{day:02d}{separator}{hour:02d}:{minute:02d}:{second:02d}"
    return stamp + (f".{fraction}" if fraction else "") + offset


_OCCURRED_AT: st.SearchStrategy[str] = st.tuples(
    st.integers(0, 9999),
    st.integers(1, 12),
    st.integers(1, 31),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59) | st.just(60),
    st.none() | st.text("0123456789", min_size=1, max_size=9),
    st.sampled_from("Tt"),
    st.sampled_from(("Z", "z", "+00:00", "-00:00"))
    | st.builds("{}{:02d}:{:02d}".format, st.sampled_from("+-"), st.integers(0, 23),
                st.integers(0, 59)),
).map(_stamp)


def occurred_at() -> st.SearchStrategy[str]:
    """RFC 3339 date-times with an offset, of varied precision and case (ENV-008)."""
    return _OCCURRED_AT


INVALID_OCCURRED_AT: Final = (
    "2024-01-01T00:00:00",
    "2024-01-01 00:00:00Z",
    "2024-02-30T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2024-13-01T00:00:00Z",
    "2024-01-01T24:00:00Z",
    "2024-01-01T00:00:00+0100",
    "2024-01-01T00:00:00Z\n",
    "2024-1-1T00:00:00Z",
    "",
    "now",
    1_700_000_000,
)
"""occurredAt values ENV-008 refuses (no offset, impossible dates, a trailing newline, ...)."""


@functools.cache
def json_values(*, max_leaves: int = 12) -> st.SearchStrategy[JsonValue]:
    """Any JSON value of the data model of CAN, with the numbers and names that trip encoders."""
    scalars: st.SearchStrategy[JsonValue] = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(SPECIAL_NUMBERS),
        st.text(SCALAR_TEXT, max_size=10),
        st.sampled_from(("\x1f\x7f\u2028", '"\\\b\f\n\r\t', "😀ﬁ")),
    )
    keys = st.sampled_from(SPECIAL_KEYS) | st.text(SCALAR_TEXT, max_size=6)
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(keys, children, max_size=4),
        max_leaves=max_leaves,
    )


_STATE_SET_PAYLOADS: st.SearchStrategy[JsonValue] = st.fixed_dictionaries(
    {
        "name": st.text(SCALAR_TEXT, min_size=1, max_size=6),
        "version": st.integers(1, MAX_SAFE_INTEGER),
        "value": json_values(),
        "actor": st.text(SCALAR_TEXT, min_size=1, max_size=6),
    }
)


def state_set_payloads() -> st.SearchStrategy[JsonValue]:
    """``state/set`` v1 payloads: any JSON ``value`` (facts chapter, registered in KND)."""
    return _STATE_SET_PAYLOADS


_NONEMPTY = st.text(SCALAR_TEXT, min_size=1, max_size=6)
_HEX64 = st.text("0123456789abcdef", min_size=64, max_size=64)
OTHER_PAYLOADS: Final[Mapping[str, st.SearchStrategy[JsonValue]]] = {
    "schedule/cancelled": st.fixed_dictionaries({"id": _NONEMPTY}),
    "retry/started": st.fixed_dictionaries({"attempt": st.integers(1, MAX_SAFE_INTEGER)}),
    "child/state": st.fixed_dictionaries(
        {
            "parentConversationId": identifiers(),
            "childConversationId": identifiers(),
            "state": st.sampled_from(("spawned", "running", "finished", "stopped", "lost")),
        }
    ),
    "sandbox/probed": st.fixed_dictionaries(
        {
            "result": st.sampled_from(("available", "unavailable", "degraded")),
            "required": st.lists(_NONEMPTY, max_size=3),
            "missing": st.lists(_NONEMPTY, max_size=3),
        }
    ),
    "spill/deleted": st.fixed_dictionaries(
        {"reference": _NONEMPTY, "bytes": st.integers(0, MAX_SAFE_INTEGER)},
        optional={"reason": st.sampled_from(("deleted", "expired"))},
    ),
    "provider/message": st.fixed_dictionaries({"sha256": _HEX64, "message": json_values()}),
    "schedule/fired": st.fixed_dictionaries(
        {
            "id": _NONEMPTY,
            "occurrence": st.integers(1, MAX_SAFE_INTEGER),
            "lateByMs": st.integers(0, MAX_SAFE_INTEGER),
            "nextAt": st.none() | occurred_at(),
            "state": _NONEMPTY,
        }
    ),
}
"""Valid payloads of a few registered kinds besides ``state/set`` (schemas in kinds.json)."""


def _drafts_of(kind: str, payloads: st.SearchStrategy[JsonValue]) -> st.SearchStrategy[
    EventDraft
]:
    return st.builds(
        EventDraft,
        event_id=_IDENTIFIERS,
        kind=st.just(kind),
        occurred_at=_OCCURRED_AT,
        payload=payloads,
        schema_version=st.just(1),
        ignorable=st.sampled_from((False, False, False, True)),
    )


_ANY_VALID_DRAFT: st.SearchStrategy[EventDraft] = st.one_of(
    *[_drafts_of(STATE_SET, _STATE_SET_PAYLOADS)] * 4,
    *(_drafts_of(kind, payloads) for kind, payloads in OTHER_PAYLOADS.items()),
)


@st.composite
def _valid_draft(draw: st.DrawFn) -> EventDraft:
    """One valid draft, under a short name (issue 35).

    A unique list retries an element through a filter whose name is the element
    strategy's repr; Hypothesis records that name as an event of every example, and keeps
    every example's events while it shrinks. The repr of ``_ANY_VALID_DRAFT`` is 14 KB and
    a new one is made per list, so shrinking one ledger state machine kept 3 GB of them.
    """
    return draw(_ANY_VALID_DRAFT)


_VALID_DRAFTS: st.SearchStrategy[EventDraft] = _valid_draft()


def valid_drafts() -> st.SearchStrategy[EventDraft]:
    """Drafts of registered kinds with valid payloads; mostly ``state/set``."""
    return _VALID_DRAFTS


def draft_batches(*, min_size: int = 1, max_size: int = 4) -> st.SearchStrategy[list[EventDraft]]:
    """Batches of valid drafts with distinct eventIds."""
    return st.lists(
        valid_drafts(), min_size=min_size, max_size=max_size, unique_by=lambda d: d.event_id
    )


@attrs.frozen
class InvalidDraft:
    """A draft a store must refuse with ``invalid_input``, and the requirements it breaks."""

    draft: object
    breaks: tuple[str, ...]
    why: str


_BASE = EventDraft(
    event_id="conformance-invalid",
    kind=STATE_SET,
    occurred_at="2024-02-29T23:59:60.123456789+14:00",
    payload={"name": "n", "version": 1, "value": None, "actor": "a"},
)
"""A valid draft that each entry of :data:`INVALID_DRAFT_CHANGES` breaks in one way."""

DraftChange = tuple[str, tuple[str, ...], Mapping[str, object]]
"""(why, requirement ids, change): one way to break a draft."""


def _occurred_at_change(value: object) -> DraftChange:
    return (f"occurredAt {value!r}", ("ENV-008",), {"occurred_at": value})


INVALID_DRAFT_CHANGES: Final[tuple[DraftChange, ...]] = (
    ("unregistered kind", ("KND-002", "LED-006"), {"kind": UNKNOWN_KIND}),
    ("unregistered ignorable kind", ("KND-002", "LED-006"),
     {"kind": UNKNOWN_KIND, "ignorable": True}),
    ("unregistered schemaVersion", ("KND-002", "LED-006"), {"schema_version": 2}),
    ("empty eventId", ("ENV-004",), {"event_id": ""}),
    ("lone surrogate in eventId", ("ENV-004",), {"event_id": "a\ud800"}),
    ("eventId not a string", ("ENV-004",), {"event_id": 7}),
    ("empty kind", ("ENV-007",), {"kind": ""}),
    ("lone surrogate in kind", ("ENV-007",), {"kind": "state/set\udc00"}),
    ("schemaVersion 0", ("ENV-003",), {"schema_version": 0}),
    ("schemaVersion 2**53", ("ENV-003",), {"schema_version": 2**53}),
    ("schemaVersion true", ("ENV-003",), {"schema_version": True}),
    ("schemaVersion 1.0", ("ENV-003",), {"schema_version": 1.0}),
    ("ignorable 1", ("ENV-010",), {"ignorable": 1}),
    ("ignorable 'true'", ("ENV-010",), {"ignorable": "true"}),
    ("payload NaN", ("ENV-009", "CAN-006"), {"value": float("nan")}),
    ("payload infinity", ("ENV-009", "CAN-006"), {"value": float("-inf")}),
    ("payload 2**60", ("ENV-009", "CAN-006"), {"value": 2**60}),
    ("payload -(2**53)", ("ENV-009", "CAN-006"), {"value": -(2**53)}),
    ("payload bytes", ("ENV-009", "CAN-006"), {"value": b"bytes"}),
    ("payload set", ("ENV-009", "CAN-006"), {"value": {1, 2}}),
    ("payload non-string key", ("ENV-009", "CAN-007"), {"value": {1: "one"}}),
    ("payload lone surrogate", ("ENV-009", "CAN-008"), {"value": "\udfff"}),
    ("payload lone surrogate key", ("ENV-009", "CAN-008"), {"value": {"\ud83d": 1}}),
    ("payload missing a member", ("KND-003", "LED-006"), {"payload": {"name": "n"}}),
    ("payload extra member", ("KND-003", "LED-006"),
     {"payload": {"name": "n", "version": 1, "value": 1, "actor": "a", "x": 1}}),
    ("payload version 0", ("KND-003", "LED-006"),
     {"payload": {"name": "n", "version": 0, "value": 1, "actor": "a"}}),
    ("payload not an object", ("KND-003", "LED-006"), {"payload": [1, 2]}),
    *(_occurred_at_change(value) for value in INVALID_OCCURRED_AT),
)
"""One way to break a draft per entry: (why, requirement ids, change to :data:`_BASE`).

``value`` replaces the ``value`` member of the ``state/set`` payload; every
other key is a field of :class:`EventDraft`.
"""


def broken_draft(change: Mapping[str, object], *, event_id: str = _BASE.event_id) -> EventDraft:
    """:data:`_BASE` with ``event_id`` and one change of :data:`INVALID_DRAFT_CHANGES` applied."""
    payload = dict(cast(Mapping[str, JsonValue], _BASE.payload))
    fields: dict[str, object] = {"event_id": event_id}
    for name, value in change.items():
        if name == "value":
            payload["value"] = cast(JsonValue, value)
        else:
            fields[name] = value
    fields.setdefault("payload", payload)
    return attrs.evolve(_BASE, **cast(dict[str, Any], fields))


def invalid_drafts() -> st.SearchStrategy[InvalidDraft]:
    """Drafts that break exactly one rule of ENV, CAN or KND, each naming it (LED-006).

    Their eventIds are fresh UUIDs, so the only fault is the one named.
    """
    return st.one_of(
        st.builds(
            lambda entry, uuid: InvalidDraft(
                draft=broken_draft(entry[2], event_id=f"invalid-{uuid}"),
                breaks=entry[1],
                why=entry[0],
            ),
            st.sampled_from(INVALID_DRAFT_CHANGES),
            st.uuids(),
        ),
        st.just(InvalidDraft(draft=attrs.asdict(_BASE), breaks=("LED-001",), why="a dict")),
    )


def head_offsets() -> st.SearchStrategy[int | None]:
    """How an append names its expected head: absent (None), right (0), or off by some."""
    return st.none() | st.just(0) | st.integers(-2, 3)


READ_WINDOW_INVALID: Final = (
    {"from_seq": 0},
    {"from_seq": -1},
    {"from_seq": None},
    {"from_seq": True},
    {"from_seq": 1.0},
    {"from_seq": "1"},
    {"to_seq": 0},
    {"from_seq": 3, "to_seq": 2},
    {"to_seq": 1.5},
    {"limit": 0},
    {"limit": 10_001},
    {"limit": None},
    {"limit": -5},
    {"limit": "10"},
    {"limit": False},
)
"""Read parameters LED-010 refuses with ``invalid_input``."""


_OVER_LIMIT: st.SearchStrategy[dict[str, object]] = st.fixed_dictionaries(
    {"limit": st.integers(MAX_LIMIT + 1, MAX_SAFE_INTEGER)}
)
"""Any limit above 10000 that JSON carries exactly; LED-010 refuses it however large."""


def read_windows(*, valid_only: bool = False) -> st.SearchStrategy[dict[str, object]]:
    """Keyword arguments of a read; a missing key means the default (LED-007)."""
    optional: dict[str, st.SearchStrategy[object]] = {
        "from_seq": st.integers(1, 12) | st.just(2**62),
        "to_seq": st.none() | st.integers(1, 14),
        "limit": st.integers(1, 5) | st.just(10_000),
    }
    valid = st.fixed_dictionaries({}, optional=optional).filter(_ordered_window)
    if valid_only:
        return valid
    invalid: st.SearchStrategy[dict[str, object]] = st.sampled_from(READ_WINDOW_INVALID)
    return st.one_of(valid, valid, invalid, _OVER_LIMIT)  # half the reads valid


def _ordered_window(window: Mapping[str, object]) -> bool:
    to_seq, from_seq = window.get("to_seq"), window.get("from_seq", 1)
    return to_seq is None or (isinstance(to_seq, int) and isinstance(from_seq, int)
                              and to_seq >= from_seq)


BATCH_SHAPES: Final[Mapping[str, Callable[[EventDraft], object]]] = {
    "empty list": lambda draft: [],
    "empty tuple": lambda draft: (),
    "a bare draft": lambda draft: draft,
    "None": lambda draft: None,
    "a string": lambda draft: "drafts",
    "a dict of drafts": lambda draft: {"0": draft},
    "a wire dict in a list": lambda draft: [attrs.asdict(draft)],
    "None in a list": lambda draft: [draft, None],
}
"""Things that are not a batch of 1..10000 drafts (LED-001)."""
