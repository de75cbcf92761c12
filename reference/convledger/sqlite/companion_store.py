"""The SQLite store's companions: projections, spills, search and fact rows (SQL-060 .. SQL-069).

:class:`SqliteCompanions` holds the hooks of capabilities ``projections``,
``spills``, ``search`` and ``fact_rows`` for :class:`~convledger.sqlite.store.SqliteStore`,
which provides the transaction scopes they run in: every write is one
``BEGIN IMMEDIATE`` transaction with the events that record it (SQL-043; so a
kill never leaves a checkpoint ahead of its fold, DUR-006, nor a spill without
its event, DUR-007),
every read that must be consistent one read transaction. The rows
themselves are written by :mod:`convledger.sqlite.companions`, the FTS5
search by :mod:`convledger.sqlite.search`.
"""

from __future__ import annotations

import abc
import contextlib
import sqlite3
from collections.abc import Callable

import attrs

from convledger.envelope import Envelope, EventDraft
from convledger.host.rows import FactRow
from convledger.host.store import FactRowsBase
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.store import ProjectionsBase
from convledger.search.operations import Allowed, Hit
from convledger.search.store import SearchBase
from convledger.spills.objects import SpillMetadata
from convledger.spills.store import SpillsBase
from convledger.sqlite import companions as side
from convledger.sqlite import rows, runtime
from convledger.sqlite import search as fts
from convledger.sqlite.errors import (
    driver_boundary,
)
from convledger.sqlite.opening import Settings
from convledger.sqlite.transaction import (
    LedgerTransaction as LedgerTransaction,
)
from convledger.sqlite.transaction import (
    append_checked,
)
from convledger.store import (
    Capability,
)

_RUNTIME = frozenset(
    {
        Capability.TRANSITIONS,
        Capability.PURGE,
        Capability.PROJECTIONS,
        Capability.SPILLS,
        Capability.SEARCH,
        Capability.FACT_ROWS,
    }
)
# SQL-048: persistence, migration and multi_process on a file, never on :memory:.
FILE_CAPABILITIES = _RUNTIME | frozenset(
    {Capability.LEDGER, Capability.PERSISTENCE, Capability.MIGRATION, Capability.MULTI_PROCESS}
)
"""What a store on a file declares (CAP-001)."""
MEMORY_CAPABILITIES = _RUNTIME | frozenset({Capability.LEDGER})
"""What a store on ``:memory:`` declares: nothing outlives it, no other process sees it."""
READ_ONLY_CAPABILITIES = _RUNTIME | frozenset({Capability.LEDGER, Capability.PERSISTENCE})
"""What a read-only handle declares; its writes are refused as ``unauthorized`` (SQL-021)."""

FaultProbe = Callable[[str], None]


class SqliteCompanions(ProjectionsBase, SpillsBase, SearchBase, FactRowsBase):
    """The companion hooks; the scopes are the store's (:class:`SqliteStore`)."""

    _settings: Settings

    @abc.abstractmethod
    def _gate(self, operation: str) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """The handle's connection, for one autocommit read (the store's lock held)."""

    @abc.abstractmethod
    def _transaction(
        self, operation: str, *, write: bool
    ) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One transaction: ``BEGIN IMMEDIATE`` for writes (SQL-040), ``BEGIN`` for snapshots."""

    @abc.abstractmethod
    def _probe(self, label: str) -> None:
        """The fault probe of tests, called after each write inside a transaction."""

    # -- projections, spills and search (SQL-060 .. SQL-066) --------------------------------------

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        """SQL-060: read, fold and write the checkpoint in one write transaction."""
        updated_at = self._settings.clock()
        # PRJ-032: a refused or failed catch-up rolls back, so the checkpoint stays.
        with self._transaction("catch_up", write=True) as connection:
            runtime.refuse_purged(connection, conversation_id)  # PRJ-016
            return side.catch_up(
                connection, conversation_id, definition, self.registry, max_events,
                updated_at, self._probe,
            )

    def _load_checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None:
        with self._gate("load_checkpoint") as connection, driver_boundary("load_checkpoint"):
            return side.load_checkpoint(connection, conversation_id, name)

    def _projection_status(
        self, conversation_id: str, name: str
    ) -> tuple[Checkpoint | None, int]:
        with self._transaction("projection_status", write=False) as connection:
            stored = side.load_checkpoint(connection, conversation_id, name)
            return stored, rows.head_of(connection, conversation_id)

    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata:
        """SQL-062: the event and the object in one write transaction."""
        with self._transaction("put_spill", write=True) as connection:
            runtime.refuse_purged(connection, conversation_id)
            side.refuse_live_reference(connection, conversation_id, metadata.reference)
            placed = append_checked(connection, conversation_id, (draft,), None)
            self._probe("event")
            stored = attrs.evolve(metadata, created_seq=placed[0].seq)
            side.insert_spill(connection, conversation_id, stored, data)
            self._probe("spill")
            return stored

    def _write_fact_rows(
        self,
        row: FactRow,
        appends: tuple[tuple[str, tuple[EventDraft, ...]], ...],
        skip_purged: bool,
    ) -> tuple[str, ...]:
        """SQL-068, SQL-069: the events and the row in one write transaction."""
        with self._transaction("write_fact_rows", write=True) as connection:
            written: list[str] = []
            for conversation_id, drafts in appends:
                if skip_purged and runtime.is_purged(connection, conversation_id):
                    continue
                append_checked(connection, conversation_id, drafts, None)
                written.append(conversation_id)
            side.upsert_fact_row(connection, row)
            return tuple(written)

    def _fact_rows(self, table: str, conversation_id: str) -> tuple[FactRow, ...]:
        with self._gate("fact_rows") as connection, driver_boundary("fact_rows"):
            return side.load_fact_rows(connection, table, conversation_id)

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        with self._gate("get_spill") as connection, driver_boundary("get_spill"):
            return side.live_spill(connection, conversation_id, reference)

    def _delete_spill(
        self, conversation_id: str, reference: str, draft_for: Callable[[int], EventDraft]
    ) -> Envelope:
        """SQL-063: the deletion and its event in one write transaction."""
        with self._transaction("delete_spill", write=True) as connection:
            runtime.refuse_purged(connection, conversation_id)
            removed = side.delete_spill(connection, conversation_id, reference)
            self._probe("spill")
            draft = draft_for(removed.size)
            self.registry.check_payload(draft.kind, draft.schema_version, draft.payload)
            placed = append_checked(connection, conversation_id, (draft,), None)
            self._probe("event")
            return placed[0]

    def _search(
        self,
        requester: str,
        words: tuple[str, ...],
        scope: tuple[str, ...] | None,
        limit: int,
        allowed: Allowed,
    ) -> list[Hit]:
        """SQL-066: both parts of a search in one read transaction."""
        with self._transaction("search", write=False) as connection:
            return fts.search(connection, requester, words, scope, limit, allowed)
