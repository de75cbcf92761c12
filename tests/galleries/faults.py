"""The faults gallery: SQLite stores that mishandle a failed write (chapter ``faults.md``).

Each class has exactly ONE bug in how it meets a write that fails (an I/O
error, a full disk, a busy database at some write point), and is listed in
:data:`BROKEN` with the FLT ids the fault sweeps must report failed for it and the one
sweep the gallery test runs against it (each of the first and the last is
caught by every sweep; one is enough for the test).
Each overrides the store's transaction seam (``_transaction``) or one
write hook, and otherwise runs the reference's code.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from convledger.archive import Archive
from convledger.envelope import Envelope, EventDraft
from convledger.faults import FaultPlan
from convledger.runtime.companion import runtime_of
from convledger.sqlite import SqliteStore, rows, runtime
from convledger.sqlite.errors import driver_boundary
from convledger.sqlite.opening import rollback
from convledger.sqlite.transaction import append_checked, import_companions, last_runtime_time
from galleries import BrokenStore, broken
from galleries.sqlite import factory_of


class SwallowsTheCommitError(SqliteStore):
    """Acknowledges a write whose COMMIT failed: the error is dropped, the write rolled back."""

    @contextlib.contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        with self._gate(operation) as connection, driver_boundary(operation):
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield connection
            except BaseException:
                rollback(connection)
                raise
            try:
                connection.execute("COMMIT")
            except sqlite3.Error:  # the bug: "the disk will catch up", the caller hears success
                rollback(connection)


class BatchInOneTransactionPerEvent(SqliteStore):
    """Appends a batch one event per transaction: a failed insert leaves the head advanced."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        placed: list[Envelope] = []
        for offset, one in enumerate(drafts):
            expected = None if expected_head is None else expected_head + offset
            with self._transaction("append", write=True) as connection:
                placed += append_checked(connection, conversation_id, (one,), expected)
        return tuple(placed)


class ImportRetriedHalfApplied(SqliteStore):
    """Imports events and companions in two transactions, and retries the whole import when
    the second fails: the retry finds the first half stored and is refused as a conflict."""

    def _import(self, archive: Archive) -> None:
        with self._transaction("import", write=True) as connection:
            runtime.refuse_purged(connection, archive.conversation_id)
            rows.insert_events(connection, archive.events)
        try:
            self._import_companions(archive)
        except Exception:
            super()._import(archive)  # the bug: the events of the first half are there already

    def _import_companions(self, archive: Archive) -> None:
        state = runtime_of(archive.conversation_id, archive.companions)
        with self._transaction("import", write=True) as connection:
            if state is not None:
                runtime.write_state(connection, state, last_runtime_time(archive.events))
            import_companions(connection, archive, self._settings.clock())


class IgnoresThePlan(SqliteStore):
    """Offers ``inject`` but never gives the plan to its connection: no point ever fails."""

    def inject(self, plan: FaultPlan | None) -> None:
        del plan


BROKEN: tuple[BrokenStore, ...] = (
    broken("faults", SwallowsTheCommitError, "FLT-004",
           factory=factory_of(SwallowsTheCommitError), checks=("faults_accept",)),
    broken("faults", BatchInOneTransactionPerEvent, "FLT-004",
           factory=factory_of(BatchInOneTransactionPerEvent), checks=("faults_batch",)),
    broken("faults", ImportRetriedHalfApplied, "FLT-003",
           factory=factory_of(ImportRetriedHalfApplied), checks=("faults_import",)),
    broken("faults", IgnoresThePlan, "FLT-002", factory=factory_of(IgnoresThePlan),
           checks=("faults_batch",)),
)
"""The broken stores of chapter FLT and the ids the fault sweeps must fail for each."""
