"""The PostgreSQL store's companions: projections, spills, search, fact rows (PGS-061 .. PGS-067).

:class:`PostgresCompanions` holds the hooks of capabilities ``projections``,
``spills``, ``search`` and ``fact_rows`` for
:class:`~convledger.postgres.store.PostgresStore`, which provides the
transaction scopes they run in (``_run``: one ``READ COMMITTED`` write
transaction, retried on serialization failures, or one ``REPEATABLE READ READ
ONLY`` snapshot; ``_single``: one autocommit statement). Every write locks the
conversation's row first (PGS-010) and then reads the tombstone, so a
checkpoint, an object or a row never outlives a purge that ran beside it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import attrs

from convledger.envelope import Envelope, EventDraft
from convledger.host.rows import FactRow
from convledger.host.store import FactRowsBase
from convledger.postgres import companions as side
from convledger.postgres import rows, runtime, transaction
from convledger.postgres import search as words
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.store import ProjectionsBase
from convledger.search.operations import Allowed, Hit
from convledger.search.store import SearchBase
from convledger.spills.objects import SpillMetadata
from convledger.spills.store import SpillsBase

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

_T = TypeVar("_T")


class PostgresCompanions(ProjectionsBase, SpillsBase, SearchBase, FactRowsBase):
    """The companion hooks; the transaction scopes are the store's (:class:`PostgresStore`)."""

    @abc.abstractmethod
    def _run(
        self, operation: str, body: Callable[[Connection], _T], *, write: bool = True
    ) -> _T:
        """``body`` in one write transaction (or, ``write=False``, one read-only snapshot)."""

    @abc.abstractmethod
    def _single(self, operation: str, body: Callable[[Connection], _T]) -> _T:
        """``body`` as one autocommit statement."""

    @abc.abstractmethod
    def _probe(self, label: str) -> None:
        """The fault probe of tests, called after each write inside a transaction."""

    @abc.abstractmethod
    def _now(self) -> str:
        """The store's clock (RFC 3339, UTC)."""

    # -- projections (PGS-061) ------------------------------------------------------------------

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        updated_at = self._now()

        def body(connection: Connection) -> Checkpoint:
            # PGS-061: under the lock, so no append, purge or other catch-up runs beside it;
            # PRJ-032: a refused or failed catch-up rolls back, so the checkpoint stays.
            transaction.lock(connection, (conversation_id,))
            runtime.refuse_purged(connection, conversation_id)  # PRJ-016
            return side.catch_up(connection, conversation_id, definition, self.registry,
                                 max_events, updated_at, self._probe)

        return self._run("catch_up", body)

    def _load_checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None:
        return self._single("load_checkpoint",
                            lambda connection: side.load_checkpoint(connection, conversation_id,
                                                                    name))

    def _projection_status(
        self, conversation_id: str, name: str
    ) -> tuple[Checkpoint | None, int]:
        def body(connection: Connection) -> tuple[Checkpoint | None, int]:
            stored = side.load_checkpoint(connection, conversation_id, name)
            return stored, rows.head_of(connection, conversation_id)

        return self._run("projection_status", body, write=False)

    # -- spills (PGS-067) -----------------------------------------------------------------------

    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata:
        def body(connection: Connection) -> SpillMetadata:
            transaction.lock(connection, (conversation_id,))
            runtime.refuse_purged(connection, conversation_id)
            side.refuse_live_reference(connection, conversation_id, metadata.reference)
            placed = transaction.append_checked(connection, conversation_id, (draft,), None)
            self._probe("event")
            stored = attrs.evolve(metadata, created_seq=placed[0].seq)
            side.insert_spill(connection, conversation_id, stored, data)
            self._probe("spill")
            return stored

        return self._run("put_spill", body)

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        return self._single("get_spill",
                            lambda connection: side.live_spill(connection, conversation_id,
                                                               reference))

    def _delete_spill(
        self, conversation_id: str, reference: str, draft_for: Callable[[int], EventDraft]
    ) -> Envelope:
        def body(connection: Connection) -> Envelope:
            transaction.lock(connection, (conversation_id,))
            runtime.refuse_purged(connection, conversation_id)
            removed = side.delete_spill(connection, conversation_id, reference)
            self._probe("spill")
            draft = draft_for(removed.size)
            self.registry.check_payload(draft.kind, draft.schema_version, draft.payload)
            placed = transaction.append_checked(connection, conversation_id, (draft,), None)
            self._probe("event")
            return placed[0]

        return self._run("delete_spill", body)

    # -- search (PGS-062 .. PGS-066) ------------------------------------------------------------

    def _search(
        self,
        requester: str,
        query_words: tuple[str, ...],
        scope: tuple[str, ...] | None,
        limit: int,
        allowed: Allowed,
    ) -> list[Hit]:
        """PGS-066: both parts of a search in one read-only snapshot."""
        return self._run(
            "search",
            lambda connection: words.search(connection, requester, query_words, scope, limit,
                                            allowed),
            write=False,
        )

    # -- child links and schedules (capability fact_rows, PGS-045) ------------------------------

    def _write_fact_rows(
        self,
        row: FactRow,
        appends: tuple[tuple[str, tuple[EventDraft, ...]], ...],
        skip_purged: bool,
    ) -> tuple[str, ...]:
        def body(connection: Connection) -> tuple[str, ...]:
            transaction.lock(connection, [cid for cid, _ in appends])
            written: list[str] = []
            for conversation_id, drafts in appends:
                if skip_purged and runtime.is_purged(connection, conversation_id):
                    continue
                if drafts:
                    transaction.append_checked(connection, conversation_id, drafts, None)
                else:
                    runtime.refuse_purged(connection, conversation_id)
                written.append(conversation_id)
            transaction.upsert_fact_row(connection, row)
            return tuple(written)

        return self._run("write_fact_rows", body)

    def _fact_rows(self, table: str, conversation_id: str) -> tuple[FactRow, ...]:
        return self._single("fact_rows",
                            lambda connection: transaction.load_fact_rows(connection, table,
                                                                          conversation_id))
