"""Conversation archives (spec chapter ``archive.md``, ARC-001 .. ARC-016).

Imports run on the in-memory store; every refused import is checked to leave
the store exactly as it was (ARC-013). ``inspect_archive`` is checked to
report every problem at once (ARC-015).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import (
    archive_bytes,
    draft,
    draft_batches,
    memory_state,
    state_set,
    wire_event,
    wire_events,
)
from convledger import canonical
from convledger.archive import Problem, inspect_archive
from convledger.envelope import EventDraft
from convledger.errors import (
    ConflictError,
    DuplicateError,
    InvalidInputError,
    LedgerError,
    NotFoundError,
    NotSupportedError,
    ReplayRefusedError,
)
from convledger.kinds import default_registry
from convledger.memory import MemoryStore

VALID = archive_bytes([wire_event(1), wire_event(2), wire_event(3)])


def _problems(data: object) -> list[Problem]:
    archive, problems = inspect_archive(data, default_registry())  # type: ignore[arg-type]
    assert (archive is None) == bool(problems)
    return problems


def _import_refused(
    data: object, error: type[LedgerError], *, store: MemoryStore | None = None
) -> LedgerError:
    """Import must be refused with ``error`` and leave the store unchanged (ARC-013)."""
    target = MemoryStore() if store is None else store
    before = memory_state(target)
    with pytest.raises(error) as caught:
        target.import_conversation(data)  # type: ignore[arg-type]
    assert memory_state(target) == before
    return caught.value


def _seeded_store() -> MemoryStore:
    store = MemoryStore()
    store.append("elsewhere", [draft("x1"), draft("x2")])
    return store


# -- export ------------------------------------------------------------------------


def test_export_is_the_canonical_archive() -> None:
    """ARC-001: export returns the canonical archive with every event in seq order."""
    store = MemoryStore()
    stored = store.append("conv", [draft("a"), draft("b")])
    store.append("conv", [draft("c")])
    store.append("other", [draft("z")])
    data = store.export_conversation("conv")
    document = canonical.decode(data)
    assert canonical.encode(document) == data
    assert isinstance(document, dict)
    assert set(document) == {"format", "formatVersion", "conversationId", "events", "companions"}
    assert document["format"] == "convledger.archive"
    assert document["formatVersion"] == 1
    assert document["conversationId"] == "conv"
    assert document["companions"] == {}
    events = document["events"]
    assert isinstance(events, list)
    assert [event["eventId"] for event in events] == ["a", "b", "c"]  # type: ignore[index]
    assert canonical.encode(events[:2]) == canonical.encode([e.to_wire() for e in stored])


def test_export_of_conversation_without_events_is_not_found() -> None:
    """ARC-005: exporting an empty conversation is refused with not_found."""
    with pytest.raises(NotFoundError) as caught:
        _seeded_store().export_conversation("conv")
    assert caught.value.kind == "not_found"


@given(st.lists(draft_batches(), min_size=1, max_size=3))
def test_export_import_export_is_identical(batches: list[list[EventDraft]]) -> None:
    """ARC-004, ARC-016: exports repeat byte for byte and an import re-exports its bytes."""
    source = MemoryStore()
    seen: set[str] = set()
    for batch in batches:
        fresh = [d for d in batch if d.event_id not in seen]
        seen.update(d.event_id for d in fresh)
        if fresh:
            source.append("conv", fresh)
    data = source.export_conversation("conv")
    assert source.export_conversation("conv") == data
    target = MemoryStore()
    report = target.import_conversation(data)
    assert (report.conversation_id, report.events, report.head_seq) == (
        "conv",
        len(seen),
        len(seen),
    )
    assert target.export_conversation("conv") == data
    assert wire_events(target.read("conv").items) == wire_events(source.read("conv").items)


def test_import_preserves_every_member() -> None:
    """ARC-016: eventId, seq, kind, schemaVersion, occurredAt, payload and ignorable survive."""
    events = [
        wire_event(1, event_id="\x00/é", occurredAt="2024-05-01t12:00:00.123456789-07:30"),
        {**wire_event(2, kind="future/kind", schemaVersion=9, payload=None), "ignorable": True},
        {**wire_event(3, payload=state_set([1.5, -0.25, 1e21, "😀"])), "ignorable": True},
    ]
    store = MemoryStore()
    store.import_conversation(archive_bytes(events))
    assert [e.to_wire() for e in store.read("conv").items] == events


def test_export_is_one_atomic_snapshot() -> None:
    """ARC-014: an export taken during appends holds whole batches only."""
    store = MemoryStore()
    store.append("conv", [draft("seed-0"), draft("seed-1")])
    stop = threading.Event()

    def writer() -> None:
        batch = 0
        while not stop.is_set() and batch < 150:
            store.append("conv", [draft(f"b{batch}-0"), draft(f"b{batch}-1")])
            batch += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(15):
            document = canonical.decode(store.export_conversation("conv"))
            assert isinstance(document, dict)
            events = document["events"]
            assert isinstance(events, list)
            assert len(events) % 2 == 0
            assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    finally:
        stop.set()
        thread.join()


# -- format and bytes ----------------------------------------------------------------


@pytest.mark.parametrize("member", ["format", "formatVersion", "conversationId", "events",
                                    "companions"])
def test_missing_member_refused(member: str) -> None:
    """ARC-002: an archive missing a member is refused with invalid_input."""
    document = canonical.decode(VALID)
    assert isinstance(document, dict)
    del document[member]
    data = canonical.encode(document)
    error = _import_refused(data, InvalidInputError)
    assert error.requirement in {"ARC-002", "ARC-005"}
    assert any(p.requirement == "ARC-002" and p.where == f"/{member}" for p in _problems(data))


def test_extra_member_refused() -> None:
    """ARC-002: an archive with another member is refused with invalid_input."""
    data = archive_bytes([wire_event(1)], signature="abc")
    assert _import_refused(data, InvalidInputError).requirement == "ARC-002"


@pytest.mark.parametrize("value", ["convledger.archive.v2", "", 1, None], ids=repr)
def test_other_format_refused(value: Any) -> None:
    """ARC-002: another format is refused with invalid_input."""
    data = archive_bytes([wire_event(1)], format=value)
    assert _import_refused(data, InvalidInputError).requirement == "ARC-002"


@pytest.mark.parametrize("value", [2, 0, -1], ids=repr)
def test_other_format_version_not_supported(value: Any) -> None:
    """ARC-002, ARC-018: an integer other than 1 is another formatVersion: not_supported."""
    data = archive_bytes([wire_event(1)], formatVersion=value)
    error = _import_refused(data, NotSupportedError)
    assert error.kind == "not_supported"


@pytest.mark.parametrize("value", ["1", "2", True, None, [2]], ids=repr)
def test_a_format_version_that_is_not_an_integer_is_invalid(value: Any) -> None:
    """ARC-018: text, a boolean, null or an array is no version: invalid_input, step 3."""
    data = archive_bytes([wire_event(1)], formatVersion=value)
    assert _import_refused(data, InvalidInputError).requirement == "ARC-018"


def test_format_version_is_judged_before_format() -> None:
    """ARC-018, ERR-011: formatVersion 2 with another format is not_supported (step 2 first)."""
    data = archive_bytes([wire_event(1)], formatVersion=2, format="other")
    _import_refused(data, NotSupportedError)


def test_future_version_with_new_members_not_supported() -> None:
    """ARC-002: a later version's own members do not turn not_supported into invalid_input."""
    data = archive_bytes([{"anything": "else"}], formatVersion=2, signature="s", companions=[])
    _import_refused(data, NotSupportedError)
    assert [p.kind for p in _problems(data)] == ["not_supported"]


@pytest.mark.parametrize(
    "data",
    [
        "a string",
        bytearray(VALID),
        memoryview(VALID),
        None,
        VALID[:-1],
        VALID[: len(VALID) // 2],
        b"",
        VALID + b"\n",
        b" " + VALID,
        b"\xef\xbb\xbf" + VALID,
        VALID.replace(b"conv", b"c\xffv", 1),
        VALID.replace(b'"companions":{}', b'"companions":{ }'),
        VALID.replace(b'"seq":1}', b'"seq":1.0}'),
    ],
    ids=[
        "str",
        "bytearray",
        "memoryview",
        "none",
        "truncated-by-one",
        "truncated-half",
        "empty",
        "trailing-newline",
        "leading-space",
        "bom",
        "invalid-utf8",
        "inner-whitespace",
        "non-canonical-number",
    ],
)
def test_bytes_that_could_not_reexport_refused(data: object) -> None:
    """ARC-003: input that is not bytes, not UTF-8, truncated or not canonical is invalid_input."""
    _import_refused(data, InvalidInputError)
    assert _problems(data)


def test_unsorted_members_refused() -> None:
    """ARC-003: a document whose members are not in canonical order is refused."""
    document = canonical.decode(VALID)
    assert isinstance(document, dict)
    reordered = b"{" + b",".join(
        canonical.encode(name) + b":" + canonical.encode(document[name])
        for name in ["format", "formatVersion", "conversationId", "events", "companions"]
    ) + b"}"
    assert canonical.canonicalize(reordered) == VALID
    assert _import_refused(reordered, InvalidInputError).requirement == "ARC-003"


@pytest.mark.parametrize("events", [[], None, {}, "e", 1], ids=repr)
def test_events_must_be_a_non_empty_array(events: Any) -> None:
    """ARC-005: empty or non-array events are invalid_input (regression: null crashed import)."""
    data = archive_bytes([], events=events)
    assert _import_refused(data, InvalidInputError).requirement == "ARC-005"


# -- events --------------------------------------------------------------------------


def test_foreign_conversation_id_refused() -> None:
    """ARC-006: an event of another conversation is refused with invalid_input."""
    data = archive_bytes([wire_event(1), wire_event(2, conversation_id="other")])
    assert _import_refused(data, InvalidInputError).requirement == "ARC-006"


@pytest.mark.parametrize("seqs", [[2], [1, 3], [1, 2, 2], [2, 1], [1, 3, 2], [0, 1]], ids=repr)
def test_seqs_must_be_one_to_n(seqs: list[int]) -> None:
    """ARC-007: events carry exactly the seqs 1..n in order."""
    events = [wire_event(seq, event_id=f"e{index}") for index, seq in enumerate(seqs)]
    data = archive_bytes(events)
    error = _import_refused(data, InvalidInputError)
    assert error.requirement in {"ARC-007", "ENV-006"}


def test_one_problem_per_break_in_the_sequence() -> None:
    """ARC-007, ARC-015: a gap is reported once, not once per later event (regression)."""
    events = [wire_event(seq) for seq in [1, 2, 4, 5, 6, 7, 9]]
    problems = _problems(archive_bytes(events))
    assert [(p.requirement, p.where) for p in problems] == [
        ("ARC-007", "/events/2/seq"),
        ("ARC-007", "/events/6/seq"),
    ]


def test_duplicate_event_id_refused() -> None:
    """ARC-008: two events with one eventId are refused with invalid_input."""
    data = archive_bytes([wire_event(1), wire_event(2, event_id="e1")])
    assert _import_refused(data, InvalidInputError).requirement == "ARC-008"


def test_import_into_non_empty_conversation_is_conflict() -> None:
    """ARC-009: a target conversation with events refuses the import with conflict."""
    store = MemoryStore()
    store.append("conv", [draft("mine")])
    error = _import_refused(VALID, ConflictError, store=store)
    assert error.kind == "conflict"


def test_import_of_existing_event_id_is_duplicate() -> None:
    """ARC-010: an eventId that exists anywhere in the store refuses the import."""
    store = _seeded_store()
    data = archive_bytes([wire_event(1), wire_event(2, event_id="x2")])
    error = _import_refused(data, DuplicateError, store=store)
    assert error.kind == "duplicate"


@pytest.mark.parametrize(
    "companions", [{"unknown": {}}, [], None, "x", {"": 1}], ids=repr
)
def test_companions_refused(companions: Any) -> None:
    """ARC-011: companions that are not an object, or have any member, are invalid_input."""
    data = archive_bytes([wire_event(1)], companions=companions)
    assert _import_refused(data, InvalidInputError).requirement == "ARC-011"


def test_unregistered_non_ignorable_is_replay_refused() -> None:
    """ARC-012: an unregistered event that is not ignorable is refused with replay_refused."""
    data = archive_bytes([wire_event(1), wire_event(2, kind="state/set", schemaVersion=2)])
    error = _import_refused(data, ReplayRefusedError)
    assert error.kind == "replay_refused"


@pytest.mark.parametrize(
    "event",
    [
        wire_event(1, extra="x"),
        wire_event(1, occurredAt="2024-05-01T12:00:00"),
        wire_event(1, ignorable=False),
        wire_event(1, eventId=""),
        wire_event(1, payload={"actor": "a"}),
        {**wire_event(1, payload={"actor": "a"}), "ignorable": True},
    ],
    ids=["extra", "no-offset", "ignorable-false", "empty-id", "bad-payload", "bad-ignorable"],
)
def test_broken_envelope_or_payload_is_invalid_input(event: dict[str, Any]) -> None:
    """ARC-012: an envelope breaking ENV, or a registered payload breaking its schema."""
    _import_refused(archive_bytes([event]), InvalidInputError)


def test_refused_import_leaves_nothing() -> None:
    """ARC-013: a refused archive leaves no event, seq or eventId; the same ids import later."""
    store = _seeded_store()
    bad = archive_bytes([wire_event(1), wire_event(2), wire_event(3, kind="future/kind")])
    _import_refused(bad, ReplayRefusedError, store=store)
    assert store.head("conv") == 0
    store.import_conversation(VALID)
    assert store.head("conv") == 3


# -- verification --------------------------------------------------------------------


def test_inspect_reports_every_problem() -> None:
    """ARC-015: a seq gap, a foreign conversationId and a duplicate eventId give three problems."""
    events = [
        wire_event(1),
        wire_event(2),
        wire_event(3, conversation_id="other"),
        wire_event(5),
        wire_event(6, event_id="e1"),
    ]
    problems = _problems(archive_bytes(events))
    assert sorted((p.requirement, p.where) for p in problems) == [
        ("ARC-006", "/events/2/conversationId"),
        ("ARC-007", "/events/3/seq"),
        ("ARC-008", "/events/4/eventId"),
    ]
    assert {p.kind for p in problems} == {"invalid_input"}


def test_inspect_reports_problems_of_every_level() -> None:
    """ARC-015: document, member and event problems are all reported together."""
    events = [
        wire_event(1, kind="future/kind"),
        wire_event(2, extra=True),
        wire_event(3, payload={}),
    ]
    data = archive_bytes(events, companions={"schedules": []}, signature="s") + b"\n"
    found = {(p.kind, p.requirement, p.where) for p in _problems(data)}
    assert found == {
        ("invalid_input", "ARC-003", "(document)"),
        ("invalid_input", "ARC-002", "/signature"),
        ("invalid_input", "ARC-011", "/companions/schedules"),
        ("replay_refused", "RPL-003", "/events/0/kind"),
        ("invalid_input", "ENV-002", "/events/1/extra"),
        ("invalid_input", "KND-003", "/events/2/payload"),
    }


def test_inspect_paths_are_json_pointers() -> None:
    """ARC-015: member names with '/' and '~' are escaped in reported paths."""
    data = archive_bytes([wire_event(1)], companions={"a/b~c": 1})
    assert [p.where for p in _problems(data)] == ["/companions/a~1b~0c"]


def test_inspect_valid_archive_has_no_problems() -> None:
    """ARC-015: a valid archive decodes with no problem."""
    archive, problems = inspect_archive(VALID, default_registry())
    assert problems == []
    assert archive is not None
    assert [e.seq for e in archive.events] == [1, 2, 3]
