"""The faults of the ledger model: why a call must be refused, each with its kind and ids.

The pieces :class:`~convledger_conformance.ledger.model.LedgerModel` judges a
call by, before the store is called: identifiers (ENV-004, ENV-005, ENV-007),
batches (LED-001), drafts and their payloads (ENV-003 .. ENV-010, KND-002,
KND-003, TRN-108) and archives with their envelopes (ARC-002 .. ARC-012,
RPL-003). Each returns the :class:`Fault` list of a value, empty when it is
valid; the model gathers them into a
:class:`~convledger_conformance.ledger.model.Refusal`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final, cast

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import (
    EventDraft,
    check_identifier,
    check_occurred_at,
    check_positive_integer,
)
from convledger.errors import CanonicalJsonError, InvalidInputError
from convledger.kinds import KindRegistry
from convledger_conformance.spec_values import MAX_APPEND_DRAFTS

MAX_BATCH: Final = MAX_APPEND_DRAFTS
"""LED-001: the most drafts one append may carry (``spec/limits.json``)."""
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


# -- faults of archives --------------------------------------------------------------


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
