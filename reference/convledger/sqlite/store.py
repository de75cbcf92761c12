"""The SQLite reference store (chapter ``sqlite.md``).

Theory of operation
-------------------
One store handle owns one connection, in autocommit mode: the store begins
and ends every transaction itself. A lock serializes the handle's callers
(LED-013 within one handle); SQLite's own locking serializes handles and
processes (SQL-040, SQL-047). Every write runs in ``BEGIN IMMEDIATE``, so the
head is read and the next seq assigned while the write lock is held; a busy
database is waited for up to the busy timeout and then refused with
:class:`~convledger.sqlite.errors.StoreBusyError`, a ``conflict`` (SQL-041).

Every operation runs inside :func:`~convledger.sqlite.errors.driver_boundary`,
the one place where driver errors become typed ledger errors (ERR-006).

:meth:`SqliteStore.write_transaction` gives the handle of one write
transaction: later chapters write their companion rows through it, together
with the ledger events that record them, so both commit or neither does
(SQL-043). A call on the same store from inside that scope would wait for the
lock it already holds; it is refused instead (SQL-044).

Runtime transitions, bounded reads and purge (chapter ``transitions.md``) run
through the same scopes: a transition is one write transaction that decides
over :class:`~convledger.sqlite.runtime_view.SqlRuntimeView` and writes its
rows and event (``runtime.py``, SQL-053); every write that can add to a
conversation reads its tombstone inside its transaction first (SQL-052).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence

from convledger import codec
from convledger.archive import Archive, archive_of, encode_archive
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft, check_identifier
from convledger.errors import ConflictError, DuplicateError, NotFoundError
from convledger.handles import StoreLocator
from convledger.kinds import KindRegistry
from convledger.runtime.companion import runtime_of
from convledger.runtime.operations import RecoveryCursor
from convledger.runtime.records import Run
from convledger.runtime.state import Snapshot
from convledger.runtime.store import PurgeBase, TransitionsBase
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome
from convledger.sqlite import companions as side
from convledger.sqlite import rows, runtime
from convledger.sqlite.companion_store import (  # SQL-048: what a handle declares
    FILE_CAPABILITIES,
    MEMORY_CAPABILITIES,
    READ_ONLY_CAPABILITIES,
    FaultProbe,
    SqliteCompanions,
)
from convledger.sqlite.errors import NestedStoreCallError, StoreClosedError, driver_boundary
from convledger.sqlite.faults import FaultSeam, faulting_factory
from convledger.sqlite.migration import MigrationReport, StepObserver
from convledger.sqlite.opening import Settings, open_database, random_event_id, rollback, utc_now
from convledger.sqlite.transaction import (
    LedgerTransaction as LedgerTransaction,
)
from convledger.sqlite.transaction import (
    append_checked,
    append_event,
    companions_of_conversation,
    import_companions,
    last_runtime_time,
)
from convledger.store import Capability, LedgerStore, not_supported

OPENER = "convledger.sqlite:open_file_store"
"""The opener a file store's locator names (:func:`convledger.sqlite.located.open_file_store`)."""


class SqliteStore(TransitionsBase, PurgeBase, SqliteCompanions, FaultSeam):
    """The ledger in one SQLite file (or ``:memory:``), schema version 4."""

    declared = FILE_CAPABILITIES

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        synchronous: str = "FULL",
        busy_timeout: float = 5.0,
        clock: Callable[[], str] = utc_now,
        new_event_id: Callable[[], str] = random_event_id,
        connection_hook: Callable[[sqlite3.Connection], None] | None = None,
        connection_factory: type[sqlite3.Connection] = sqlite3.Connection,
        on_migration_step: StepObserver | None = None,
        on_close: Callable[[], None] | None = None,
        registry: KindRegistry | None = None,
        fault_probe: FaultProbe | None = None,
    ) -> None:
        """Open (create, validate or migrate) the database at ``path``; see ``opening.py``.

        ``clock`` and ``new_event_id`` date and name the baseline events of a
        migration (SQL-032), and ``clock`` dates purges (SQL-050);
        ``connection_hook`` runs on the new connection before the store uses
        it; ``connection_factory`` is the :class:`sqlite3.Connection` subclass
        the connection is made from (a subclass of it with the seam, FLT-001), so a
        subclass may observe the statements the store runs, but must run them
        unchanged (the benchmark harness ``convledger_bench`` records them so);
        ``on_close`` runs once when the store closes. ``fault_probe``, when
        given, is called with a label after each write of a transition inside
        its transaction, so tests can prove a failure there leaves nothing
        (TRN-004; labels in ``runtime.py``).
        """
        super().__init__(registry=registry)
        self._settings = Settings(
            path=os.fspath(path),
            read_only=read_only,
            synchronous=synchronous,
            busy_timeout=busy_timeout,
            clock=clock,
            new_event_id=new_event_id,
            connection_hook=connection_hook,
            connection_factory=faulting_factory(connection_factory),  # FLT-001
            on_migration_step=on_migration_step,
        )
        opened = open_database(self._settings, self.registry)
        self._connection = opened.connection
        self.outcome = opened.outcome
        """``created``, ``opened`` or ``migrated``: what opening did to the file."""
        self.migration: MigrationReport | None = opened.migration
        self._on_close = on_close
        self._fault_probe = fault_probe
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._closed = False

    # -- what the store is ---------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The database file (or ``:memory:``)."""
        return self._settings.path

    @property
    def capabilities(self) -> frozenset[Capability]:
        """CAP-001: declared per handle, by what its database can do."""
        if self._settings.in_memory:
            return MEMORY_CAPABILITIES
        return READ_ONLY_CAPABILITIES if self._settings.read_only else FILE_CAPABILITIES

    def reopen(self) -> LedgerStore:
        """LED-015: close this handle and open the same file with the same settings."""
        if Capability.PERSISTENCE not in self.capabilities:
            raise not_supported(Capability.PERSISTENCE, "reopen")
        on_close, self._on_close = self._on_close, None
        self.close()
        return self._same_file(on_close=on_close, migration=True)

    def _same_file(self, *, on_close: Callable[[], None] | None, migration: bool) -> SqliteStore:
        """A new handle on this handle's file with its settings; ``on_close`` its own."""
        settings = self._settings
        return type(self)(
            settings.path,
            read_only=settings.read_only,
            synchronous=settings.synchronous,
            busy_timeout=settings.busy_timeout,
            clock=settings.clock,
            new_event_id=settings.new_event_id,
            connection_hook=settings.connection_hook,
            connection_factory=settings.connection_factory,
            on_migration_step=settings.on_migration_step if migration else None,
            on_close=on_close,
            registry=self.registry,
            fault_probe=self._fault_probe,
        )

    def close(self) -> None:
        """Close the connection; later calls are refused. Closing twice is harmless."""
        if self._owner == threading.get_ident():
            raise NestedStoreCallError(
                "close called from inside this store's own transaction scope",
                requirement="SQL-044",
            )
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._connection.close()
        if self._on_close is not None:
            self._on_close()

    # -- transaction scopes --------------------------------------------------------------------

    @contextlib.contextmanager
    def _gate(self, operation: str) -> Iterator[sqlite3.Connection]:
        """Hold the handle's lock; refuse a call from inside this store's own scope (SQL-044)."""
        if self._owner == threading.get_ident():
            raise NestedStoreCallError(
                f"{operation} called from inside this store's own transaction scope; "
                "use the transaction handle instead",
                requirement="SQL-044",
            )
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"{operation} on a closed store", requirement="CAP-003")
            self._owner = threading.get_ident()
            try:
                yield self._connection
            finally:
                self._owner = None

    @contextlib.contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction, committed before it returns (SQL-040, DUR-001); ``BEGIN IMMEDIATE``."""
        with self._gate(operation) as connection, driver_boundary(operation):
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                rollback(connection)
                raise

    @contextlib.contextmanager
    def write_transaction(self) -> Iterator[LedgerTransaction]:
        """SQL-043: the store's own write transaction, for events with companion rows.

        Everything done through the yielded handle commits when the block ends
        and rolls back when it raises. Calls on the store itself inside the
        block are refused (SQL-044).
        """
        with self._transaction("write transaction", write=True) as connection:
            handle = LedgerTransaction(connection, self.registry)
            try:
                yield handle
            finally:
                handle._active = False

    # -- the primitives of StoreBase ------------------------------------------------------------

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        # LED-004, ERR-004, DUR-002: one write transaction; a refusal rolls back all of it.
        # LED-017, DUR-010, DUR-011: the head is read inside BEGIN IMMEDIATE, so writers of
        # every handle and process take seqs one after the other, never the same one (DUR-003).
        with self._transaction("append", write=True) as connection:
            return append_checked(connection, conversation_id, drafts, expected_head)

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        upper = rows.MAX_SEQ if to_seq is None else min(to_seq, rows.MAX_SEQ)
        if from_seq > upper:
            return []  # LED-011: no seq beyond 2**53 - 1 exists (ENV-006)
        with self._gate("read") as connection, driver_boundary("read"):
            return rows.read_window(connection, conversation_id, from_seq, upper, limit)

    def _head(self, conversation_id: str) -> int:
        # LED-019, LED-021: every read asks the database; no handle keeps a cache. DUR-014: the
        # head is the last stored event's seq, so it commits with the events and a kill cannot
        # part them.
        with self._gate("head") as connection, driver_boundary("head"):
            return rows.head_of(connection, conversation_id)

    def _snapshot_events(self, conversation_id: str) -> Sequence[Envelope]:
        """ARC-014, SQL-045: the export reads in one read transaction."""
        with self._transaction("export", write=False) as connection:
            return rows.export_events(connection, conversation_id)

    def export_conversation(self, conversation_id: str) -> bytes:
        """ARC-001, SQL-045: the archive of the stored rows and companions, read in one transaction.

        Each stored payload is canonical text already (the store wrote it), so
        the fast code assembles the archive from the rows as they are instead
        of decoding and encoding every event again (:data:`convledger.codec.encode_stored`);
        ``tests/test_fast_archive.py`` proves the bytes equal those of the clear
        code below, :meth:`StoreBase.export_conversation`'s.
        """
        check_identifier(conversation_id, "conversationId", "ENV-005")
        # LED-018: one read transaction sees whole committed batches only.
        with self._transaction("export", write=False) as connection:
            stored = rows.export_rows(connection, conversation_id)
            companions = companions_of_conversation(connection, conversation_id)
        if not stored:
            raise NotFoundError(
                f"conversation {conversation_id!r} has no events to export",
                requirement="ARC-005",
            )
        if codec.encode_stored is None:  # the clear code: decode each row, encode the archive
            events = [rows.envelope_of(row) for row in stored]
            return encode_archive(archive_of(conversation_id, events, companions))
        return codec.encode_stored(conversation_id, stored, companions)

    def _export_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue]]:
        """SQL-045, TRN-107: events and every companion in one read transaction."""
        with self._transaction("export", write=False) as connection:
            events = rows.export_events(connection, conversation_id)
            # SPL-044: the companions in the same snapshot
            return events, companions_of_conversation(connection, conversation_id)

    def _export_bundle_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue], dict[str, bytes]]:
        """SQL-045, SPL-054: events, companions and spill bytes in one read transaction."""
        with self._transaction("export", write=False) as connection:
            events = rows.export_events(connection, conversation_id)
            spills, objects = side.live_objects(connection, conversation_id)
            return events, companions_of_conversation(connection, conversation_id, spills), objects

    def _import(self, archive: Archive) -> None:
        state = runtime_of(archive.conversation_id, archive.companions)
        # ARC-013, DUR-005: one write transaction; a refusal rolls back all of it.
        with self._transaction("import", write=True) as connection:
            runtime.refuse_purged(connection, archive.conversation_id)  # SQL-052
            head = rows.head_of(connection, archive.conversation_id)
            if head:
                raise ConflictError(
                    f"conversation {archive.conversation_id!r} already has {head} events",
                    requirement="ARC-009",
                    actual=head,
                )
            stored = rows.first_stored_event_id(
                connection, (envelope.event_id for envelope in archive.events)
            )
            if stored is not None:
                raise DuplicateError(
                    f"eventId {stored!r} already exists in this store",
                    requirement="ARC-010",
                    identity=stored,
                )
            rows.insert_events(connection, archive.events, archive.payload_texts)  # ARC-016
            if state is not None:  # TRN-105: the companion's rows, in the same transaction
                runtime.write_state(connection, state, last_runtime_time(archive.events))
            import_companions(connection, archive, self._settings.clock())

    # -- runtime transitions, bounded reads and purge (SQL-050 .. SQL-056) ------------------------

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        with self._transaction("transition", write=True) as connection:
            return runtime.transit(
                connection, conversation_id, transition, draft,
                append=append_event, probe=self._probe,
            )

    def _probe(self, label: str) -> None:
        if self._fault_probe is not None:
            self._fault_probe(label)

    def _load_run(self, conversation_id: str, run_id: str) -> Run | None:
        with self._gate("load_run") as connection, driver_boundary("load_run"):
            return runtime.load_run(connection, conversation_id, run_id)

    def _active_runs(self, conversation_id: str) -> list[Run]:
        with self._gate("list_active_runs") as connection, driver_boundary("list_active_runs"):
            return runtime.active_runs(connection, conversation_id)

    def _snapshot(self, conversation_id: str) -> Snapshot | None:
        with self._transaction("load_snapshot", write=False) as connection:
            return runtime.snapshot(connection, conversation_id)

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        with self._gate("scan_recoverable") as connection, driver_boundary("scan_recoverable"):
            return runtime.scan_recoverable(connection, after, limit)

    def _purge(self, conversation_id: str) -> bool:
        purged_at = self._settings.clock()
        with self._transaction("purge", write=True) as connection:
            return runtime.purge(connection, conversation_id, purged_at)

    # -- several handles (capability multi_process, LED-016) ------------------------------------

    def open_handle(self) -> SqliteStore:
        """LED-016: a new connection onto the same file, with this handle's settings.

        Everything but ``on_close`` and the migration observer carries over
        (the file is open already, and closing the new handle must not run
        this one's cleanup).
        """
        self._require(Capability.MULTI_PROCESS, "open_handle")
        return self._same_file(on_close=None, migration=False)

    def locator(self) -> StoreLocator:
        """LED-016: the file and this store class, for :func:`convledger.sqlite.open_file_store`."""
        self._require(Capability.MULTI_PROCESS, "locator")
        cls = type(self)
        argument = {
            "store": f"{cls.__module__}:{cls.__qualname__}",
            "path": os.path.abspath(self._settings.path),
            "synchronous": self._settings.synchronous,
            "busyTimeout": self._settings.busy_timeout,
        }
        return StoreLocator(opener=OPENER, argument=json.dumps(argument, sort_keys=True))
