"""The PostgreSQL reference store (chapter ``postgres.md``).

Theory of operation
-------------------
One store handle owns one connection, in autocommit mode: the store begins
and ends every transaction itself. A lock serializes the handle's callers
(LED-013 within one handle); between handles, processes and hosts the server
serializes the writers of one conversation by the row lock of PGS-010: every
write transaction (READ COMMITTED) first locks the conversation's row of
``conversations`` ``FOR UPDATE``, then reads the tombstone and the head, and
assigns the seqs inside that transaction. Writers of different conversations
do not wait for each other; the unique constraint on ``event_id`` keeps
eventIds unique across all of them (PGS-004).

Every transaction runs through :meth:`PostgresStore._run`, which retries a
serialization failure or a deadlock a bounded number of times with a short
backoff and then refuses with ``conflict`` (PGS-012), and every operation runs
inside :func:`~convledger.postgres.errors.driver_boundary`, the one place
where driver errors become typed ledger errors (ERR-006, PGS-014). A
connection the server lost is replaced on the next call (PGS-013).

Exports and snapshots read in one ``REPEATABLE READ READ ONLY`` transaction
(PGS-031); single-statement reads (a window, a head, a run) are consistent on
their own.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from convledger import codec
from convledger.archive import Archive, archive_of, encode_archive
from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft, check_identifier
from convledger.errors import ConflictError, DuplicateError, NotFoundError
from convledger.handles import StoreLocator
from convledger.kinds import KindRegistry
from convledger.postgres import companions as side
from convledger.postgres import rows, runtime, transaction
from convledger.postgres.companion_store import PostgresCompanions
from convledger.postgres.driver import Settings, connect, psycopg_module
from convledger.postgres.errors import (
    RetryableFailure,
    StoreClosedError,
    StoreConflictError,
    driver_boundary,
)
from convledger.postgres.faults import FaultSeam
from convledger.postgres.opening import open_schema, rollback
from convledger.postgres.schema import DEFAULT_SCHEMA
from convledger.runtime.companion import runtime_of
from convledger.runtime.operations import RecoveryCursor
from convledger.runtime.records import Run
from convledger.runtime.state import RUNTIME_KINDS, Snapshot
from convledger.runtime.store import PurgeBase, TransitionsBase
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome
from convledger.store_interface import LedgerStore

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

CAPABILITIES = frozenset(
    {
        Capability.LEDGER,
        Capability.PERSISTENCE,
        Capability.TRANSITIONS,
        Capability.PURGE,
        Capability.PROJECTIONS,
        Capability.SPILLS,
        Capability.SEARCH,
        Capability.FACT_ROWS,
        Capability.MULTI_PROCESS,
    }
)
"""PGS-050: what the store declares (all but ``migration``, the SQLite file's)."""

OPENER = "convledger.postgres:open_located_store"
"""The opener a store's locator names (:func:`convledger.postgres.factories.open_located_store`)."""

WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
"""PGS-031: exports and snapshots read in one read-only snapshot."""
ATTEMPTS = 5
"""PGS-012: how often a transaction runs before a serialization failure becomes conflict."""

FaultProbe = Callable[[str], None]
_T = TypeVar("_T")


def utc_now() -> str:
    """The store's default clock: UTC, millisecond precision, RFC 3339."""
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class PostgresStore(TransitionsBase, PurgeBase, PostgresCompanions, FaultSeam):
    """The ledger in one schema of a PostgreSQL database, schema version 2."""

    declared = CAPABILITIES

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        connect_timeout: float = 5.0,
        lock_timeout: float = 30.0,
        statement_timeout: float | None = None,
        clock: Callable[[], str] = utc_now,
        on_close: Callable[[], None] | None = None,
        registry: KindRegistry | None = None,
        fault_probe: FaultProbe | None = None,
        emptied: bool = False,
    ) -> None:
        """Connect to ``dsn`` and create or validate ``schema`` (default ``convledger``).

        ``lock_timeout`` bounds the wait for a conversation's row lock (then
        ``conflict``, PGS-011); ``statement_timeout``, when given, bounds every
        statement (then ``unavailable``, PGS-013); it is None by default, as a store
        under failover needs (PGS-072: a cancelled wait for the standby commits).
        ``clock`` dates purges; ``on_close`` runs once when the store closes;
        ``fault_probe`` is called with a label after each write inside a transition's transaction
        (TRN-004; labels in ``runtime.py``). ``emptied`` is for the factory of
        PGS-053 only: the schema is one this store's class created and the
        factory emptied, so opening skips the catalog. Without psycopg installed this
        raises :class:`~convledger.postgres.driver.DriverMissingError`.
        """
        super().__init__(registry=registry)
        psycopg_module()  # PGS-001: a clear error naming the extra, before anything else
        self._settings = Settings(
            dsn=dsn,
            schema=DEFAULT_SCHEMA if schema is None else schema,
            connect_timeout=connect_timeout,
            lock_timeout=lock_timeout,
            statement_timeout=statement_timeout,
        )
        self._clock = clock
        self._on_close = on_close
        self._fault_probe = fault_probe
        self._lock = threading.Lock()
        self._closed = False
        with driver_boundary("open"):
            self._connection: Connection = connect(self._settings)
            try:
                self.outcome = "emptied" if emptied else open_schema(
                    self._connection, self._settings.schema)
                """``created`` or ``opened``: what opening did to the schema (PGS-020)."""
            except BaseException:
                self._connection.close()
                raise

    # -- what the store is ---------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The DSN, the schema and the timeouts of this handle."""
        return self._settings

    @property
    def schema(self) -> str:
        """The PostgreSQL schema (namespace) holding this store's tables."""
        return self._settings.schema

    def reopen(self) -> LedgerStore:
        """LED-015: close this handle and open the same schema with the same settings."""
        on_close, self._on_close = self._on_close, None
        self.close()
        return self._same_schema(on_close=on_close)

    def _same_schema(self, *, on_close: Callable[[], None] | None) -> PostgresStore:
        settings = self._settings
        return type(self)(
            settings.dsn,
            schema=settings.schema,
            connect_timeout=settings.connect_timeout,
            lock_timeout=settings.lock_timeout,
            statement_timeout=settings.statement_timeout,
            clock=self._clock,
            on_close=on_close,
            registry=self.registry,
            fault_probe=self._fault_probe,
        )

    def close(self) -> None:
        """Close the connection; later calls are refused. Closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._connection.close()
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()

    # -- transaction scopes --------------------------------------------------------------------

    @contextlib.contextmanager
    def _gate(self, operation: str) -> Iterator[Connection]:
        """Hold the handle's lock; replace a connection the server lost (PGS-013)."""
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"{operation} on a closed store", requirement="CAP-003")
            if self._connection.closed or self._connection.broken:
                with driver_boundary(operation):
                    self._connection = connect(self._settings)
                self._follow_plan()  # FLT-001: a new connection follows the injected plan
            yield self._connection

    def _run(
        self, operation: str, body: Callable[[Connection], _T], *, write: bool = True
    ) -> _T:
        """PGS-011, PGS-012: ``body`` in one transaction, run again after a retryable failure."""
        failure: RetryableFailure | None = None
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(min(0.2, 0.005 * 2**attempt))
            with self._gate(operation) as connection:
                try:
                    with driver_boundary(operation):
                        connection.execute(WRITE if write else SNAPSHOT)
                        try:
                            result = body(connection)
                            # PGS-071: a connection lost during COMMIT raises unavailable, an
                            # indeterminate refusal (ERR-013), never retried here (PGS-012).
                            connection.execute("COMMIT")
                        except BaseException:
                            rollback(connection)
                            raise
                    return result
                except RetryableFailure as error:
                    failure = error
        raise StoreConflictError(
            f"{operation}: still failing after {ATTEMPTS} attempts ({failure})",
            requirement="PGS-012",
        )

    def _single(self, operation: str, body: Callable[[Connection], _T]) -> _T:
        """One autocommit statement (a consistent snapshot on its own)."""
        with self._gate(operation) as connection, driver_boundary(operation):
            return body(connection)

    # -- the primitives of StoreBase ------------------------------------------------------------

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        def body(connection: Connection) -> tuple[Envelope, ...]:
            # PGS-010, LED-017: the lock first, then tombstone and head (LED-004: one transaction).
            transaction.lock(connection, (conversation_id,))
            # LED-014: StoreBase.append passes the drafts validated_batch detached
            return transaction.append_checked(connection, conversation_id, drafts, expected_head)

        return self._run("append", body)

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        upper = rows.MAX_SEQ if to_seq is None else min(to_seq, rows.MAX_SEQ)
        if from_seq > upper:
            return []  # LED-011: no seq beyond 2**53 - 1 exists (ENV-006)
        return self._single(
            "read",
            lambda connection: rows.read_window(connection, conversation_id, from_seq, upper,
                                                limit),
        )

    def _head(self, conversation_id: str) -> int:
        # LED-019, LED-021: every read asks the server; no handle keeps a cache. DUR-014: the
        # head is the last stored event's seq, so it commits with the events and a kill cannot
        # part them.
        return self._single("head", lambda connection: rows.head_of(connection, conversation_id))

    def _snapshot_events(self, conversation_id: str) -> Sequence[Envelope]:
        return self._export_contents(conversation_id)[0]

    def export_conversation(self, conversation_id: str) -> bytes:
        """ARC-001, PGS-031: the archive of one REPEATABLE READ snapshot, from the stored rows."""
        check_identifier(conversation_id, "conversationId", "ENV-005")

        def body(connection: Connection) -> tuple[list[rows.StoredRow], dict[str, JsonValue]]:
            # LED-018: one snapshot sees whole committed batches only.
            return (rows.export_rows(connection, conversation_id),
                    transaction.companions_of_conversation(connection, conversation_id))

        stored, companions = self._run("export", body, write=False)
        if not stored:
            raise NotFoundError(
                f"conversation {conversation_id!r} has no events to export",
                requirement="ARC-005",
            )
        if codec.encode_stored is None:  # the clear code: decode each row, encode the archive
            events = [rows.envelope_of_stored(row) for row in stored]
            return encode_archive(archive_of(conversation_id, events, companions))
        return codec.encode_stored(conversation_id, stored, companions)

    def _export_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue]]:
        """PGS-031, TRN-107: events and the runtime companion in one snapshot."""

        def body(connection: Connection) -> tuple[list[Envelope], dict[str, JsonValue]]:
            events = rows.export_events(connection, conversation_id)
            return events, transaction.companions_of_conversation(connection, conversation_id)

        return self._run("export", body, write=False)

    def _export_bundle_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue], dict[str, bytes]]:
        """PGS-031, SPL-054: events, companions and spill bytes in one snapshot."""

        def body(
            connection: Connection,
        ) -> tuple[list[Envelope], dict[str, JsonValue], dict[str, bytes]]:
            events = rows.export_events(connection, conversation_id)
            spills, objects = side.live_objects(connection, conversation_id)
            companions = transaction.companions_of_conversation(connection, conversation_id,
                                                                spills)
            return events, companions, objects

        return self._run("export", body, write=False)

    def _import(self, archive: Archive) -> None:
        state = runtime_of(archive.conversation_id, archive.companions)
        cid = archive.conversation_id

        def body(connection: Connection) -> None:
            # PGS-032, ARC-013: one transaction into an empty log; a refusal rolls all of it back.
            transaction.lock(connection, (cid,))
            # PGS-041, ARC-009, ARC-010: tombstone, head and stored eventIds in one statement
            purged, head, stored = rows.append_state(
                connection, cid, (e.event_id for e in archive.events)
            )
            if purged:
                runtime.refuse_purged(connection, cid)  # raises, naming TRN-092
            if head:
                raise ConflictError(f"conversation {cid!r} already has {head} events",
                                    requirement="ARC-009", actual=head)
            if stored is not None:
                raise DuplicateError(f"eventId {stored!r} already exists in this store",
                                     requirement="ARC-010", identity=stored)
            # ARC-016: every member as decoded, its payload text as the decoding encoded it;
            # PGS-062: with its search words
            transaction.insert_events(connection, archive.events, archive.payload_texts or None)
            if state is not None:  # TRN-105: the companion's rows, in the same transaction
                updated_at = next(e.occurred_at for e in reversed(archive.events)
                                  if e.kind in RUNTIME_KINDS)
                runtime.write_state(connection, state, updated_at)
            side.import_companions(connection, archive, self._clock())  # PRJ-044, SPL-055

        self._run("import", body)

    # -- runtime transitions, bounded reads and purge (PGS-040 .. PGS-045) ------------------------

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        def body(connection: Connection) -> Outcome:
            transaction.lock(connection, (conversation_id,))  # PGS-040
            return runtime.transit(connection, conversation_id, transition, draft,
                                   append=transaction.append_event, probe=self._probe)

        return self._run("transition", body)

    def _now(self) -> str:
        return self._clock()

    def _probe(self, label: str) -> None:
        if self._fault_probe is not None:
            self._fault_probe(label)

    def _load_run(self, conversation_id: str, run_id: str) -> Run | None:
        return self._single("load_run",
                            lambda connection: runtime.load_run(connection, conversation_id,
                                                                run_id))

    def _active_runs(self, conversation_id: str) -> list[Run]:
        return self._single("list_active_runs",
                            lambda connection: runtime.active_runs(connection, conversation_id))

    def _snapshot(self, conversation_id: str) -> Snapshot | None:
        return self._run("load_snapshot",
                         lambda connection: runtime.snapshot(connection, conversation_id),
                         write=False)

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        return self._single("scan_recoverable",
                            lambda connection: runtime.scan_recoverable(connection, after, limit))

    def _purge(self, conversation_id: str) -> bool:
        purged_at = self._clock()

        def body(connection: Connection) -> bool:
            transaction.lock(connection, (conversation_id,))  # PGS-044
            return runtime.purge(connection, conversation_id, purged_at)

        return self._run("purge", body)

    # -- several handles (capability multi_process, LED-016) ------------------------------------

    def open_handle(self) -> PostgresStore:
        """LED-016: a new connection onto the same schema, with this handle's settings."""
        return self._same_schema(on_close=None)

    def locator(self) -> StoreLocator:
        """LED-016: the DSN, the schema and this store class, for ``open_located_store``."""
        cls = type(self)
        argument = {"store": f"{cls.__module__}:{cls.__qualname__}", **self._settings.to_json()}
        return StoreLocator(opener=OPENER, argument=json.dumps(argument, sort_keys=True))
