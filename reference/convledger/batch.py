"""The checks of one append batch that need no stored state (``ledger.md``).

:func:`validated_batch` is every check of an append that a store can make
before it looks at its data: the conversation id (ENV-005), the batch size
(LED-001), each draft against chapters ENV and KND (LED-006, KND-002,
KND-003), eventIds repeated inside the batch (LED-003) and the shape of
``expected_head`` (LED-005). Every append path of every reference store calls
it, so they cannot disagree. It also detaches the payloads from the caller's
objects (ENV-009, LED-014) and returns each draft as a :class:`DetachedDraft`
carrying the canonical text of its payload, encoded once: the text the size
limit measured (LIM-004) is the text a store writes (SQL-005).

:data:`checked_batch` is :func:`validated_batch` as every store calls it: bound at the
codec seam to the clear function or to its one-pass twin (``convledger.fast.append``).

:func:`check_count` is the integer-argument check that appends and reads share
(LED-005, LED-010). The store interface is in :mod:`convledger.store`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from convledger import codec, limits
from convledger.canonical import NestingTooDeep
from convledger.envelope import (
    Envelope,
    EventDraft,
    check_identifier,
    copied,
    validate_draft_fields,
)
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
        registry.check_appended_payload(draft.kind, draft.schema_version, draft.payload)
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


@attrs.frozen
class DetachedDraft(EventDraft):
    """A draft :func:`validated_batch` checked: its payload is decoded from ``canonical_payload``.

    ``canonical_payload`` is the canonical JSON text of the payload (CAN-001),
    the one encoding of the append: a store writes it as it is (SQL-005) instead
    of encoding the payload again. ``canonical_bytes`` is the same text as the
    encoder wrote it (UTF-8), from which the copies are decoded (LED-014). The
    payload object is the store's own: no caller holds it (LED-014). Neither
    text takes part in equality.
    """

    canonical_payload: str = attrs.field(default="", eq=False, repr=False, kw_only=True)
    canonical_bytes: bytes = attrs.field(default=b"", eq=False, repr=False, kw_only=True)


def detached_payloads(drafts: Sequence[EventDraft]) -> tuple[str, ...] | None:
    """The canonical payload texts of drafts that all came from :func:`validated_batch`, or None.

    None when any did not (a transition's event, checked by its own module):
    the store then encodes those payloads itself and copies them (LED-014).
    """
    if all(type(draft) is DetachedDraft for draft in drafts):
        return tuple(draft.canonical_payload for draft in drafts)  # type: ignore[attr-defined]
    return None


def handed_out(placed: Sequence[Envelope], drafts: Sequence[EventDraft]) -> tuple[Envelope, ...]:
    """Copies of the envelopes a store keeps, for the caller of an append (LED-014).

    For drafts from :func:`validated_batch`, the payloads are decoded again from
    the bytes the append encoded, the whole batch in one call (the decoder behind
    the seam copies a payload faster than :func:`~convledger.envelope.copied`
    walks it); otherwise :func:`~convledger.envelope.copied`.
    """
    if not all(type(draft) is DetachedDraft for draft in drafts):
        return tuple(copied(envelope) for envelope in placed)
    payloads = codec.decode_stored_page(
        [draft.canonical_bytes for draft in drafts]  # type: ignore[attr-defined]
    )
    return tuple(
        Envelope(
            envelope.schema_version,
            envelope.event_id,
            envelope.conversation_id,
            envelope.seq,
            envelope.kind,
            envelope.occurred_at,
            payload,
            envelope.ignorable,
        )
        for envelope, payload in zip(placed, payloads, strict=True)
    )


def _detached(draft: EventDraft) -> DetachedDraft:
    """The draft with its payload read back from its canonical bytes (ENV-009, LED-014).

    The copy shares no object with the caller, so later mutations cannot reach
    the ledger, and it holds only the types a decoder yields (``dict``,
    ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``): the kind's
    schema then judges exactly the value a later read returns (a tuple or a
    read-only mapping is a JSON array or object too), and a payload this
    implementation could not decode again is refused before it is stored.

    One walk of the payload: the encoder checks the depth limit (LIM-005) as
    it writes. The refusals keep their order: a payload both too deep and not
    JSON is refused for its depth (the depth is checked on that error path).
    """
    try:
        encoded, payload = codec.encode_payload_copied(draft.payload)
    except NestingTooDeep:
        raise limits.too_deep("payload") from None  # LIM-005
    except CanonicalJsonError as error:
        limits.check_depth(draft.payload, "payload")  # LIM-005 comes first (ERR-010)
        raise _not_canonical(error) from error
    limits.check_size(encoded, "payload")  # LIM-004
    text = encoded.decode("utf-8")
    if payload is None:
        try:
            # codec.decode_stored_bytes reads canonical bytes exactly as canonical.decode does
            # (the fast one is proven in tests/test_fast_decode.py); the encoder just wrote them.
            payload = codec.decode_stored_bytes(encoded)
        except CanonicalJsonError as error:
            raise _not_canonical(error) from error
    return DetachedDraft(
        draft.event_id,
        draft.kind,
        draft.occurred_at,
        payload,
        draft.schema_version,
        draft.ignorable,
        canonical_payload=text,
        canonical_bytes=encoded,
    )


def _not_canonical(error: CanonicalJsonError) -> InvalidInputError:
    return InvalidInputError(
        f"payload is not canonical JSON or cannot be read back: {error.message}",
        requirement="ENV-009",
        field="payload",
    )


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


checked_batch: Callable[[KindRegistry, object, object, object], tuple[EventDraft, ...]] = (
    codec.fuse_append_checks(validated_batch, EventDraft, DetachedDraft, RUNTIME_KINDS, MAX_BATCH)
)
""":func:`validated_batch` as the stores call it: on the fast code, one pass over the drafts
(:func:`convledger.fast.append.fused`) with the same answer to every batch, result or
refusal (``tests/test_fast_append.py``); on the clear code, :func:`validated_batch` itself."""
