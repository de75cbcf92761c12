"""The in-memory reference store: the ledger and the runtime as plainly as they can be written.

One lock makes every primitive atomic and serializes concurrent callers
(LED-013). A transition decides over the conversation's
:class:`RuntimeState`, stages its writes on a copy and its event beside it,
and only then swaps both in: an exception anywhere before the swap leaves
nothing behind (TRN-004). ``fault_probe``, when given, is called with a label
after each staged write, so tests can prove exactly that.

:class:`StoreBase` hands :meth:`MemoryStore._append` payloads that
share nothing with the caller, and every envelope this store returns carries a
copy of its payload, so a caller that mutates a dict it holds cannot change
the ledger (LED-014).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import attrs

from convledger import codec
from convledger.archive import Archive
from convledger.batch import handed_out
from convledger.canonical import JsonValue
from convledger.canonical import decode as decode_json
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft, copied
from convledger.errors import ConflictError, DuplicateError, PurgedError
from convledger.host.rows import ChildLink, FactRow
from convledger.host.store import FactRowsBase
from convledger.kinds import KindRegistry
from convledger.projections.companion import COMPANION as PROJECTIONS
from convledger.projections.companion import parse_checkpoints
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.fold import advance
from convledger.projections.operations import should_store
from convledger.projections.store import ProjectionsBase
from convledger.runtime.companion import companions_for, runtime_of
from convledger.runtime.operations import RecoveryCursor, after_cursor, recovery_order
from convledger.runtime.records import Run
from convledger.runtime.rules import decide
from convledger.runtime.state import RuntimeState, Snapshot, compare_and_swap, snapshot_of
from convledger.runtime.store import PurgeBase, TransitionsBase
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome, Status
from convledger.spills.companion import COMPANION as SPILLS
from convledger.spills.companion import parse_spills
from convledger.spills.objects import SpillMetadata
from convledger.spills.operations import not_live, refuse_known_event, refuse_live_spill_events
from convledger.spills.store import SpillsBase
from convledger.store import companions_of

FaultProbe = Callable[[str], None]


class MemoryStore(
    TransitionsBase, PurgeBase, ProjectionsBase, SpillsBase, FactRowsBase
):
    """A volatile store: one list of envelopes and one runtime state per conversation."""

    declared = frozenset(
        {
            Capability.LEDGER,
            Capability.TRANSITIONS,
            Capability.PURGE,
            Capability.PROJECTIONS,
            Capability.SPILLS,
            Capability.FACT_ROWS,
        }
    )

    def __init__(
        self, *, registry: KindRegistry | None = None, fault_probe: FaultProbe | None = None
    ) -> None:
        super().__init__(registry=registry)
        self._lock = threading.Lock()
        self._ledgers: dict[str, list[Envelope]] = {}
        self._event_ids: set[str] = set()
        self._runtime: dict[str, RuntimeState] = {}
        self._purged: set[str] = set()
        self._checkpoints: dict[tuple[str, str], tuple[int, int, bytes]] = {}
        """(conversation, name) -> (version, uptoSeq, canonical state bytes) (PRJ-010)."""
        self._spills: dict[str, dict[str, tuple[SpillMetadata, bytes]]] = {}
        """conversation -> reference -> (metadata, bytes) of its live objects (SPL-010)."""
        self._fault_probe = fault_probe
        self._side_rows: dict[tuple[str, str, str], FactRow] = {}
        """(table, owner conversation, id) -> child link or schedule row (SQL-068, SQL-069)."""

    # -- ledger core ---------------------------------------------------------------------------

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._lock:
            # LED-004, ERR-004: every refusal is raised by _placed, before _commit stores anything.
            placed = self._placed(conversation_id, drafts, expected_head)
            self._commit(conversation_id, placed)
        return handed_out(placed, drafts)  # LED-014: the caller's copies

    def _placed(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        """The drafts at head+1.., after every check; nothing is stored yet (lock held)."""
        self._refuse_purged(conversation_id)
        head = len(self._ledgers.get(conversation_id, []))
        if expected_head is not None and expected_head != head:
            raise ConflictError(
                f"expected head {expected_head}, the ledger is at {head}",
                requirement="LED-005",
                actual=head,  # ERR-005: the head the store actually holds
            )
        for draft in drafts:
            if draft.event_id in self._event_ids:
                raise DuplicateError(
                    f"eventId {draft.event_id!r} already exists",
                    requirement="LED-003",
                    identity=draft.event_id,
                )
        refuse_live_spill_events(self._spills.get(conversation_id, {}).__contains__, drafts)
        # LED-002: seqs are head+1.., in the order of the drafts.
        return tuple(
            Envelope.from_draft(draft, conversation_id, head + offset)
            for offset, draft in enumerate(drafts, start=1)
        )

    def _commit(self, conversation_id: str, placed: tuple[Envelope, ...]) -> None:
        self._ledgers.setdefault(conversation_id, []).extend(placed)
        self._event_ids.update(envelope.event_id for envelope in placed)

    def _refuse_purged(self, conversation_id: str) -> None:
        """TRN-092: a purged conversation takes nothing more, forever (TRN-095: lock held)."""
        if conversation_id in self._purged:
            raise PurgedError.of(conversation_id)

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        with self._lock:
            ledger = self._ledgers.get(conversation_id, [])
            stop = len(ledger) if to_seq is None else min(len(ledger), to_seq)
            window = ledger[from_seq - 1 : min(stop, from_seq - 1 + limit)]
        return [copied(envelope) for envelope in window]

    def _head(self, conversation_id: str) -> int:
        with self._lock:
            return len(self._ledgers.get(conversation_id, []))

    def _snapshot_events(self, conversation_id: str) -> Sequence[Envelope]:
        with self._lock:
            return list(self._ledgers.get(conversation_id, []))

    def _export_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue]]:
        events, companions, _ = self._export_bundle_contents(conversation_id)
        return events, companions

    def _export_bundle_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue], dict[str, bytes]]:
        """ARC-014, SPL-054: events, companions and spill bytes under one lock."""
        with self._lock:
            events = list(self._ledgers.get(conversation_id, []))
            checkpoints = [
                self._checkpoint(conversation_id, name)
                for (owner, name) in self._checkpoints
                if owner == conversation_id
            ]
            live = self._spills.get(conversation_id, {})  # SPL-044: under the same lock
            companions = companions_of(
                companions_for(self._runtime.get(conversation_id)),
                [c for c in checkpoints if c is not None],
                [metadata for metadata, _ in live.values()],
            )
            return events, companions, {ref: body for ref, (_, body) in live.items()}

    def _import(self, archive: Archive) -> None:
        with self._lock:
            self._refuse_purged(archive.conversation_id)
            head = len(self._ledgers.get(archive.conversation_id, []))
            if head:
                raise ConflictError(
                    f"conversation {archive.conversation_id!r} already has {head} events",
                    requirement="ARC-009",
                    actual=head,
                )
            for envelope in archive.events:
                if envelope.event_id in self._event_ids:
                    raise DuplicateError(
                        f"eventId {envelope.event_id!r} already exists in this store",
                        requirement="ARC-010",
                        identity=envelope.event_id,
                    )
            state = runtime_of(archive.conversation_id, archive.companions)
            # ARC-013: every refusal above comes before the first write; ARC-016: events as decoded.
            self._ledgers[archive.conversation_id] = list(archive.events)
            self._event_ids.update(envelope.event_id for envelope in archive.events)
            if state is not None:
                self._runtime[archive.conversation_id] = state
            self._import_companions(archive)

    def _import_companions(self, archive: Archive) -> None:
        """PRJ-044, SPL-055: the checked checkpoints and spill objects of an import."""
        cid = archive.conversation_id
        if PROJECTIONS in archive.companions:
            for checkpoint in parse_checkpoints(archive.companions[PROJECTIONS]):
                self._checkpoints[(cid, checkpoint.name)] = _stored(checkpoint)
        if SPILLS in archive.companions:
            self._spills[cid] = {
                metadata.reference: (metadata, archive.objects[metadata.reference])
                for metadata in parse_spills(archive.companions[SPILLS])
            }

    # -- runtime transitions (chapter transitions.md) ------------------------------------------

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        with self._lock:
            self._refuse_purged(conversation_id)
            state = self._runtime.get(conversation_id) or RuntimeState(conversation_id)
            decision = decide(state, conversation_id, transition, draft.occurred_at)
            if decision.status is not Status.APPLIED:
                return Outcome.of(decision)  # TRN-004: nothing written
            assert decision.head_write is not None
            staged = state.copy()
            compare_and_swap(staged, decision.head_write)
            self._probe("head")
            for record in decision.writes:
                staged.put(record)
                self._probe(type(record).__name__.lower())
            placed = self._placed(conversation_id, (draft,), None)
            self._probe("event")
            self._runtime[conversation_id] = staged
            self._commit(conversation_id, placed)
        return Outcome.of(decision, copied(placed[0]))

    def _probe(self, label: str) -> None:
        if self._fault_probe is not None:
            self._fault_probe(label)

    def _load_run(self, conversation_id: str, run_id: str) -> Run | None:
        with self._lock:
            state = self._runtime.get(conversation_id)
            return None if state is None else state.run(run_id)

    def _active_runs(self, conversation_id: str) -> list[Run]:
        with self._lock:
            state = self._runtime.get(conversation_id)
            return [] if state is None else list(state.active_runs())

    def _snapshot(self, conversation_id: str) -> Snapshot | None:
        with self._lock:
            state = self._runtime.get(conversation_id)
            return None if state is None else snapshot_of(state)

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        with self._lock:
            owned = [
                run
                for state in self._runtime.values()
                for run in state.runs.values()
                if run.state.owned and after_cursor(run, after)
            ]
        return sorted(owned, key=recovery_order)[:limit]

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            if conversation_id in self._purged:
                return False
            state = self._runtime.get(conversation_id)
            if state is not None and state.active_runs():
                raise ConflictError(
                    f"conversation {conversation_id!r} has active runs", requirement="TRN-091"
                )
            # TRN-094: everything of the conversation goes, so reads answer as if it never existed.
            for envelope in self._ledgers.pop(conversation_id, []):
                self._event_ids.discard(envelope.event_id)  # TRN-096: free to be accepted again
            self._runtime.pop(conversation_id, None)
            for key in [key for key in self._checkpoints if key[0] == conversation_id]:
                del self._checkpoints[key]  # TRN-093: the rows kept beside the ledger go too
            self._spills.pop(conversation_id, None)  # SPL-032: the spill objects go too
            schedules = ("schedules", conversation_id)
            for side in [side for side in self._side_rows if side[:2] == schedules]:
                del self._side_rows[side]  # child links outlive the purge (SQL-068)
            self._purged.add(conversation_id)
            return True

    # -- child links and schedules (chapter facts.md) --------------------------------------------

    def _write_fact_rows(
        self,
        row: FactRow,
        appends: tuple[tuple[str, tuple[EventDraft, ...]], ...],
        skip_purged: bool,
    ) -> tuple[str, ...]:
        """SQL-068, SQL-069: every batch and the row under one lock hold, all or nothing."""
        with self._lock:
            placed: list[tuple[str, tuple[Envelope, ...]]] = []
            for conversation_id, drafts in appends:
                if skip_purged and conversation_id in self._purged:
                    continue
                placed.append((conversation_id, self._placed(conversation_id, drafts, None)))
            for conversation_id, envelopes in placed:
                self._commit(conversation_id, envelopes)
            self._side_rows[_row_key(row)] = row
            return tuple(conversation_id for conversation_id, _ in placed)

    def _fact_rows(self, table: str, conversation_id: str) -> tuple[FactRow, ...]:
        with self._lock:
            return tuple(
                row for key, row in sorted(self._side_rows.items())
                if key[0] == table and key[1] == conversation_id
            )

    # -- projections (chapter projections.md) ----------------------------------------------------

    def _checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None:
        found = self._checkpoints.get((conversation_id, name))
        if found is None:
            return None
        version, upto_seq, state = found
        return Checkpoint(name, version, upto_seq, decode_json(state))  # type: ignore[arg-type]

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        """PRJ-011 .. PRJ-013: read, fold and store under one lock, only forward."""
        with self._lock:
            self._refuse_purged(conversation_id)  # PRJ-016
            ledger = self._ledgers.get(conversation_id, [])
            stored = self._checkpoint(conversation_id, definition.name)

            def read(from_seq: int, limit: int) -> Sequence[Envelope]:
                return [copied(e) for e in ledger[from_seq - 1 : from_seq - 1 + limit]]

            # PRJ-032: advance raises before anything is stored; the checkpoint stays.
            result = advance(definition, self._registry, stored, read, len(ledger), max_events)
            if should_store(stored, result):
                self._probe("checkpoint")
                self._checkpoints[(conversation_id, definition.name)] = _stored(result)
                return self._checkpoint(conversation_id, definition.name) or result
            return result if stored is None else stored

    def _load_checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None:
        with self._lock:
            return self._checkpoint(conversation_id, name)

    def _projection_status(
        self, conversation_id: str, name: str
    ) -> tuple[Checkpoint | None, int]:
        with self._lock:
            head = len(self._ledgers.get(conversation_id, []))
            return self._checkpoint(conversation_id, name), head

    # -- spills (chapter spills.md) ---------------------------------------------------------------

    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata:
        """SPL-001, SPL-007: the object and its event under one lock, or neither."""
        with self._lock:
            self._refuse_purged(conversation_id)
            live = self._spills.get(conversation_id, {})
            if metadata.reference in live:
                raise DuplicateError(
                    f"spill {metadata.reference!r} is live in {conversation_id!r}",
                    requirement="SPL-007",
                    identity=metadata.reference,
                )
            placed = self._placed(conversation_id, (draft,), None)
            self._probe("event")
            stored = attrs.evolve(metadata, created_seq=placed[0].seq)
            self._commit(conversation_id, placed)
            self._spills.setdefault(conversation_id, {})[metadata.reference] = (stored, data)
            return stored

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        with self._lock:
            return self._spills.get(conversation_id, {}).get(reference)

    def _delete_spill(
        self, conversation_id: str, reference: str, draft_for: Callable[[int], EventDraft]
    ) -> Envelope:
        """SPL-030, SPL-031: the event and the deletion under one lock."""
        with self._lock:
            self._refuse_purged(conversation_id)
            live = self._spills.get(conversation_id, {})
            if reference not in live:
                raise not_live(conversation_id, reference)
            draft = draft_for(live[reference][0].size)
            self._registry.check_payload(draft.kind, draft.schema_version, draft.payload)
            refuse_known_event(self._event_ids, draft)
            head = len(self._ledgers.get(conversation_id, []))
            placed = (Envelope.from_draft(draft, conversation_id, head + 1),)
            self._probe("event")
            self._commit(conversation_id, placed)
            self._spills[conversation_id] = {
                ref: item for ref, item in live.items() if ref != reference
            }
        return copied(placed[0])


def _stored(checkpoint: Checkpoint) -> tuple[int, int, bytes]:
    return checkpoint.version, checkpoint.upto_seq, codec.encode(checkpoint.state)


def _row_key(row: FactRow) -> tuple[str, str, str]:
    """Where a fact row is kept: (table, owner conversation, id)."""
    if isinstance(row, ChildLink):
        return ("children", row.parent_conversation_id, row.child_conversation_id)
    return ("schedules", row.conversation_id, row.schedule_id)
