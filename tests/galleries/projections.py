"""The projections gallery: broken MemoryStores of chapter PRJ.

Each class has exactly ONE bug a real store could make (one is the bug the
prior art recorded: a projection advanced outside its transaction and
upserted blindly, bug 12), and is listed in :data:`BROKEN` with the
requirement ids a conformance run must report failed for it. Most override
``ProjectionsBase._catch_up`` (or ``PurgeBase._purge``) and call ``super()``
with a changed definition; three write a checkpoint no catch-up would store
(a blind regressing write, a relabelled version, a checkpoint kept across a
purge), which only MemoryStore's checkpoint table can hold.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs

from convledger import codec
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.memory import MemoryStore
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.fold import advance
from galleries import BrokenStore, broken

EVERY_EVENT = 2**62
"""A read limit above any ledger's length."""


class CheckpointRunsAhead(MemoryStore):
    """PRJ-012: stores the head as uptoSeq even when max_events stopped the fold earlier."""

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        stored = self._load_checkpoint(conversation_id, definition.name)
        start = stored.upto_seq if stored is not None and (
            stored.version == definition.version) else 0
        stop, head = start + max_events, self._head(conversation_id)
        if stop >= head:
            return super()._catch_up(conversation_id, definition, max_events)

        def fold(state: JsonValue, envelope: Envelope) -> JsonValue:
            return definition.fold(state, envelope) if envelope.seq <= stop else state

        # Folds max_events events as asked, but passes over the rest up to the head.
        ahead = attrs.evolve(definition, fold=fold)
        return super()._catch_up(conversation_id, ahead, head - start)


class SkipsUnknownKinds(MemoryStore):
    """PRJ-031: a fold skips a non-ignorable event it does not understand instead of refusing."""

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        if definition.kinds is not None:
            understood = definition.kinds

            def fold(state: JsonValue, envelope: Envelope) -> JsonValue:
                pair = (envelope.kind, envelope.schema_version)
                return definition.fold(state, envelope) if pair in understood else state

            lenient = attrs.evolve(definition, kinds=None, fold=fold)
            return super()._catch_up(conversation_id, lenient, max_events)
        return super()._catch_up(conversation_id, definition, max_events)


class BlindUpsert(MemoryStore):
    """PRJ-013: reads and folds outside the lock, then writes blindly (prior-art bug 12).

    The blind write may move a checkpoint back, which no catch-up stores: it
    writes MemoryStore's checkpoint table itself.
    """

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        ledger = list(self._read(conversation_id, 1, None, EVERY_EVENT))
        stored = self._load_checkpoint(conversation_id, definition.name)

        def read(from_seq: int, limit: int) -> Sequence[Envelope]:
            return ledger[from_seq - 1: from_seq - 1 + limit]

        result = advance(definition, self.registry, stored, read, len(ledger), max_events)
        time.sleep(0.002)  # the window a slow fold leaves open
        if result.upto_seq:
            with self._lock:
                self._checkpoints[(conversation_id, definition.name)] = _stored(result)
        return result


class VersionKeepsOldState(MemoryStore):
    """PRJ-020: a new version continues from the old version's state instead of refolding.

    It relabels the stored checkpoint with the new version, in MemoryStore's table.
    """

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        with self._lock:
            key = (conversation_id, definition.name)
            found = self._checkpoints.get(key)
            if found is not None and found[0] != definition.version:
                self._checkpoints[key] = (definition.version, found[1], found[2])
        return super()._catch_up(conversation_id, definition, max_events)


class PurgeKeepsCheckpoints(MemoryStore):
    """PRJ-016: a purge leaves the conversation's checkpoints behind.

    It puts them back into MemoryStore's table after the purge.
    """

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            kept = {k: v for k, v in self._checkpoints.items() if k[0] == conversation_id}
        newly = super()._purge(conversation_id)
        with self._lock:
            self._checkpoints.update(kept)
        return newly


def _stored(checkpoint: Checkpoint) -> tuple[int, int, bytes]:
    """A checkpoint as MemoryStore's table holds it: version, uptoSeq, canonical state."""
    return checkpoint.version, checkpoint.upto_seq, codec.encode(checkpoint.state)


class StatusHeadAtLastCatchUp(MemoryStore):
    """PRJ-014: projection_status reports the head as it stood at the projection's last
    catch-up, kept beside the checkpoint, not the head as it is (issue 37)."""

    def __init__(self) -> None:
        super().__init__()
        self._heads: dict[tuple[str, str], int] = {}

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        checkpoint = super()._catch_up(conversation_id, definition, max_events)
        self._heads[(conversation_id, definition.name)] = len(
            self._ledgers.get(conversation_id, []))
        return checkpoint

    def _projection_status(
        self, conversation_id: str, name: str
    ) -> tuple[Checkpoint | None, int]:
        checkpoint, head = super()._projection_status(conversation_id, name)
        return checkpoint, self._heads.get((conversation_id, name), head)


BROKEN: tuple[BrokenStore, ...] = (
    broken("projections", CheckpointRunsAhead, "PRJ-012"),
    broken("projections", StatusHeadAtLastCatchUp, "PRJ-014",
           checks=("status_right_after_append",)),
    broken("projections", SkipsUnknownKinds, "PRJ-031"),
    broken("projections", BlindUpsert, "PRJ-013"),
    broken("projections", VersionKeepsOldState, "PRJ-020"),
    broken("projections", PurgeKeepsCheckpoints, "PRJ-016"),
)
"""Every broken store of chapter PRJ and the ids its bug must fail."""
