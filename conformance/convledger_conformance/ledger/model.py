"""An executable model of the ledger core: what every operation must return.

Theory of operation
-------------------
:class:`LedgerModel` is the ledger as plainly as it can be stated: one list of
envelopes per conversation, held as their canonical bytes, and the set of every
eventId in the store. For each operation it answers *before* the store is
called, without changing anything, either with the exact result the store must
return or with a :class:`Refusal`: the error kinds the store may use and the
requirement ids that name them. The machine then calls the store, compares,
and only on success commits the change to the model.

Where the spec does not order two faults of one call (a batch with an invalid
draft *and* a wrong expected head), every kind that some fault justifies is
admissible; a store that names any of them conforms.

The model shares no code with the reference stores. It uses three oracles the
spec itself points to: :mod:`convledger.canonical` for canonical bytes, the
field validators of :mod:`convledger.envelope`, and the kind registry's payload
schemas. Archive bytes are assembled here by concatenation, independently of
:mod:`convledger.archive`.

The last section, *observing a store*, turns what a store returns into the
same terms (canonical bytes), so that comparisons never depend on Python's
``True == 1 == 1.0``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, cast

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import (
    Envelope,
    EventDraft,
    check_identifier,
    check_occurred_at,
    check_positive_integer,
)
from convledger.errors import CanonicalJsonError, InvalidInputError
from convledger.kinds import KindRegistry, default_registry
from convledger.store import LedgerStore

MAX_BATCH: Final = 10_000
"""LED-001: the most drafts one append may carry."""
MAX_LIMIT: Final = 10_000
"""LED-010: the largest page a read may ask for."""
DEFAULT_LIMIT: Final = 1_000
"""LED-007: the page size when the caller names none."""
ARCHIVE_FORMAT: Final = "convledger.archive"
ENVELOPE_MEMBERS: Final = frozenset(
    {"schemaVersion", "eventId", "conversationId", "seq", "kind", "occurredAt", "payload"}
)
ARCHIVE_MEMBERS: Final = frozenset(
    {"format", "formatVersion", "conversationId", "events", "companions"}
)

CONFLICT: Final = "conflict"
DUPLICATE: Final = "duplicate"
NOT_FOUND: Final = "not_found"
INVALID_INPUT: Final = "invalid_input"
REPLAY_REFUSED: Final = "replay_refused"
NOT_SUPPORTED: Final = "not_supported"


@attrs.frozen
class Fault:
    """One reason a call must be refused: the kind it calls for and the ids that say so."""

    kind: str
    ids: tuple[str, ...]


@attrs.frozen
class Refusal:
    """The expected refusal of a call: every admissible kind, and the ids behind them.

    ``actual_head`` is the head a ``conflict`` for an expected head must carry
    (ERR-005), when one of the faults is such a conflict.
    """

    faults: tuple[Fault, ...]
    actual_head: int | None = None

    @property
    def kinds(self) -> frozenset[str]:
        """Every kind a conforming store may refuse the call with."""
        return frozenset(fault.kind for fault in self.faults)

    @property
    def ids(self) -> tuple[str, ...]:
        """Every requirement id some fault of the call breaks, without repeats."""
        return tuple(dict.fromkeys(i for fault in self.faults for i in fault.ids))


@attrs.frozen
class ModelPage:
    """The page a read must return (LED-008, LED-009)."""

    items: tuple[bytes, ...]
    next_seq: int | None


class LedgerModel:
    """The ledger core as data: per-conversation canonical envelopes and all eventIds."""

    def __init__(self, *, registry: KindRegistry | None = None) -> None:
        self.registry = registry if registry is not None else default_registry()
        self.ledgers: dict[str, list[bytes]] = {}
        self.event_ids: set[str] = set()

    # -- queries ----------------------------------------------------------------

    def head(self, conversation_id: str) -> int:
        """LED-012: the last seq, 0 for a conversation without events."""
        return len(self.ledgers.get(conversation_id, ()))

    def events(self, conversation_id: str) -> tuple[bytes, ...]:
        """The canonical bytes of every envelope of one conversation, in seq order."""
        return tuple(self.ledgers.get(conversation_id, ()))

    def conversations(self) -> tuple[str, ...]:
        """Every conversation that holds at least one event."""
        return tuple(self.ledgers)

    # -- append -----------------------------------------------------------------

    def expect_append(
        self, conversation_id: object, drafts: object, expected_head: object = None
    ) -> tuple[bytes, ...] | Refusal:
        """The envelopes an append must return, or its refusal (LED-001 .. LED-006)."""
        faults = list(identifier_faults(conversation_id, "ENV-005"))
        batch = batch_faults(drafts, faults)
        for draft in batch:
            faults.extend(draft_faults(draft, self.registry))
        if expected_head is not None and not _is_count(expected_head, minimum=0):
            faults.append(Fault(INVALID_INPUT, ("LED-005",)))
        faults.extend(self._duplicate_faults(batch))
        head = self.head(conversation_id) if isinstance(conversation_id, str) else 0
        conflict = _is_count(expected_head, minimum=0) and expected_head != head
        if conflict:
            faults.append(Fault(CONFLICT, ("LED-005", "ERR-005")))
        if faults:
            return Refusal(tuple(faults), actual_head=head if conflict else None)
        assert isinstance(conversation_id, str)
        return tuple(
            canonical.encode(draft_wire(draft, conversation_id, head + offset))
            for offset, draft in enumerate(batch, start=1)
            if isinstance(draft, EventDraft)
        )

    def _duplicate_faults(self, batch: Sequence[object]) -> list[Fault]:
        seen: set[str] = set()
        for draft in batch:
            event_id = draft.event_id if isinstance(draft, EventDraft) else None
            if not isinstance(event_id, str):
                continue
            if event_id in seen or event_id in self.event_ids:
                return [Fault(DUPLICATE, ("LED-003",))]
            seen.add(event_id)
        return []

    def commit(self, conversation_id: str, envelopes: Iterable[bytes]) -> None:
        """Record envelopes the store has accepted at the end of ``conversation_id``."""
        for encoded in envelopes:
            wire = canonical.decode(encoded)
            assert isinstance(wire, dict)
            self.ledgers.setdefault(conversation_id, []).append(encoded)
            self.event_ids.add(wire["eventId"])

    # -- read -------------------------------------------------------------------

    def expect_read(
        self,
        conversation_id: object,
        *,
        from_seq: object = 1,
        to_seq: object = None,
        limit: object = DEFAULT_LIMIT,
    ) -> ModelPage | Refusal:
        """The page a read must return, or its refusal (LED-007 .. LED-011)."""
        faults = list(identifier_faults(conversation_id, "ENV-005"))
        if not _is_count(from_seq, minimum=1) or not (
            to_seq is None or _is_count(to_seq, minimum=1)
        ) or (isinstance(to_seq, int) and isinstance(from_seq, int) and to_seq < from_seq):
            faults.append(Fault(INVALID_INPUT, ("LED-010",)))
        if not _is_count(limit, minimum=1, maximum=MAX_LIMIT):
            faults.append(Fault(INVALID_INPUT, ("LED-010",)))
        if faults:
            return Refusal(tuple(faults))
        assert isinstance(conversation_id, str)
        assert isinstance(from_seq, int) and isinstance(limit, int)
        stop = self.head(conversation_id) if to_seq is None else to_seq
        assert isinstance(stop, int)
        window = self.events(conversation_id)[from_seq - 1 : stop]
        if len(window) > limit:
            return ModelPage(window[:limit], next_seq=from_seq + limit)
        return ModelPage(window, next_seq=None)

    # -- export and import ------------------------------------------------------

    def expect_export(self, conversation_id: object) -> bytes | Refusal:
        """The archive bytes an export must return, or its refusal (ARC-001, ARC-005)."""
        faults = identifier_faults(conversation_id, "ENV-005")
        if faults:
            return Refusal(tuple(faults))
        assert isinstance(conversation_id, str)
        if not self.head(conversation_id):
            return Refusal((Fault(NOT_FOUND, ("ARC-005",)),))
        return archive_bytes(conversation_id, self.events(conversation_id))

    def expect_import(self, data: object) -> tuple[str, tuple[bytes, ...]] | Refusal:
        """The conversation and envelopes an import must write, or its refusal.

        Store-independent faults come from :func:`archive_faults`; this adds
        the two that depend on the target store (ARC-009, ARC-010).
        """
        decoded, faults = archive_faults(data, self.registry)
        if decoded is None:
            return Refusal(tuple(faults))
        conversation_id, events = decoded
        if self.head(conversation_id):
            faults.append(Fault(CONFLICT, ("ARC-009",)))
        wires = [canonical.decode(encoded) for encoded in events]
        if any(isinstance(w, dict) and w.get("eventId") in self.event_ids for w in wires):
            faults.append(Fault(DUPLICATE, ("ARC-010",)))
        if faults:
            return Refusal(tuple(faults))
        return conversation_id, events


# -- faults of the pieces of a call -------------------------------------------------


def identifier_faults(value: object, requirement: str) -> list[Fault]:
    """ENV-004/005/007: a non-empty string of Unicode scalar values, or an invalid_input."""
    try:
        check_identifier(value, "identifier", requirement)
    except InvalidInputError:
        return [Fault(INVALID_INPUT, (requirement,))]
    return []


def batch_faults(drafts: object, faults: list[Fault]) -> tuple[object, ...]:
    """LED-001: the drafts as a tuple, appending a fault when the batch is malformed."""
    if isinstance(drafts, (str, bytes, bytearray, Mapping)) or not isinstance(drafts, Sequence):
        faults.append(Fault(INVALID_INPUT, ("LED-001",)))
        return ()
    if not 1 <= len(drafts) <= MAX_BATCH:
        faults.append(Fault(INVALID_INPUT, ("LED-001",)))
    return tuple(drafts)


NEVER_APPENDED: Final = frozenset({"runtime/baseline", "runtime/transition"})
"""Registered kinds no append may write: transitions and migration write them (TRN-108)."""


def draft_faults(draft: object, registry: KindRegistry) -> list[Fault]:
    """Every rule of ENV and KND one draft breaks; all are ``invalid_input`` (LED-006)."""
    if not isinstance(draft, EventDraft):
        return [Fault(INVALID_INPUT, ("LED-001",))]
    faults = [
        *_field_fault(check_positive_integer, draft.schema_version, "ENV-003"),
        *identifier_faults(draft.event_id, "ENV-004"),
        *identifier_faults(draft.kind, "ENV-007"),
        *_field_fault(lambda value, *_: check_occurred_at(value), draft.occurred_at, "ENV-008"),
    ]
    if draft.ignorable is not True and draft.ignorable is not False:
        faults.append(Fault(INVALID_INPUT, ("ENV-010",)))
    faults.extend(payload_faults(draft.payload))
    if not faults:
        faults.extend(kind_faults(draft.kind, draft.schema_version, draft.payload, registry))
    if draft.kind in NEVER_APPENDED:
        faults.append(Fault(INVALID_INPUT, ("TRN-108",)))
    return faults


def payload_faults(payload: object) -> list[Fault]:
    """ENV-009: the payload must have a canonical form; the CAN id says why it has none."""
    try:
        canonical.encode(payload)
    except CanonicalJsonError as error:
        return [Fault(INVALID_INPUT, ("ENV-009", error.requirement))]
    return []


def kind_faults(
    kind: str, schema_version: int, payload: object, registry: KindRegistry
) -> list[Fault]:
    """KND-002, KND-003: an appended pair must be registered and its payload valid."""
    if not registry.knows(kind, schema_version):
        return [Fault(INVALID_INPUT, ("KND-002", "LED-006"))]
    try:
        registry.check_payload(kind, schema_version, cast(JsonValue, payload))
    except InvalidInputError:
        return [Fault(INVALID_INPUT, ("KND-003", "LED-006"))]
    return []


def _field_fault(
    validator: Callable[[object, str, str], object], value: object, requirement: str
) -> list[Fault]:
    try:
        validator(value, "field", requirement)
    except InvalidInputError:
        return [Fault(INVALID_INPUT, (requirement,))]
    return []


def _is_count(value: object, *, minimum: int, maximum: int | None = None) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= minimum
        and (maximum is None or value <= maximum)
    )


# -- envelopes and archives as bytes ------------------------------------------------


def draft_wire(draft: EventDraft, conversation_id: str, seq: int) -> dict[str, object]:
    """The wire object of ENV-001 for a draft placed at ``seq`` (``ignorable`` only if true)."""
    wire: dict[str, object] = {
        "schemaVersion": draft.schema_version,
        "eventId": draft.event_id,
        "conversationId": conversation_id,
        "seq": seq,
        "kind": draft.kind,
        "occurredAt": draft.occurred_at,
        "payload": draft.payload,
    }
    if draft.ignorable:
        wire["ignorable"] = True
    return wire


def archive_bytes(conversation_id: str, events: Iterable[bytes]) -> bytes:
    """ARC-001: the canonical archive of canonical envelopes, assembled by hand.

    The members are written in the order of CAN-002 (``companions`` <
    ``conversationId`` < ``events`` < ``format`` < ``formatVersion``).
    """
    return b"".join(
        (
            b'{"companions":{},"conversationId":',
            canonical.encode(conversation_id),
            b',"events":[',
            b",".join(events),
            b'],"format":"convledger.archive","formatVersion":1}',
        )
    )


def archive_faults(
    data: object, registry: KindRegistry
) -> tuple[tuple[str, tuple[bytes, ...]] | None, list[Fault]]:
    """Every store-independent fault of archive bytes (ARC-002 .. ARC-012, CAN-010 .. CAN-013).

    Returns ``(conversationId, canonical envelopes)`` when the document is
    well-formed enough to be written, else ``None``, with the faults found.
    """
    if not isinstance(data, bytes):
        return None, [Fault(INVALID_INPUT, ("ARC-003",))]
    try:
        document = canonical.decode(data)
    except CanonicalJsonError as error:
        return None, [Fault(INVALID_INPUT, ("ARC-003", error.requirement))]
    faults: list[Fault] = []
    if canonical.encode(document) != data:
        faults.append(Fault(INVALID_INPUT, ("ARC-003",)))
    if not isinstance(document, dict):
        return None, [*faults, Fault(INVALID_INPUT, ("ARC-002",))]
    faults.extend(_document_faults(document))
    conversation_id = document.get("conversationId")
    events = document.get("events")
    if not isinstance(events, list) or not events:
        faults.append(Fault(INVALID_INPUT, ("ARC-005",)))
        return None, faults
    seen: set[object] = set()
    for index, wire in enumerate(events):
        faults.extend(event_faults(wire, index, conversation_id, seen, registry))
    if faults or not isinstance(conversation_id, str):
        return None, faults
    return (conversation_id, tuple(canonical.encode(wire) for wire in events)), faults


def _document_faults(document: Mapping[str, object]) -> list[Fault]:
    faults = []
    if set(document) != ARCHIVE_MEMBERS:
        faults.append(Fault(INVALID_INPUT, ("ARC-002",)))
    if "format" in document and document["format"] != ARCHIVE_FORMAT:
        faults.append(Fault(INVALID_INPUT, ("ARC-002",)))
    version = document.get("formatVersion", 1)
    if isinstance(version, bool) or version != 1:
        faults.append(Fault(NOT_SUPPORTED, ("ARC-002",)))
    if "conversationId" in document:
        faults.extend(
            Fault(INVALID_INPUT, ("ARC-002",))
            for _ in identifier_faults(document["conversationId"], "ARC-002")
        )
    companions = document.get("companions", {})
    if not isinstance(companions, dict) or companions:
        faults.append(Fault(INVALID_INPUT, ("ARC-011",)))
    return faults


def event_faults(
    wire: object,
    index: int,
    conversation_id: object,
    seen: set[object],
    registry: KindRegistry,
) -> list[Fault]:
    """The faults of one archived envelope at position ``index`` (ENV, ARC-006 .. ARC-012)."""
    if not isinstance(wire, dict):
        return [Fault(INVALID_INPUT, ("ENV-001", "ARC-012"))]
    faults = []
    if set(wire) - ENVELOPE_MEMBERS - {"ignorable"}:
        faults.append(Fault(INVALID_INPUT, ("ENV-002", "ARC-012")))
    if ENVELOPE_MEMBERS - set(wire):
        return [*faults, Fault(INVALID_INPUT, ("ENV-001", "ARC-012"))]
    if "ignorable" in wire and wire["ignorable"] is not True:
        faults.append(Fault(INVALID_INPUT, ("ENV-010", "ARC-012")))
    member_faults = [
        *_field_fault(check_positive_integer, wire["schemaVersion"], "ENV-003"),
        *identifier_faults(wire["eventId"], "ENV-004"),
        *identifier_faults(wire["conversationId"], "ENV-005"),
        *_field_fault(check_positive_integer, wire["seq"], "ENV-006"),
        *identifier_faults(wire["kind"], "ENV-007"),
        *_field_fault(lambda value, *_: check_occurred_at(value), wire["occurredAt"], "ENV-008"),
    ]
    faults.extend(Fault(f.kind, (*f.ids, "ARC-012")) for f in member_faults)
    if isinstance(conversation_id, str) and wire["conversationId"] != conversation_id:
        faults.append(Fault(INVALID_INPUT, ("ARC-006",)))
    if wire["seq"] != index + 1 or isinstance(wire["seq"], bool):
        faults.append(Fault(INVALID_INPUT, ("ARC-007",)))
    if isinstance(wire["eventId"], str):
        if wire["eventId"] in seen:
            faults.append(Fault(INVALID_INPUT, ("ARC-008",)))
        seen.add(wire["eventId"])
    if not member_faults:
        faults.extend(_gate_faults(wire, registry))
    return faults


def _gate_faults(wire: Mapping[str, object], registry: KindRegistry) -> list[Fault]:
    """ARC-012 through the replay gate of RPL: known pairs are checked, unknown ones decided."""
    kind, version = wire["kind"], wire["schemaVersion"]
    assert isinstance(kind, str) and isinstance(version, int)
    if registry.knows(kind, version):
        return [
            Fault(f.kind, ("KND-003", "ARC-012"))
            for f in kind_faults(kind, version, wire["payload"], registry)
        ]
    if wire.get("ignorable") is True:
        return []
    return [Fault(REPLAY_REFUSED, ("RPL-003", "ARC-012"))]


# -- observing a store ------------------------------------------------------------------


def envelope_wire(envelope: Envelope) -> dict[str, object]:
    """The wire object of an envelope a store returned, built from its attributes."""
    wire: dict[str, object] = {
        "schemaVersion": envelope.schema_version,
        "eventId": envelope.event_id,
        "conversationId": envelope.conversation_id,
        "seq": envelope.seq,
        "kind": envelope.kind,
        "occurredAt": envelope.occurred_at,
        "payload": envelope.payload,
    }
    if envelope.ignorable is not False:
        wire["ignorable"] = envelope.ignorable
    return wire


def envelope_bytes(envelope: Envelope) -> bytes:
    """The canonical bytes of an envelope a store returned (ENV-011)."""
    return canonical.encode(envelope_wire(envelope))


def read_whole(store: LedgerStore, conversation_id: str) -> tuple[Envelope, ...]:
    """Every envelope of one conversation in one read of the largest page.

    The checks keep ledgers far below 10000 events, so paging is not involved
    and a broken cursor cannot disguise itself as a broken ledger.
    """
    return store.read(conversation_id, from_seq=1, limit=MAX_LIMIT).items


def state_digest(store: LedgerStore, conversation_ids: Iterable[str]) -> tuple[object, ...]:
    """What a later call can observe of these conversations: heads and canonical envelopes.

    ERR-004 is checked by comparing the digest before and after a refused call.
    """
    return tuple(
        (
            conversation_id,
            store.head(conversation_id),
            tuple(envelope_bytes(e) for e in read_whole(store, conversation_id)),
        )
        for conversation_id in sorted(set(conversation_ids))
    )


def member_differences(expected: bytes, actual: bytes) -> tuple[str, ...]:
    """The requirement ids a difference between two canonical envelopes points at."""
    want, got = canonical.decode(expected), canonical.decode(actual)
    assert isinstance(want, dict) and isinstance(got, dict)
    blame = {
        "seq": "LED-002",
        "eventId": "ENV-004",
        "conversationId": "ENV-005",
        "occurredAt": "ENV-008",
        "ignorable": "ENV-010",
    }
    ids = [
        blame.get(member, "ENV-011")
        for member in sorted(set(want) | set(got))
        if canonical.encode(want.get(member)) != canonical.encode(got.get(member))
        or (member in want) != (member in got)
    ]
    return tuple(dict.fromkeys([*ids, "ENV-011"]))
