"""The SQLite store's write transaction and the statements one step runs (``sqlite.md``).

:class:`LedgerTransaction` is the handle of the store's own write transaction
(SQL-043): events appended and companion rows written through it commit or
roll back together. The functions here run inside a transaction the store
opened: the checked append of a batch (LED-002 .. LED-006, SQL-040), the
companions of an import (PRJ-044, SPL-055) and of an export (SQL-064).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from convledger.archive import Archive
from convledger.batch import detached_payloads
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft, check_identifier
from convledger.errors import ConflictError, DuplicateError, PurgedError
from convledger.kinds import KindRegistry
from convledger.projections.companion import COMPANION as PROJECTIONS
from convledger.projections.companion import parse_checkpoints
from convledger.runtime.companion import companions_for
from convledger.runtime.state import RUNTIME_KINDS
from convledger.spills.companion import COMPANION as SPILLS
from convledger.spills.companion import parse_spills
from convledger.spills.objects import CREATED as SPILL_CREATED
from convledger.spills.objects import DELETED as SPILL_DELETED
from convledger.spills.objects import SpillMetadata
from convledger.sqlite import companions as side
from convledger.sqlite import rows, runtime_view
from convledger.sqlite.errors import (
    NestedStoreCallError,
    StoreClosedError,
)
from convledger.store import (
    checked_batch,
    companions_of,
)

SPILL_KINDS = frozenset({SPILL_CREATED, SPILL_DELETED})
"""The kinds whose append SPL-008 checks against the stored spills (after LED-003, ERR-010)."""

_TRANSACTION_CONTROL = re.compile(r"\s*(BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE)\b", re.I)


class LedgerTransaction:
    """The handle of one write transaction (SQL-043); valid only inside its scope."""

    def __init__(self, connection: sqlite3.Connection, registry: KindRegistry) -> None:
        self._connection = connection
        self._registry = registry
        self._active = True

    def head(self, conversation_id: str) -> int:
        """LED-012 inside the transaction."""
        check_identifier(conversation_id, "conversationId", "ENV-005")
        return rows.head_of(self._live(), conversation_id)

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        """Append inside the transaction, checked exactly like ``store.append``."""
        batch = checked_batch(self._registry, conversation_id, drafts, expected_head)
        return append_checked(self._live(), conversation_id, batch, expected_head)

    def execute(self, sql: str, parameters: Sequence[object] = ()) -> list[tuple[object, ...]]:
        """Run one statement on a companion table; transaction control is the store's own."""
        if _TRANSACTION_CONTROL.match(sql):
            raise NestedStoreCallError(
                "transaction control inside the store's transaction scope", requirement="SQL-043"
            )
        return list(self._live().execute(sql, tuple(parameters)).fetchall())

    def _live(self) -> sqlite3.Connection:
        if not self._active:
            raise StoreClosedError("the transaction scope has ended", requirement="SQL-043")
        return self._connection


def append_checked(
    connection: sqlite3.Connection,
    conversation_id: str,
    drafts: tuple[EventDraft, ...],
    expected_head: int | None,
) -> tuple[Envelope, ...]:
    """LED-002 .. LED-005 inside a write transaction: check, place at head+1.., insert.

    One statement reads the tombstone (SQL-052), the head and the first free
    rowid of the index (:data:`~convledger.sqlite.rows.APPEND_STATE`); the
    refusals keep the order of ERR-010 (purged, conflict, a stored eventId, a
    live spill). A stored eventId is refused by the unique index
    ``events_by_event_id`` itself (SQL-004) when the insert runs, not by a
    lookup of every eventId before it: only a batch holding a ``spill/*``
    event looks them up first, since its SPL-008 check comes after (ERR-010).
    """
    purged, head, first_rowid, pending = rows.append_state(connection, conversation_id)
    if purged:
        raise PurgedError.of(conversation_id)  # TRN-092: the tombstone just read
    if expected_head is not None and expected_head != head:
        raise ConflictError(
            f"expected head {expected_head}, the ledger is at {head}",
            requirement="LED-005",
            actual=head,  # ERR-005: the head the store actually holds
        )
    if any(draft.kind in SPILL_KINDS for draft in drafts):
        _refuse_stored_event_id(connection, drafts)
        side.refuse_live_spill_events(connection, conversation_id, drafts)
    # LED-002: seqs are head+1.., in the order of the drafts.
    placed = tuple(
        Envelope.from_draft(draft, conversation_id, head + offset)
        for offset, draft in enumerate(drafts, start=1)
    )
    try:
        return rows.insert_placed(
            connection, placed, detached_payloads(drafts), first_rowid, pending
        )
    except sqlite3.IntegrityError:
        # The events of the batch before the refused one are in the transaction: delete them
        # (they have no index or pending row yet), so a caller that catches the refusal inside a
        # write_transaction scope keeps nothing of the batch (LED-004), then name the eventId.
        connection.execute(rows.DELETE_AFTER, (conversation_id, head))
        _refuse_stored_event_id(connection, drafts)
        raise  # not an eventId: the driver boundary types it (SQL-004)


def _refuse_stored_event_id(connection: sqlite3.Connection, drafts: Sequence[EventDraft]) -> None:
    """LED-003: refuse the batch naming the first of its eventIds stored anywhere."""
    stored = rows.first_stored_event_id(connection, (draft.event_id for draft in drafts))
    if stored is not None:
        raise DuplicateError(
            f"eventId {stored!r} already exists", requirement="LED-003", identity=stored
        )


def append_event(
    connection: sqlite3.Connection, conversation_id: str, drafts: tuple[EventDraft, ...]
) -> tuple[Envelope, ...]:
    """A transition's event, by the append path: seq head+1, eventId unique (TRN-008)."""
    return append_checked(connection, conversation_id, drafts, None)


def import_companions(connection: sqlite3.Connection, archive: Archive, now: str) -> None:
    """PRJ-044, SPL-055: the checked checkpoints and spill objects, in the import's transaction."""
    cid = archive.conversation_id
    if PROJECTIONS in archive.companions:
        checkpoints = parse_checkpoints(archive.companions[PROJECTIONS])
        side.write_checkpoints(connection, cid, checkpoints, now)
    if SPILLS in archive.companions:
        for metadata in parse_spills(archive.companions[SPILLS]):
            side.insert_spill(connection, cid, metadata, archive.objects[metadata.reference])


def last_runtime_time(events: Sequence[Envelope]) -> str:
    """SQL-054: ``heads.updated_at`` of an import: the time of its last runtime event."""
    return next(
        envelope.occurred_at for envelope in reversed(events) if envelope.kind in RUNTIME_KINDS
    )


def companions_of_conversation(
    connection: sqlite3.Connection,
    conversation_id: str,
    spills: Sequence[SpillMetadata] | None = None,
) -> dict[str, JsonValue]:
    """SQL-045, SQL-064: every companion of a conversation, in the caller's read transaction.

    ``spills`` passes the spill metadata a bundle export has already read with
    the objects, so the rows are not read twice.
    """
    return companions_of(
        companions_for(runtime_view.load_state(connection, conversation_id)),
        side.load_checkpoints(connection, conversation_id),
        side.live_spills(connection, conversation_id) if spills is None else spills,
    )
