"""Checks of chapter ENV: the members of an envelope, on append, read, export and import."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import cast

import attrs
from hypothesis import strategies as st

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.store import LedgerStore
from convledger_conformance.hostile.corpus import limit
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger.model import (
    LedgerModel,
    Refusal,
    archive_bytes,
    draft_wire,
    envelope_bytes,
    read_whole,
)
from convledger_conformance.ledger.model_faults import ENVELOPE_MEMBERS
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spec_values import MAX_SAFE_INTEGER
from convledger_conformance.support import (
    STAMP,
    accepted,
    archive,
    document,
    draft,
    expect_same_bytes,
    fail,
    ledger_bytes,
    refused,
    run_once,
    run_property,
    untyped,
)


def _unknown(event_id: str, seq: object, **members: object) -> dict[str, object]:
    """An ignorable envelope of an unregistered kind in conversation ``c`` (RPL-002)."""
    wire: dict[str, object] = {
        "schemaVersion": 1, "eventId": event_id, "conversationId": "c", "seq": seq,
        "kind": gen.UNKNOWN_KIND, "occurredAt": STAMP, "payload": None, "ignorable": True,
    }
    wire.update(members)
    return wire


def _refuses_events(
    store: LedgerStore,
    events: dict[str, dict[str, object]],
    ids: str | tuple[str, ...],
    *,
    conversation: str = "refused",
) -> None:
    """Each envelope, as the second event of an archive of ``conversation``, is invalid_input."""
    first = _unknown(f"{conversation}-first", 1, conversationId=conversation)
    for what, event in events.items():
        moved = {**event, "conversationId": conversation} if "conversationId" in event else event
        data = canonical.encode(document(conversation, [first, moved]))
        refused(partial(store.import_conversation, data), "invalid_input", ids,
                f"import of an envelope with {what}", store=store, touched=[conversation])


@check("ENV-001", "ENV-002")
def check_envelope_members(ctx: CheckContext) -> None:
    """ENV-001, ENV-002: exactly the seven members (and ignorable); missing or extra refused."""

    def body(store: LedgerStore) -> None:
        store.append("c", [draft("plain"), draft("flagged", ignorable=True)])
        exported = canonical.decode(store.export_conversation("c"))
        assert isinstance(exported, dict)
        for wire, flagged in zip(exported["events"], (False, True), strict=True):
            want = ENVELOPE_MEMBERS | ({"ignorable"} if flagged else set())
            if set(wire) != want:
                fail("ENV-001", f"exported envelope has members {sorted(wire)}")
        complete = _unknown("second", 2)
        missing = {
            f"no {name}": {k: v for k, v in complete.items() if k != name}
            for name in sorted(ENVELOPE_MEMBERS)
        }
        _refuses_events(store, missing, "ENV-001")
        extra = {
            "an extra member": {**complete, "extra": 1},
            "an extra member and ignorable false": {**complete, "ignorable": False, "x": 1},
            "a registered kind and an extra member": {
                **wire_of(draft("second"), 2), "ignorable": True, "note": "x"},
            "a member differing in case": {**complete, "EventId": "x"},
        }
        _refuses_events(store, extra, "ENV-002")

    run_once(ctx, body)


def wire_of(event: EventDraft, seq: int) -> dict[str, object]:
    """A draft as the wire envelope at ``seq`` of conversation ``c``."""
    return draft_wire(event, "c", seq)


@check("ENV-003")
def check_schema_version_range(ctx: CheckContext) -> None:
    """ENV-003: schemaVersion is an integer 1 .. 2**53-1; the whole range imports."""

    def body(store: LedgerStore) -> None:
        bounds = [_unknown("low", 1, schemaVersion=1), _unknown("high", 2,
                                                                schemaVersion=MAX_SAFE_INTEGER)]
        data = archive("c", bounds)
        accepted(partial(store.import_conversation, data), "ENV-003",
                 "import of schemaVersion 1 and 2**53-1")
        expect_same_bytes("ENV-003", "schemaVersion 2**53-1 did not round-trip",
                          expected=data, got=store.export_conversation("c"))
        bad = {f"schemaVersion {v!r}": _unknown("x", 2, schemaVersion=v)
               for v in (0, -1, 2.0**53, "1", True, None, 1.5)}
        _refuses_events(store, bad, "ENV-003")

    run_once(ctx, body)


@check("ENV-004", "ENV-005")
def check_identifiers_round_trip(ctx: CheckContext) -> None:
    """ENV-004, ENV-005: any non-empty scalar-value string is an id and round-trips unchanged."""

    def body(store: LedgerStore, conversation: str, event_id: str) -> None:
        placed = accepted(partial(store.append, conversation, [draft(event_id)]),
                          ("ENV-004", "ENV-005"), f"append {event_id!r} to {conversation!r}")
        if placed[0].event_id != event_id or placed[0].conversation_id != conversation:
            fail(("ENV-004", "ENV-005"), "append changed an id")
        stored = read_whole(store, conversation)
        if [(e.event_id, e.conversation_id) for e in stored] != [(event_id, conversation)]:
            fail(("ENV-004", "ENV-005"), f"read returned {stored!r}")
        want = archive_bytes(conversation, [canonical.encode(wire_of_in(conversation, event_id))])
        expect_same_bytes(("ENV-004", "ENV-005"), "export changed an id",
                          expected=want, got=store.export_conversation(conversation))

    run_property(ctx, body, gen.identifiers(), gen.identifiers())

    def distinct(store: LedgerStore) -> None:
        for text in ("é", "e\u0301", "\x00", "\x00\x00", "😀", "\U0010ffff", "/", "a/../b"):
            accepted(partial(store.append, text, [draft(text)]), ("ENV-004", "ENV-005"),
                     f"append of id {text!r}")
        if store.head("é") != 1 or store.head("e\u0301") != 1:
            fail(("ENV-004", "ENV-005"), "ids that differ only in normalization were merged")
        loose = untyped(store)
        for bad in ("", "\ud800", "a\udfff", 7, None, b"c"):
            for call in (partial(loose.append, bad, [draft("fine")]), partial(loose.head, bad),
                         partial(loose.read, bad), partial(loose.export_conversation, bad)):
                refused(call, "invalid_input", "ENV-005", f"conversationId {bad!r}")

    run_once(ctx, distinct)


def wire_of_in(conversation: str, event_id: str) -> dict[str, object]:
    """The wire envelope of ``draft(event_id)`` at seq 1 of ``conversation``."""
    return draft_wire(draft(event_id), conversation, 1)


@check("ENV-006")
def check_seq_range(ctx: CheckContext) -> None:
    """ENV-006: seq is an integer from 1; an archived seq that is not is invalid_input."""

    def body(store: LedgerStore) -> None:
        bad = {f"seq {v!r}": _unknown("x", v) for v in (0, -1, "2", True, None, 2.5, 2.0**53)}
        _refuses_events(store, bad, "ENV-006")

    run_once(ctx, body)


@check("ENV-005", "ENV-006", "LIM-001")
def check_archived_position_members(ctx: CheckContext) -> None:
    """ENV-005, ENV-006, LIM-001: an archived envelope's own conversationId and seq are checked.

    They are not only compared with the archive's: a first event whose seq is ``true`` equals 1
    in languages where booleans are integers, and a conversationId over the identifier limit
    equals the archive's own when both are too long; each MUST be refused (CAN-017, LIM-001).
    """

    def body(store: LedgerStore) -> None:
        refused(partial(store.import_conversation, archive("c", [_unknown("b", True)])),
                "invalid_input", "ENV-006", "import of a first event with seq true",
                store=store, touched=["c"])
        declared = getattr(store, "declared_limits", None)
        size = limit(declared if isinstance(declared, Mapping) else {}, "identifierBytes")
        for ident, what, fits in (("x" * size, "at", True), ("x" * (size + 1), "one over", False),
                                  ("é" * (size // 2 + 1), "one over (2-byte)", False)):
            data = archive(ident, [_unknown("lim", 1, conversationId=ident)])
            call = partial(store.import_conversation, data)
            what = f"import of an archive whose conversationId is {what} the identifier limit"
            if fits:
                accepted(call, ("ENV-005", "LIM-001"), what)
                expect_same_bytes(("ENV-005", "LIM-001"), f"{what}: not kept",
                                  expected=data, got=store.export_conversation(ident))
            else:
                refused(call, "invalid_input", ("ENV-005", "LIM-001"), what)

    run_once(ctx, body)


@check("ENV-007")
def check_kind_is_non_empty(ctx: CheckContext) -> None:
    """ENV-007: kind is a non-empty string of scalar values; any such unknown kind imports."""

    def body(store: LedgerStore, kind: str) -> None:
        if kind and store.registry.knows(kind, 1):
            return
        data = archive("c", [_unknown("k", 1, kind=kind)])
        accepted(partial(store.import_conversation, data), "ENV-007", f"import of kind {kind!r}")
        expect_same_bytes("ENV-007", f"kind {kind!r} did not round-trip",
                          expected=data, got=store.export_conversation("c"))
        bad = {f"kind {v!r}": _unknown("x", 2, kind=v) for v in ("", 1, None, ["a"])}
        _refuses_events(store, bad, "ENV-007")

    run_property(ctx, body, st.text(gen.SCALAR_TEXT, min_size=1, max_size=8))


@check("ENV-008")
def check_occurred_at_kept_exactly(ctx: CheckContext) -> None:
    """ENV-008: any RFC 3339 date-time with offset is kept as the exact string; others refused."""

    def body(store: LedgerStore, stamp: str) -> None:
        placed = accepted(partial(store.append, "c", [draft("t", occurred_at=stamp)]), "ENV-008",
                          f"append at {stamp!r}")
        if placed[0].occurred_at != stamp or read_whole(store, "c")[0].occurred_at != stamp:
            fail("ENV-008", f"occurredAt {stamp!r} came back changed")
        want = archive_bytes("c", [canonical.encode(draft_wire(draft("t", occurred_at=stamp),
                                                               "c", 1))])
        expect_same_bytes("ENV-008", f"occurredAt {stamp!r} exported changed",
                          expected=want, got=store.export_conversation("c"))
        for value in gen.INVALID_OCCURRED_AT:
            bad = attrs.evolve(draft("u"), occurred_at=cast(str, value))
            refused(partial(store.append, "c", [bad]),
                    "invalid_input", "ENV-008", f"append at {value!r}", store=store,
                    touched=["c"])
        _refuses_events(store, {f"occurredAt {v!r}": _unknown("u", 2, occurredAt=v)
                                for v in gen.INVALID_OCCURRED_AT}, "ENV-008")

    run_property(ctx, body, gen.occurred_at())


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
"""The last day of each month of a common year, written out here (ENV-013), not taken from the
reference: an oracle that shared the reference's table would accept whatever the table says."""


def calendar_stamps() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The occurredAt values at the edges of ENV-013's ranges: (accepted, refused).

    Each month's last day in a common and a leap year and the day after it; February 29 of
    years divisible by 4, 100 and 400; the last and first hour, minute, second (60, LIM-009)
    and offset and one past each.
    """
    good: list[str] = []
    bad: list[str] = []
    for year in (2023, 2024):
        for month, days in enumerate(_MONTH_DAYS, 1):
            last = days + (month == 2 and year == 2024)
            good.append(f"{year}-{month:02d}-{last:02d}T00:00:00Z")
            bad.append(f"{year}-{month:02d}-{last + 1:02d}T00:00:00Z")
            bad.append(f"{year}-{month:02d}-00T00:00:00Z")
    good += [f"{year}-02-29T00:00:00Z" for year in ("2000", "2400", "1600", "0004", "0000")]
    bad += [f"{year}-02-29T00:00:00Z" for year in ("1900", "2100", "2200", "0001", "2022")]
    good += ["2024-01-01T00:00:00Z", "2024-12-31T23:59:59Z", "2024-06-30T23:59:60Z",
             "2024-06-30T23:59:59+23:59", "2024-06-30T23:59:59-23:59", "2024-06-30T00:00:00+00:00"]
    bad += ["2024-00-01T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z",
            "2024-01-01T23:60:00Z", "2024-01-01T23:59:61Z", "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00+23:60", "2024-01-01T00:00:00-24:00", "2024-01-01T00:00:00-00:60"]
    return tuple(good), tuple(bad)


@check("ENV-013", "ENV-008", "LIM-009")
def check_occurred_at_calendar(ctx: CheckContext) -> None:
    """ENV-013: each month's last day (and Feb 29 of leap years) accepted, the next day refused."""

    def body(store: LedgerStore) -> None:
        good, bad = calendar_stamps()
        ids = ("ENV-013", "ENV-008")
        for number, stamp in enumerate(good):
            edge = draft(f"ok-{number}", occurred_at=stamp)
            placed = accepted(partial(store.append, "c", [edge]), ids, f"append at {stamp!r}")
            if placed[0].occurred_at != stamp:
                fail(ids, f"occurredAt {stamp!r} came back as {placed[0].occurred_at!r}")
        events = [_unknown(f"in-{number}", number + 1, conversationId="d", occurredAt=stamp)
                  for number, stamp in enumerate(good)]
        data = archive("d", events)
        accepted(partial(store.import_conversation, data), ids, "import of the last days")
        expect_same_bytes(ids, "an imported calendar edge did not round-trip",
                          expected=data, got=store.export_conversation("d"))
        for stamp in bad:
            wrong = draft("wrong", occurred_at=stamp)
            refused(partial(store.append, "c", [wrong]), "invalid_input", ids,
                    f"append at {stamp!r}", store=store, touched=["c"])
        _refuses_events(store, {f"occurredAt {v!r}": _unknown("u", 2, occurredAt=v)
                                for v in bad}, ids)

    run_once(ctx, body)


@check("ENV-009")
def check_payload_has_canonical_form(ctx: CheckContext) -> None:
    """ENV-009: any JSON value is a payload; a value without a canonical form is refused."""

    def body(store: LedgerStore, value: JsonValue) -> None:
        accepted(partial(store.append, "c", [draft("p", value)]), "ENV-009", "append")
        for why, _, change in gen.INVALID_DRAFT_CHANGES:
            if "value" in change:
                bad = gen.broken_draft(change, event_id="q")
                refused(partial(store.append, "c", [bad]), "invalid_input", "ENV-009",
                        f"append of {why}", store=store, touched=["c"])

    run_property(ctx, body, gen.json_values())


@check("ENV-010")
def check_ignorable_is_literal_true(ctx: CheckContext) -> None:
    """ENV-010: ignorable is the literal true or absent; non-ignorable envelopes omit it."""

    def body(store: LedgerStore) -> None:
        store.append("c", [draft("no"), draft("yes", ignorable=True)])
        events = canonical.decode(store.export_conversation("c"))
        assert isinstance(events, dict)
        flags = [wire.get("ignorable", "absent") for wire in events["events"]]
        if flags != ["absent", True]:
            fail("ENV-010", f"exported ignorable members are {flags!r}, expected absent, true")
        data = archive("d", [_unknown("x", 1, conversationId="d")])
        accepted(partial(store.import_conversation, data), "ENV-010", "import of ignorable true")
        expect_same_bytes("ENV-010", "an imported ignorable: true did not re-export",
                          expected=data, got=store.export_conversation("d"))
        bad = {f"ignorable {v!r}": _unknown("y", 2, ignorable=v)
               for v in (False, None, 1, "true", [True])}
        _refuses_events(store, bad, "ENV-010")
        for value in (1, "true", None):
            odd = attrs.evolve(draft("odd"), ignorable=cast(bool, value))
            refused(partial(store.append, "f", [odd]), "invalid_input", "ENV-010",
                    f"append with ignorable {value!r}", store=store, touched=["f"])

    run_once(ctx, body)


@check("ENV-011")
def check_canonical_bytes_kept(ctx: CheckContext) -> None:
    """ENV-011: appended and imported envelopes keep their canonical bytes through read/export."""

    def body(store: LedgerStore, batch: list[EventDraft]) -> None:
        model = LedgerModel()
        expected = model.expect_append("c", batch)
        if isinstance(expected, Refusal):
            return
        placed = accepted(partial(store.append, "c", batch), "ENV-011", "append")
        if tuple(envelope_bytes(e) for e in placed) != expected:
            fail("ENV-011", "append returned envelopes with other bytes")
        if ledger_bytes(store, "c") != expected:
            fail("ENV-011", "read returned envelopes with other bytes")
        exported = store.export_conversation("c")
        expect_same_bytes("ENV-011", "export wrote envelopes with other bytes",
                          expected=archive_bytes("c", expected), got=exported)
        moved = _renamed(exported)
        accepted(partial(store.import_conversation, moved), "ENV-011", "import of a copy")
        expect_same_bytes("ENV-011", "imported envelopes came back with other bytes",
                          expected=moved, got=store.export_conversation("d"))

    run_property(ctx, body, gen.draft_batches())


def _renamed(data: bytes) -> bytes:
    """The archive ``data`` moved to conversation ``d`` with fresh eventIds."""
    decoded = canonical.decode(data)
    assert isinstance(decoded, dict)
    decoded["conversationId"] = "d"
    for number, wire in enumerate(decoded["events"]):
        wire["conversationId"] = "d"
        wire["eventId"] = f"copy-{number}"
    return canonical.encode(decoded)

