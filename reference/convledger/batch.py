"""The checks of one append batch that need no stored state (``ledger.md``).

:func:`validated_batch` is every check of an append that a store can make
before it looks at its data: the conversation id (ENV-005), the batch size
(LED-001), each draft against chapters ENV and KND (LED-006, KND-002,
KND-003), eventIds repeated inside the batch (LED-003) and the shape of
``expected_head`` (LED-005). Every append path of every reference store calls
it, so they cannot disagree. It also detaches the payloads from the caller's
objects (ENV-009, LED-014).

:func:`check_count` is the integer-argument check that appends and reads share
(LED-005, LED-010). The store interface is in :mod:`convledger.store`.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from convledger import codec, limits
from convledger.envelope import EventDraft, check_identifier, validate_draft_fields
from convledger.errors import CanonicalJsonError, DuplicateError, InvalidInputError
from convledger.kinds import KindRegistry
from convledger.runtime.state import RUNTIME_KINDS
from convledger.store_interface import MAX_BATCH


def validated_batch(
    registry: KindRegistry,
    conversation_id: object,
    drafts: object,
    expected_head: object,
) -> tuple[EventDraft, ...]:
    """Every check of an append that needs no stored state (LED-001, LED-003, LED-005, LED-006).

    Returns the drafts with payloads detached from the caller's objects. Every
    append path of every store calls this, so they cannot disagree.
    """
    check_identifier(conversation_id, "conversationId", "ENV-005")
    # LED-004: any refusal here refuses the whole batch before the store is touched.
    # ERR-010: every invalid_input of the call alone comes first, in this order, and
    # only then the duplicate of an eventId repeated inside the batch.
    # _detached encodes each payload once; that encoding is also its ENV-009 check.
    batch = tuple(_detached(validate_draft_fields(draft)) for draft in _as_batch(drafts))
    for draft in batch:
        registry.check_payload(draft.kind, draft.schema_version, draft.payload)
        _refuse_runtime_kind(draft)
    if expected_head is not None:
        # LIM-007: no head exceeds 2**53 - 1 (ENV-006), so a larger expected head is refused
        check_count(
            expected_head, "expected_head", "LED-005", minimum=0, maximum=limits.MAX_INTEGER
        )
    _refuse_repeated_ids(batch)
    return batch


def _refuse_runtime_kind(draft: EventDraft) -> None:
    """TRN-108: only migration and applied transitions write the runtime kinds (and import)."""
    if draft.kind in RUNTIME_KINDS:
        raise InvalidInputError(
            f"{draft.kind} is written by migration and transitions only, never appended",
            requirement="TRN-108",
            field="kind",
        )


def _as_batch(drafts: object) -> tuple[EventDraft, ...]:
    if isinstance(drafts, (str, bytes)) or not isinstance(drafts, Sequence):
        raise InvalidInputError("drafts must be a sequence of EventDraft", requirement="LED-001")
    if not 1 <= len(drafts) <= MAX_BATCH:
        raise InvalidInputError(
            f"an append carries 1 to {MAX_BATCH} drafts, got {len(drafts)}",
            requirement="LED-001",
            field="drafts",
        )
    return tuple(drafts)


def _detached(draft: EventDraft) -> EventDraft:
    """The draft with its payload read back from its canonical bytes (ENV-009, LED-014).

    The copy shares no object with the caller, so later mutations cannot reach
    the ledger, and it holds only the types a decoder yields (``dict``,
    ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``): the kind's
    schema then judges exactly the value a later read returns (a tuple or a
    read-only mapping is a JSON array or object too), and a payload this
    implementation could not decode again is refused before it is stored.
    """
    limits.check_depth(draft.payload, "payload")  # LIM-005, before any encoder walks it
    try:
        # codec.decode_stored reads canonical text exactly as canonical.decode does (the
        # fast one is proven in tests/test_fast_decode.py), and the encoder just wrote it.
        encoded = limits.check_size(codec.encode(draft.payload), "payload")  # LIM-004
        payload = codec.decode_stored(encoded.decode("utf-8"))
    except CanonicalJsonError as error:
        raise InvalidInputError(
            f"payload is not canonical JSON or cannot be read back: {error.message}",
            requirement="ENV-009",
            field="payload",
        ) from error
    return attrs.evolve(draft, payload=payload)


def _refuse_repeated_ids(batch: tuple[EventDraft, ...]) -> None:
    seen: set[str] = set()
    for draft in batch:
        if draft.event_id in seen:
            raise DuplicateError(
                f"eventId {draft.event_id!r} appears twice in one batch",
                requirement="LED-003",
                identity=draft.event_id,
            )
        seen.add(draft.event_id)


def check_count(
    value: object, field: str, requirement: str, *, minimum: int, maximum: int | None = None
) -> int:
    """``value`` as an int in ``minimum..maximum``; else InvalidInputError (LED-005, LED-010).

    CAN-017: a float (1.0, 1e0) is not an integer argument, whatever its value.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            f"{field} must be an integer, got {limits.shown(value)}",
            requirement=requirement,
            field=field,
        )
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise InvalidInputError(
            f"{field} must be {bounds}, got {limits.shown(value)}",
            requirement=requirement,
            field=field,
        )
    return value
