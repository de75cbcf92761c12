"""The ledger gallery: broken MemoryStores of the ledger core (chapters LED, ENV, ARC, ...).

Each class has exactly ONE bug, a mistake a real store could make, and is
listed in :data:`BROKEN` with the requirement ids a conformance run must
report failed for it. Most override a hook of ``StoreBase`` (or a public
operation) and call ``super()``; :class:`EventIdsUniquePerConversation`,
:class:`SeqReservedBeforeChecks` and :class:`ImportsIntoOccupiedLog` misplace
events where no hook reaches, so they write MemoryStore's ledgers themselves.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence

import attrs

from convledger import canonical
from convledger.archive import Archive, decode_archive
from convledger.envelope import Envelope, EventDraft, from_wire
from convledger.errors import (
    ConflictError,
    DuplicateError,
    InvalidInputError,
    LedgerError,
    ReplayRefusedError,
)
from convledger.memory import MemoryStore
from convledger.projections.definition import ProjectionDefinition
from convledger.settle import same_event
from convledger.spills import companion as spill_companion
from convledger.store import Capability, ImportReport, Page
from galleries import BrokenStore, broken


def detached(envelopes: tuple[Envelope, ...]) -> tuple[Envelope, ...]:
    """Copies sharing no payload object with the ledger (so LED-014 holds in every variant)."""
    return tuple(attrs.evolve(e, payload=copy.deepcopy(e.payload)) for e in envelopes)


class EventIdsUniquePerConversation(MemoryStore):
    """LED-003: checks eventIds only against the conversation appended to."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._lock:
            ledger = self._ledgers.setdefault(conversation_id, [])
            if expected_head is not None and expected_head != len(ledger):
                raise ConflictError("stale head", requirement="LED-005", actual=len(ledger))
            if {d.event_id for d in drafts} & {e.event_id for e in ledger}:
                raise DuplicateError("seen here", requirement="LED-003", identity="?")
            placed = tuple(
                Envelope.from_draft(d, conversation_id, len(ledger) + n)
                for n, d in enumerate(drafts, start=1)
            )
            ledger.extend(placed)
            self._event_ids.update(d.event_id for d in drafts)
        return detached(placed)


class SeqReservedBeforeChecks(MemoryStore):
    """LED-004: reserves the batch's seqs before checking it, so a refused batch leaves a gap."""

    def __init__(self) -> None:
        super().__init__()
        self._reserved: dict[str, int] = {}

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._lock:
            ledger = self._ledgers.setdefault(conversation_id, [])
            last = self._reserved.get(conversation_id, len(ledger))
            self._reserved[conversation_id] = last + len(drafts)  # before the checks: the bug
            if expected_head is not None and expected_head != len(ledger):
                raise ConflictError("stale head", requirement="LED-005", actual=len(ledger))
            if any(d.event_id in self._event_ids for d in drafts):
                raise DuplicateError("known", requirement="LED-003", identity="?")
            placed = tuple(
                Envelope.from_draft(d, conversation_id, last + n)
                for n, d in enumerate(drafts, start=1)
            )
            ledger.extend(placed)
            self._event_ids.update(d.event_id for d in drafts)
        return detached(placed)


class AcceptsIgnorableFalse(MemoryStore):
    """ENV-010: an imported ``"ignorable": false`` is read as absent instead of refused."""

    def import_conversation(self, archive: bytes):  # type: ignore[no-untyped-def]
        if isinstance(archive, bytes) and b'"ignorable":false' in archive:
            document = canonical.decode(archive)
            assert isinstance(document, dict)
            for event in document["events"]:
                if event.get("ignorable") is False:
                    del event["ignorable"]
            archive = canonical.encode(document)
        return super().import_conversation(archive)


class ImportsIntoOccupiedLog(MemoryStore):
    """ARC-009: import appends the archive's events to a conversation that has some."""

    def _import(self, archive: Archive) -> None:
        with self._lock:
            for envelope in archive.events:
                if envelope.event_id in self._event_ids:
                    raise DuplicateError("known", requirement="ARC-010", identity="?")
            self._ledgers.setdefault(archive.conversation_id, []).extend(archive.events)
            self._event_ids.update(e.event_id for e in archive.events)


class ExportsWithJsonDumps(MemoryStore):
    """CAN-005: exports with ``json.dumps(sort_keys=True)``: ``1.0``, ``1e+16``, code points."""

    def export_conversation(self, conversation_id: str) -> bytes:
        document = canonical.decode(super().export_conversation(conversation_id))
        return json.dumps(
            document, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode("utf-8")


class DropsLastOfFullPage(MemoryStore):
    """LED-009: a full page loses its last event while nextSeq points past it."""

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = 1000,
    ) -> Page:
        page = super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)
        if page.next_seq is not None and len(page.items) > 1:
            return Page(page.items[:-1], next_seq=page.next_seq)
        return page


class RefusesOneSeqWindow(MemoryStore):
    """LED-008: refuses a window of one seq (``to_seq`` equal to ``from_seq``).

    The store tests ``to_seq <= from_seq`` where LED-010 refuses only a window that
    ends before it starts. Found by mutation testing (``scripts/mutation.py``:
    ``StoreBase.read``); the drawn windows of ``read_windows`` missed it at smoke.
    """

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = 1000,
    ) -> Page:
        if to_seq is not None and to_seq == from_seq:
            raise InvalidInputError(
                f"to_seq {to_seq} is not after from_seq {from_seq}",
                requirement="LED-010",
                field="to_seq",
            )
        return super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)


class IgnoresExpectedHead(MemoryStore):
    """LED-005: appends whatever the caller's expected head."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        return super()._append(conversation_id, drafts, None)


class StoresRetriedBatchAgain(MemoryStore):
    """DUR-017: a batch sent again whose every event is stored, same contents, is stored again.

    The mistake of a store that takes a retry after a lost answer for a new write: it forgets
    the batch's eventIds and appends it a second time at new seqs.
    """

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        stored = {e.event_id: e for e in self._ledgers.get(conversation_id, [])}
        if all(d.event_id in stored and same_event(d, stored[d.event_id]) for d in drafts):
            self._event_ids.difference_update(d.event_id for d in drafts)
            try:
                return super()._append(conversation_id, drafts, expected_head)
            finally:
                self._event_ids.update(d.event_id for d in drafts)
        return super()._append(conversation_id, drafts, expected_head)


class SharesPayloads(MemoryStore):
    """LED-014: stores the caller's payload objects and returns the stored ones."""

    def __init__(self) -> None:
        super().__init__()
        self._shared: dict[str, Envelope] = {}
        """eventId -> the envelope holding the caller's own payload object."""

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        placed = super().append(conversation_id, drafts, expected_head=expected_head)
        for envelope, draft in zip(placed, drafts, strict=False):
            if isinstance(draft, EventDraft):
                self._shared[envelope.event_id] = attrs.evolve(envelope, payload=draft.payload)
        return tuple(self._shared.get(e.event_id, e) for e in placed)

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        window = super()._read(conversation_id, from_seq, to_seq, limit)
        return [self._shared.get(e.event_id, e) for e in window]

    def _snapshot_events(self, conversation_id: str) -> Sequence[Envelope]:
        return [self._shared.get(e.event_id, e) for e in super()._snapshot_events(conversation_id)]


class DedupesBodiesByClaimedHash(MemoryStore):
    """PRV-021: keeps one provider/message body per claimed sha256, for the whole store, and
    writes the body it first kept for a hash in place of a later one (a content-addressed
    body table trusting the producer's hash, LED-022, LED-014; issue 37)."""

    def __init__(self) -> None:
        super().__init__()
        self._bodies: dict[object, object] = {}

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        kept = []
        for draft in drafts:
            payload = draft.payload if isinstance(draft, EventDraft) else None
            if isinstance(payload, dict) and draft.kind == "provider/message":
                claimed = payload.get("sha256")
                body = self._bodies.setdefault(claimed, payload.get("message"))
                draft = attrs.evolve(draft, payload={**payload, "message": body})
            kept.append(draft)
        return super().append(conversation_id, kept, expected_head=expected_head)


class ReservesIdsOfRefusedImport(MemoryStore):
    """ARC-013: reserves each eventId of an archive as its import checks it, and keeps the
    reservations when a later event or the conversation refuses the import (issue 37)."""

    def _import(self, archive: Archive) -> None:
        try:
            super()._import(archive)
        except LedgerError:
            for envelope in archive.events:  # reserved one by one, never released
                if envelope.event_id in self._event_ids:
                    break
                self._event_ids.add(envelope.event_id)
            raise


class AppendsIgnorableUnknownKinds(MemoryStore):
    """KND-002: lets producers append an unregistered kind when the draft is ignorable."""

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        if isinstance(drafts, list) and all(
            isinstance(d, EventDraft) and d.ignorable and not self.registry.knows(
                d.kind, d.schema_version) for d in drafts
        ) and drafts:
            return self._append(conversation_id, tuple(drafts), expected_head)
        return super().append(conversation_id, drafts, expected_head=expected_head)


class ConflictWithoutHead(MemoryStore):
    """ERR-005: a conflict for an expected head does not carry the actual head."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        try:
            return super()._append(conversation_id, drafts, expected_head)
        except ConflictError as error:
            raise ConflictError("stale head", requirement="LED-005") from error


class PartialBatchOnDuplicate(MemoryStore):
    """LED-004: writes the drafts before a duplicate eventId, then refuses."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        try:
            return super()._append(conversation_id, drafts, expected_head)
        except DuplicateError as error:
            index = next(
                (n for n, d in enumerate(drafts) if d.event_id == error.identity), 0
            )
            if not index:
                raise
        super()._append(conversation_id, drafts[:index], expected_head)
        return super()._append(conversation_id, drafts, expected_head)


class RawErrorForLargeLimit(MemoryStore):
    """ERR-006: a limit above 10000 escapes as a bare ValueError of the 'driver'."""

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = 1000,
    ) -> Page:
        if isinstance(limit, int) and limit > 10_000:
            raise OverflowError("page too large for the driver's buffer")
        return super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)


class ImportsUnknownKinds(MemoryStore):
    """RPL-003: imports an archive even when an unknown kind is not ignorable (no replay gate)."""

    def import_conversation(self, archive: bytes) -> ImportReport:
        try:
            return super().import_conversation(archive)
        except ReplayRefusedError:
            document = json.loads(archive)
        events = tuple(from_wire(item) for item in document["events"])
        self._import(Archive(document["conversationId"], events, document["companions"]))
        return ImportReport(document["conversationId"], len(events), events[-1].seq)


class CalendarOfAPattern(MemoryStore):
    """ENV-013: checks occurredAt's day with a pattern (``01``-``31``), not the month's length.

    A JSON Schema pattern cannot count the days of a month (``tests/test_schemas.py``); a
    store validating with one accepts 2023-02-30 and 2024-04-31. Here a stamp whose date
    only the pattern accepts is validated as the first of its month and kept as written.
    Found by mutation testing (``scripts/mutation.py``: ``envelope._DAYS_IN_MONTH``): every
    check compared the store with the suite's model, which shared the reference's table.
    """

    _DAY = re.compile(r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T")

    def __init__(self) -> None:
        super().__init__()
        self._written_as: dict[str, str] = {}

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        stand_ins = []
        for draft in drafts:
            stamp = draft.occurred_at if isinstance(draft, EventDraft) else None
            if isinstance(stamp, str) and self._DAY.match(stamp):
                self._written_as[draft.event_id] = stamp
                draft = attrs.evolve(draft, occurred_at=f"{stamp[:8]}01{stamp[10:]}")
            stand_ins.append(draft)
        return super().append(conversation_id, stand_ins, expected_head=expected_head)

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        kept = tuple(
            attrs.evolve(d, occurred_at=self._written_as.pop(d.event_id, d.occurred_at))
            for d in drafts
        )
        return super()._append(conversation_id, kept, expected_head)


class SeqComparedByEquality(MemoryStore):
    """ENV-006: judges an archived seq only by ``==`` with the seq expected, so ``true`` is 1.

    In Python ``True == 1``: a store that checks each imported event's seq only against its
    position, and not as an integer itself, imports a first event with ``"seq": true`` (and
    stores the 1 it expected). Found by mutation testing (``scripts/mutation.py``: deleting
    ``check_positive_integer(envelope.seq, ...)`` in ``envelope.validate_envelope``).
    """

    def import_conversation(
        self, archive: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        try:
            document = canonical.decode(archive)
        except Exception:
            document = None
        events = document.get("events") if isinstance(document, dict) else None
        first = events[0] if isinstance(events, list) and events else None
        if isinstance(first, dict) and first.get("seq") is True:  # position 1: True == 1
            first["seq"] = 1
            archive = canonical.encode(document)
        return super().import_conversation(archive, projections=projections)


class DecodesArchivesBeforeTheirSize(MemoryStore):
    """LIM-006: decodes an archive of any size and imports it when it is valid.

    The store skips the size test before decoding (``limits.check_archive``), so an archive
    over 128 MiB is imported when its content is valid. Only a canonical archive over the
    limit tells: 128 MiB of spaces is refused anyway, as not JSON. Found by mutation testing
    (``scripts/mutation.py``: the one survivor of ``store_base.py`` at smoke); caught at
    profile ci by the hostile corpus (``a canonical archive one byte over the limit``).
    """

    def import_conversation(
        self, archive: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        decoded = decode_archive(archive, self._registry)  # no limits.check_archive before
        if spill_companion.COMPANION in decoded.companions:
            raise InvalidInputError("an archive with spill objects is imported as a bundle",
                                    requirement="SPL-042", field="companions")
        return self._import_checked(decoded, projections)


class RefusesNothingUndeclared(MemoryStore):
    """CAP-002: declares only the ledger but serves the operations of other capabilities."""

    declared = frozenset({Capability.LEDGER})

    def _require(self, capability: Capability, operation: str) -> None:
        return None


BROKEN: tuple[BrokenStore, ...] = (
    broken("ledger", EventIdsUniquePerConversation, "LED-003"),
    broken("ledger", DedupesBodiesByClaimedHash, "PRV-021", "LED-022"),
    broken("ledger", ReservesIdsOfRefusedImport, "ARC-013",
           checks=("refused_import_frees_its_event_ids",)),
    broken("ledger", SeqReservedBeforeChecks, "LED-004"),
    broken("ledger", AcceptsIgnorableFalse, "ENV-010"),
    broken("ledger", ImportsIntoOccupiedLog, "ARC-009"),
    broken("ledger", ExportsWithJsonDumps, "CAN-005", "ARC-001"),
    broken("ledger", DropsLastOfFullPage, "LED-009"),
    broken("ledger", RefusesOneSeqWindow, "LED-008"),
    broken("ledger", IgnoresExpectedHead, "LED-005"),
    broken("ledger", SharesPayloads, "LED-014"),
    broken("ledger", StoresRetriedBatchAgain, "DUR-017"),
    broken("ledger", AppendsIgnorableUnknownKinds, "KND-002"),
    broken("ledger", ConflictWithoutHead, "ERR-005"),
    broken("ledger", PartialBatchOnDuplicate, "LED-004", "ERR-004"),
    broken("ledger", RawErrorForLargeLimit, "ERR-006"),
    broken("ledger", ImportsUnknownKinds, "RPL-003"),
    broken("ledger", RefusesNothingUndeclared, "CAP-002"),
    broken("ledger", CalendarOfAPattern, "ENV-013"),
    broken("ledger", SeqComparedByEquality, "ENV-006"),
    broken("ledger", DecodesArchivesBeforeTheirSize, "LIM-006"),
)
"""Every broken store of the ledger core, with the ids that must be among the failed ones."""
