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

The faults of the pieces of a call (identifiers, drafts, payloads, archives)
and the kind names they carry are in
:mod:`convledger_conformance.ledger.model_faults`; the model gathers them.

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

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Final, TypeVar

import attrs

from convledger import canonical
from convledger.envelope import Envelope, EventDraft
from convledger.kinds import KindRegistry, default_registry
from convledger.store import LedgerStore
from convledger_conformance.ledger.model_faults import (
    CONFLICT,
    DUPLICATE,
    INVALID_INPUT,
    NOT_FOUND,
    Fault,
    _is_count,
    archive_faults,
    batch_faults,
    draft_faults,
    identifier_faults,
)
from convledger_conformance.registry import HelperBroken
from convledger_conformance.spec_values import MAX_READ_LIMIT, READ_LIMIT

T = TypeVar("T")

MAX_LIMIT: Final = MAX_READ_LIMIT
"""LED-010: the largest page a read may ask for (``spec/limits.json``)."""
DEFAULT_LIMIT: Final = READ_LIMIT
"""LED-007: the page size when the caller names none (``spec/limits.json``)."""


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


_ENVELOPE_MEMBERS: Final = tuple(
    (name, canonical.encode(name) + b":")
    for name in sorted(("schemaVersion", "eventId", "conversationId", "seq", "kind",
                        "occurredAt", "payload", "ignorable"), key=canonical.utf16_sort_key)
)
"""The members an envelope's wire object may have, in the order of CAN-002, each with its name
written out as :func:`envelope_bytes` writes it."""


def envelope_bytes(envelope: Envelope) -> bytes:
    """The canonical bytes of an envelope a store returned (ENV-011).

    Exactly ``canonical.encode(envelope_wire(envelope))``, assembled as :func:`archive_bytes`
    is: the member names are fixed, so their order (CAN-002) is known, and only the values
    are encoded, in that order (so a value the encoder refuses raises the same error). The
    suite takes these bytes of every event before and after every refusal (``state_digest``).
    """
    wire = envelope_wire(envelope)
    return b"{" + b",".join(
        prefix + canonical.encode(wire[name]) for name, prefix in _ENVELOPE_MEMBERS
        if name in wire
    ) + b"}"


HELPER_LIMIT: Final = 1000
"""The page size of the suite's own reads (:func:`read_whole`): the default of LED-010, not its
largest value, so a store that refuses the largest limit fails the checks of LED-010 only, instead
of every check whose helper reads (issue 20)."""


HELPER_READ_IDS: Final = ("LED-008", "LED-010")
"""What a whole-ledger read of :func:`read_whole` relies on: a legal window is answered."""
HELPER_HEAD_IDS: Final = ("LED-012",)
"""What the head a helper takes relies on."""


def helper_call(call: str, ids: Sequence[str], function: Callable[[], T]) -> T:
    """``function()``; whatever it raises becomes :class:`HelperBroken` naming ``call`` (CAP-006).

    The suite's own store calls go through here, so that a store breaking one of them is
    reported once, as the broken call, instead of as a failure of every check using it.
    """
    try:
        return function()
    except HelperBroken:
        raise
    except Exception as error:
        raise HelperBroken(call, ids, error) from error


def read_whole(store: LedgerStore, conversation_id: str) -> tuple[Envelope, ...]:
    """Every envelope of one conversation, in pages of :data:`HELPER_LIMIT`.

    The checks keep ledgers below 1000 events, so one page holds the ledger and a broken
    cursor cannot disguise itself as a broken ledger; a longer one is read on by ``next_seq``.
    A failing read raises :class:`HelperBroken` (CAP-006).
    """
    call = f"read with limit {HELPER_LIMIT}"
    page = helper_call(call, HELPER_READ_IDS,
                       lambda: store.read(conversation_id, from_seq=1, limit=HELPER_LIMIT))
    items = list(page.items)
    while page.next_seq is not None and page.items:
        page = helper_call(call, HELPER_READ_IDS, functools.partial(
            store.read, conversation_id, from_seq=page.next_seq, limit=HELPER_LIMIT))
        items.extend(page.items)
    return tuple(items)


def helper_head(store: LedgerStore, conversation_id: str) -> int:
    """The head of one conversation, read for the suite's bookkeeping (CAP-006)."""
    return helper_call("head", HELPER_HEAD_IDS, lambda: store.head(conversation_id))


def state_digest(store: LedgerStore, conversation_ids: Iterable[str]) -> tuple[object, ...]:
    """What a later call can observe of these conversations: heads and canonical envelopes.

    ERR-004 is checked by comparing the digest before and after a refused call. Each part is
    labelled (conversation, head, each event by its place) so that
    :func:`convledger_conformance.differences.first_difference` names where two differ.
    """
    return tuple(
        (
            f"conversation {conversation_id!r}",
            (
                ("head", helper_head(store, conversation_id)),
                ("events", tuple((f"event #{number}", envelope_bytes(e)) for number, e
                                 in enumerate(read_whole(store, conversation_id), start=1))),
            ),
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
