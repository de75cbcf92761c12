"""Deliberately broken stores for chapters PRJ, SPL and SRC: the conformance checks must kill each.

Each class has exactly ONE bug a real store could make (several are the bugs
the prior art recorded: a projection advanced outside its transaction and
upserted blindly, bug 12; foreign hits starving the requester's, bug 10), and
names the requirement ids a conformance run must report failed for it.
MemoryStore variants serve projections and spills; search needs FTS5, so its
variants (and the corrupted spill, which needs bytes on disk) are SQLite stores.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import attrs

from broken_sqlite_stores import factory_of
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.memory import MemoryStore, _copied_envelope
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.fold import advance
from convledger.search.operations import Allowed, Hit
from convledger.search.query import fts_string, scope_token
from convledger.spills.objects import Authorize, SpillMetadata
from convledger.sqlite import SqliteStore
from convledger.sqlite import search as fts
from convledger.store import StoreBase


@attrs.frozen
class BrokenIssue5:
    """A broken store, a maker of fresh instances, and the ids its bug must fail."""

    name: str
    factory: Callable[[], StoreBase]
    catches: tuple[str, ...]


# -- projections ------------------------------------------------------------------------------


class CheckpointRunsAhead(MemoryStore):
    """PRJ-012: stores the head as uptoSeq even when max_events stopped the fold earlier."""

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        result = super()._catch_up(conversation_id, definition, max_events)
        with self._lock:
            head = len(self._ledgers.get(conversation_id, []))
            if result.upto_seq and result.upto_seq < head:
                ahead = attrs.evolve(result, upto_seq=head)
                self._checkpoints[(conversation_id, definition.name)] = _stored(ahead)
                return ahead
        return result




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
    """PRJ-013: reads and folds outside the lock, then writes blindly (prior-art bug 12)."""

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        with self._lock:
            ledger = list(self._ledgers.get(conversation_id, []))
            stored = self._checkpoint(conversation_id, definition.name)

        def read(from_seq: int, limit: int) -> Sequence[Envelope]:
            return [_copied_envelope(e) for e in ledger[from_seq - 1: from_seq - 1 + limit]]

        result = advance(definition, self._registry, stored, read, len(ledger), max_events)
        time.sleep(0.002)  # the window a slow fold leaves open
        if result.upto_seq:
            with self._lock:
                self._checkpoints[(conversation_id, definition.name)] = _stored(result)
        return result


class VersionKeepsOldState(MemoryStore):
    """PRJ-020: a new version continues from the old version's state instead of refolding."""

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
    """PRJ-016: a purge leaves the conversation's checkpoints behind."""

    def _purge(self, conversation_id: str) -> bool:
        with self._lock:
            kept = {k: v for k, v in self._checkpoints.items() if k[0] == conversation_id}
        newly = super()._purge(conversation_id)
        with self._lock:
            self._checkpoints.update(kept)
        return newly


# -- spills -----------------------------------------------------------------------------------


class AuthorizedOnlyAtPut(MemoryStore):
    """SPL-020: get_spill trusts the authorization checked at put and never asks again."""

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Authorize) -> bytes:
        found = self._get_spill(conversation_id, reference)
        if found is None:
            return super().get_spill(conversation_id, reference, authorize=authorize)
        return found[1]


class ReferenceOfAnyConversation(MemoryStore):
    """SPL-021: looks a reference up in every conversation, not only the addressed one."""

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        with self._lock:
            for objects in self._spills.values():
                if reference in objects:
                    return objects[reference]
        return None


class ExportsWithoutSpills(MemoryStore):
    """SPL-044: the export forgets the spills companion (prior-art bug 6)."""

    def _export_bundle_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue], dict[str, bytes]]:
        events, companions, _ = super()._export_bundle_contents(conversation_id)
        companions.pop("spills", None)
        return events, companions, {}


class ReturnsCorruptedSpill(SqliteStore):
    """SPL-022: returns the stored bytes without checking their sha256."""

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Authorize) -> bytes:
        found = self._get_spill(conversation_id, reference)
        if found is None or authorize(found[0].descriptor) is not True:
            return super().get_spill(conversation_id, reference, authorize=authorize)
        return found[1]


# -- search -----------------------------------------------------------------------------------


class LeaksAcrossConversations(SqliteStore):
    """SRC-011: treats a missing or denying callback as a grant for every conversation."""

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        return super()._search(requester, words, scope, limit, lambda cid: cid != requester)


class StarvesOwnHits(SqliteStore):
    """SRC-013: ranks foreign hits before the requester's own (prior-art bug 10)."""

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        with self._transaction("search", write=False) as connection:
            hits = fts.search(connection, requester, words, scope, 100, allowed)
        own = [hit for hit in hits if hit.conversation_id == requester]
        return ([hit for hit in hits if hit.conversation_id != requester] + own)[:limit]


_RAW = threading.local()


class InjectsQuerySyntax(SqliteStore):
    """SRC-020: passes the user's text to FTS5 as query syntax instead of quoting it."""

    def search(self, requester: str, query: str, **options: object) -> tuple[Hit, ...]:  # type: ignore[override]
        _RAW.query = query
        return super().search(requester, query, **options)  # type: ignore[arg-type]

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        raw = str(getattr(_RAW, "query", " ".join(words)))
        expression = f"scope : {fts_string(scope_token(requester))} AND body : ({raw})"
        try:
            with self._transaction("search", write=False) as connection:
                found = connection.execute(fts.HITS_OF_ONE, (expression, limit)).fetchall()
        except Exception:
            return []
        return [Hit(str(c), int(s), str(a), str(n)) for c, s, a, n in found]


def _stored(checkpoint: Checkpoint) -> tuple[int, int, bytes]:
    from convledger import codec

    return checkpoint.version, checkpoint.upto_seq, codec.encode(checkpoint.state)


def _memory(cls: type[MemoryStore]) -> Callable[[], StoreBase]:
    return cls


BROKEN_ISSUE5_STORES: tuple[BrokenIssue5, ...] = (
    BrokenIssue5("CheckpointRunsAhead", _memory(CheckpointRunsAhead), ("PRJ-012",)),
    BrokenIssue5("SkipsUnknownKinds", _memory(SkipsUnknownKinds), ("PRJ-031",)),
    BrokenIssue5("BlindUpsert", _memory(BlindUpsert), ("PRJ-013",)),
    BrokenIssue5("VersionKeepsOldState", _memory(VersionKeepsOldState), ("PRJ-020",)),
    BrokenIssue5("PurgeKeepsCheckpoints", _memory(PurgeKeepsCheckpoints), ("PRJ-016",)),
    BrokenIssue5("AuthorizedOnlyAtPut", _memory(AuthorizedOnlyAtPut), ("SPL-020",)),
    BrokenIssue5("ReferenceOfAnyConversation", _memory(ReferenceOfAnyConversation),
                 ("SPL-021",)),
    BrokenIssue5("ExportsWithoutSpills", _memory(ExportsWithoutSpills), ("SPL-044",)),
    BrokenIssue5("ReturnsCorruptedSpill", factory_of(ReturnsCorruptedSpill), ("SPL-022",)),
    BrokenIssue5("LeaksAcrossConversations", factory_of(LeaksAcrossConversations),
                 ("SRC-011",)),
    BrokenIssue5("StarvesOwnHits", factory_of(StarvesOwnHits), ("SRC-013",)),
    BrokenIssue5("InjectsQuerySyntax", factory_of(InjectsQuerySyntax), ("SRC-020",)),
)
"""Every broken store of chapters PRJ, SPL and SRC and the ids its bug must fail."""

__all__ = ["BROKEN_ISSUE5_STORES", "BrokenIssue5", "EventDraft"]
