"""The positions gallery: stores that mishandle a special event by its position (issue 20).

Each class has exactly ONE bug, visible only when a special event (an unknown
or ignorable one, a transition, a baseline, a spill, a checkpoint's last
folded event) is at the first or last seq of a ledger or on a page edge of
1000: MemoryStore's own catch-up, read, import or purge with one changed line,
or MemoryStore's import with a second check of a companion done the store's own
(wrong) way before the reference's (the ``_decoded`` stores: they see only
input the reference would import, so that nothing else differs). Each is killed
by the positions check of its chapter and passes the rest of the suite at
``smoke`` (``tests/test_gallery_positions.py`` runs the focused checks of its
ids without the positions check); ``DropsATrailingUnknownOnImport`` is caught by
the ledger state machine, whose strategy puts an unknown envelope last.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import attrs

from convledger import canonical, limits
from convledger.archive import Archive, decode_archive
from convledger.envelope import Envelope, copied
from convledger.errors import IntegrityError, LedgerError
from convledger.kinds import KindRegistry
from convledger.memory import MemoryStore, _stored
from convledger.projections.companion import COMPANION as PROJECTIONS
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.fold import PAGE, advance, fold_upto
from convledger.projections.operations import should_store
from convledger.runtime.companion import COMPANION
from convledger.runtime.state import RuntimeState, comparable, rebuild
from convledger.spills.bundle import decode_bundle
from convledger.spills.companion import COMPANION as SPILLS
from convledger.store_interface import ImportReport
from galleries import BrokenStore, broken


def _decoded(data: object, decode: Callable[[bytes, KindRegistry], Archive],
             registry: KindRegistry) -> Archive | None:
    """The archive (or bundle) as the reference decodes it, or None when it refuses it.

    The broken stores' own checks run only on input the reference would import, so that their
    one bug is the one their docstring names: anything else is refused by the reference as it
    would be (LIM-006 before decoding, never a raw exception, ERR-006).
    """
    if not isinstance(data, bytes):
        return None
    with contextlib.suppress(LedgerError):
        limits.check_archive(data, "archive")
        return decode(data, registry)
    return None


class _ChecksTheCompanionItsOwnWay(MemoryStore):
    """MemoryStore's import, with a second companion check over the events :meth:`_folded` picks.

    The one bug of each subclass: the events its fold of TRN-100 runs over. An archive whose
    ``runtime`` companion differs from that fold is refused with ``integrity``, as TRN-104
    says for the right fold; the reference's own check then runs as well.
    """

    def _folded(self, events: Sequence[Envelope]) -> Sequence[Envelope]:
        return events

    def import_conversation(self, archive: bytes, *,
                            projections: Sequence[ProjectionDefinition] = ()) -> ImportReport:
        decoded = _decoded(archive, decode_archive, self._registry)
        runtime = decoded.companions.get(COMPANION) if decoded is not None else None
        if decoded is not None and runtime is not None:
            cid = decoded.conversation_id
            differs = False
            with contextlib.suppress(LedgerError):  # other faults: the reference refuses them
                stored = RuntimeState.from_json(cid, runtime)
                folded = rebuild(cid, self._folded(decoded.events))
                differs = canonical.encode(comparable(stored)) != canonical.encode(
                    comparable(folded))
            if differs:
                raise IntegrityError("the runtime companion differs from the state its "
                                     "ledger rebuilds", requirement="TRN-104")
        return super().import_conversation(archive, projections=projections)


class FoldStopsBeforeTheLastEvent(_ChecksTheCompanionItsOwnWay):
    """TRN-104: the import's fold runs over ``events[:-1]``: a transition at the last seq is
    never folded, so a valid archive ending in one is refused with integrity."""

    def _folded(self, events: Sequence[Envelope]) -> Sequence[Envelope]:
        return events[:-1]


class FoldSkipsTheFirstOfTheSecondPage(_ChecksTheCompanionItsOwnWay):
    """TRN-104: the import folds in pages of 1000 and starts the second one seq late: a
    transition at seq 1001 is never folded."""

    def _folded(self, events: Sequence[Envelope]) -> Sequence[Envelope]:
        return [*events[:PAGE], *events[PAGE + 1:]]


class FoldPassesOverABaselineAlone(_ChecksTheCompanionItsOwnWay):
    """TRN-100: the import's fold looks for runtime history by its ``runtime/transition``
    events (a baseline taken only as the start of one): a migrated conversation whose one
    event, first and last, is its baseline folds to no records, and its true companion is
    refused with integrity."""

    def _folded(self, events: Sequence[Envelope]) -> Sequence[Envelope]:
        return events if any(e.kind == "runtime/transition" for e in events) else []


class _ReadsItsOwnWay(MemoryStore):
    """MemoryStore's catch-up, with the reader and the definition as hooks."""

    def _page(self, ledger: list[Envelope], from_seq: int, limit: int) -> list[Envelope]:
        return ledger[from_seq - 1 : from_seq - 1 + limit]

    def _gated(self, definition: ProjectionDefinition,
               ledger: list[Envelope]) -> ProjectionDefinition:
        return definition

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        with self._lock:
            self._refuse_purged(conversation_id)
            ledger = self._ledgers.get(conversation_id, [])
            stored = self._checkpoint(conversation_id, definition.name)

            def read(from_seq: int, limit: int) -> Sequence[Envelope]:
                return [copied(e) for e in self._page(ledger, from_seq, limit)]

            result = advance(self._gated(definition, ledger), self._registry, stored, read,
                             len(ledger), max_events)
            if should_store(stored, result):
                self._checkpoints[(conversation_id, definition.name)] = _stored(result)
                return self._checkpoint(conversation_id, definition.name) or result
            return result if stored is None else stored


class LosesTheEventAfterAPage(_ReadsItsOwnWay):
    """PRJ-011: the page after a full page starts one seq late (seq 1001 is never folded)."""

    def _page(self, ledger: list[Envelope], from_seq: int, limit: int) -> list[Envelope]:
        start = from_seq + 1 if from_seq == PAGE + 1 else from_seq
        return ledger[start - 1 : start - 1 + limit]


class StopsBeforeTrailingIgnorables(_ReadsItsOwnWay):
    """PRJ-030: reads only up to the last event that is not ignorable: uptoSeq stops short."""

    def _page(self, ledger: list[Envelope], from_seq: int, limit: int) -> list[Envelope]:
        end = len(ledger)
        while end and ledger[end - 1].ignorable:
            end -= 1
        return ledger[from_seq - 1 : min(from_seq - 1 + limit, end)]


class FoldsAnIgnorableFirstEvent(_ReadsItsOwnWay):
    """PRJ-030: an ignorable unknown at seq 1 'teaches' the fold its kind: such events fold."""

    def _gated(self, definition: ProjectionDefinition,
               ledger: list[Envelope]) -> ProjectionDefinition:
        if not ledger or not ledger[0].ignorable or definition.kinds is None:
            return definition
        first = (ledger[0].kind, ledger[0].schema_version)
        return attrs.evolve(definition, kinds=definition.kinds | {first})


class DropsUnknownsAtTheStartOfALaterPage(MemoryStore):
    """RPL-005: a read from the first seq of a later page of 1000 (1001, 2001, ...) leaves out
    the ignorable envelopes of unregistered pairs at its start, as a reader that "resumes
    after the last event it understood" would: a bounded read must not drop unknown ones."""

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        window = list(super()._read(conversation_id, from_seq, to_seq, limit))
        if from_seq > PAGE and from_seq % PAGE == 1:
            while window and window[0].ignorable and not self._registry.knows(
                    window[0].kind, window[0].schema_version):
                window.pop(0)
        return window


class DropsATrailingUnknownOnImport(MemoryStore):
    """KND-004: the import leaves out the last envelope of an archive when it is an ignorable
    one of an unregistered pair (as trailing padding), so the ledger ends one short. Only a
    ledger ending in such an envelope shows it: the ledger machine's ``import_ignorable`` puts
    one last since issue 20 (before, only when its unknown envelopes outnumbered the others)."""

    def _import(self, archive: Archive) -> None:
        super()._import(archive)
        last = archive.events[-1]
        if len(archive.events) > 1 and last.ignorable and not self._registry.knows(
                last.kind, last.schema_version):
            with self._lock:
                self._ledgers[archive.conversation_id].pop()


class PurgesAllButTheLastPage(MemoryStore):
    """TRN-094: the purge deletes in pages of 1000 and stops before a partial last page: the
    events from seq 1001 on stay readable (``while remaining > PAGE``, not ``>= 1``)."""

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            ledger = list(self._ledgers.get(conversation_id, []))
        done = super()._purge(conversation_id)
        if done and len(ledger) > PAGE:
            with self._lock:
                self._ledgers[conversation_id] = ledger[(len(ledger) // PAGE) * PAGE:]
        return done


class FindsACreatedSeqOnAPageEdgeOnePageLate(MemoryStore):
    """SPL-043: the import looks up each ``spills`` entry's ``spill/created`` event in pages of
    1000, page ``seq // PAGE`` at index ``seq % PAGE - 1`` (``(seq - 1) // PAGE`` is right):
    an entry created at seq 1000 is compared with the last event of the second page, so a valid
    bundle with a spill created at the last seq of a page is refused with integrity."""

    def import_bundle(self, bundle: bytes, *,
                      projections: Sequence[ProjectionDefinition] = ()) -> ImportReport:
        decoded = _decoded(bundle, decode_bundle, self._registry)
        entries = decoded.companions.get(SPILLS) if decoded is not None else None
        if decoded is not None and isinstance(entries, list):
            pages = [decoded.events[start:start + PAGE]
                     for start in range(0, len(decoded.events), PAGE)]
            for entry in entries:
                seq = entry["createdSeq"]
                page = pages[seq // PAGE] if seq // PAGE < len(pages) else []
                found = page[seq % PAGE - 1] if page else None
                payload = found.payload if found is not None else None
                if not isinstance(payload, dict) or payload.get("reference") != entry["reference"]:
                    raise IntegrityError(f"spill {entry!r:.80} is not created at seq {seq}",
                                         requirement="SPL-043")
        return super().import_bundle(bundle, projections=projections)


class FoldsACheckpointOneShortOfAPageEdge(MemoryStore):
    """PRJ-042: the import folds each checkpoint's events 1..uptoSeq in pages of 1000 and reads
    the last page with ``limit = upto_seq % PAGE or PAGE - 1`` (``or PAGE`` is right): a valid
    checkpoint whose uptoSeq is 1000 is compared with the fold of 999 events and refused."""

    def import_conversation(self, archive: bytes, *,
                            projections: Sequence[ProjectionDefinition] = ()) -> ImportReport:
        decoded = _decoded(archive, decode_archive, self._registry)
        listed = decoded.companions.get(PROJECTIONS) if decoded is not None else None
        given = projections if isinstance(projections, list | tuple) else ()
        known = {d.name: d for d in given if isinstance(d, ProjectionDefinition)}
        if decoded is not None and isinstance(listed, list):
            for item in listed:
                upto = item["uptoSeq"]
                definition = known.get(item["name"])
                if definition is None or not isinstance(upto, int) or not upto or upto % PAGE:
                    continue
                differs = False
                with contextlib.suppress(LedgerError):  # a fold that fails: the reference's
                    short = fold_upto(definition, self._registry, decoded.events, upto - 1)
                    differs = canonical.encode(short) != canonical.encode(item["state"])
                if differs:
                    raise IntegrityError(f"checkpoint {item['name']!r} differs from the fold "
                                         f"of events 1..{upto}", requirement="PRJ-042")
        return super().import_conversation(archive, projections=projections)


BROKEN: tuple[BrokenStore, ...] = (
    broken("positions", LosesTheEventAfterAPage, "PRJ-011"),
    broken("positions", StopsBeforeTrailingIgnorables, "PRJ-030"),
    broken("positions", FoldsAnIgnorableFirstEvent, "PRJ-030"),
    broken("positions", FoldStopsBeforeTheLastEvent, "TRN-104"),
    broken("positions", FoldSkipsTheFirstOfTheSecondPage, "TRN-104"),
    broken("positions", PurgesAllButTheLastPage, "TRN-094"),
    broken("positions", DropsUnknownsAtTheStartOfALaterPage, "RPL-005"),
    broken("positions", DropsATrailingUnknownOnImport, "KND-004",
           checks=("ledger_state_machine",)),
    broken("positions", FoldPassesOverABaselineAlone, "TRN-104"),
    broken("positions", FindsACreatedSeqOnAPageEdgeOnePageLate, "SPL-043"),
    broken("positions", FoldsACheckpointOneShortOfAPageEdge, "PRJ-042"),
)
