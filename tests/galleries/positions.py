"""The positions gallery: catch-ups that mishandle an event by its position (issue 20).

Each class has exactly ONE bug in how its catch-up reads or gates the events
of a ledger, visible only when a special event is at the first or last seq or
an event sits just past a page: it is MemoryStore's own ``_catch_up`` with one
changed line. ``special_events_at_every_position`` must kill each; the fold
checks, which keep special events in the middle of short ledgers, pass them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence

import attrs

from convledger import canonical
from convledger.envelope import Envelope, copied, from_wire
from convledger.errors import IntegrityError, LedgerError
from convledger.memory import MemoryStore, _stored
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.fold import PAGE, advance
from convledger.projections.operations import should_store
from convledger.runtime.companion import COMPANION
from convledger.runtime.state import RuntimeState, comparable, rebuild
from convledger.store_interface import ImportReport
from galleries import BrokenStore, broken


class _ChecksTheCompanionItsOwnWay(MemoryStore):
    """MemoryStore's import, with a second companion check over the events :meth:`_folded` picks.

    The one bug of each subclass: the events its fold of TRN-100 runs over. An archive whose
    ``runtime`` companion differs from that fold is refused with ``integrity``, as TRN-104
    says for the right fold; the reference's own check then runs as well.
    """

    def _folded(self, events: Sequence[Envelope]) -> Sequence[Envelope]:
        return events

    def import_conversation(self, archive: bytes) -> ImportReport:
        document = json.loads(archive) if isinstance(archive, bytes) else None
        runtime = document.get("companions", {}).get(COMPANION) if isinstance(
            document, dict) and isinstance(document.get("companions"), dict) else None
        if runtime is not None:
            cid = document["conversationId"]  # type: ignore[index]
            events = [from_wire(item) for item in document["events"]]  # type: ignore[index]
            differs = False
            with contextlib.suppress(LedgerError):  # other faults: the reference refuses them
                stored = RuntimeState.from_json(cid, runtime)
                folded = rebuild(cid, self._folded(events))
                differs = canonical.encode(comparable(stored)) != canonical.encode(
                    comparable(folded))
            if differs:
                raise IntegrityError("the runtime companion differs from the state its "
                                     "ledger rebuilds", requirement="TRN-104")
        return super().import_conversation(archive)


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


BROKEN: tuple[BrokenStore, ...] = (
    broken("positions", LosesTheEventAfterAPage, "PRJ-011"),
    broken("positions", StopsBeforeTrailingIgnorables, "PRJ-030"),
    broken("positions", FoldsAnIgnorableFirstEvent, "PRJ-030"),
    broken("positions", FoldStopsBeforeTheLastEvent, "TRN-104"),
    broken("positions", FoldSkipsTheFirstOfTheSecondPage, "TRN-104"),
    broken("positions", PurgesAllButTheLastPage, "TRN-094"),
)
