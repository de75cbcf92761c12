"""The SQLite gallery: broken SqliteStores (chapter ``sqlite.md``; handles of ``ledger.md``).

Each class has exactly ONE bug, a mistake a real SQLite store could make in
its DDL, its opening, its migration, its transactions or its several handles,
and is listed in :data:`BROKEN` with the requirement ids a conformance run
must report failed for it (for the handles of capability ``multi_process``,
chapter ``ledger.md``, whose checks drive the store only through the
interface). The opening variants share :class:`OpensStepByStep`, which opens
exactly like the reference (``convledger.sqlite.opening``) but through
methods a variant can override one at a time. The transaction bugs live in
the store's transaction seam (``_transaction``, ``_gate``), which they
override or use as the reference does.

:class:`HeadCachedPerHandle` and :class:`MigrationForgetsTheLastConversation`
only the SQLite state machine catches (``tests/test_sqlite_machine.py`` runs
it too); the machine's second process imports their class from this module,
so they live at module level.

:func:`factory_of` makes a zero-argument factory for a class: each store is on
a new file in its own temporary directory, removed when the store closes;
:func:`files_of` keeps the files (a store that reopens itself).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from convledger.envelope import Envelope, EventDraft, check_identifier
from convledger.errors import ConflictError, DuplicateError, LedgerError, NotFoundError
from convledger.fast.archive import encode_stored
from convledger.kinds import KindRegistry
from convledger.runtime.rules import decide
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome, Status
from convledger.search.operations import Allowed, Hit, page_of
from convledger.sqlite import SqliteStore, baseline, opening, rows, runtime
from convledger.sqlite import companions as side
from convledger.sqlite import search as fts
from convledger.sqlite import store as store_module
from convledger.sqlite.errors import (
    Fts5PartialError,
    Fts5UnknownError,
    SchemaTooNewError,
    StoreBusyError,
    driver_boundary,
)
from convledger.sqlite.opening import Diagnosis, Opened, Settings
from convledger.sqlite.runtime_view import SqlRuntimeView
from convledger.sqlite.store import LedgerTransaction
from convledger.sqlite.transaction import append_event
from convledger.store import LedgerStore, StoreBase
from galleries import BrokenStore, broken


def _scratch(cls: type[SqliteStore]) -> Callable[[], Path]:
    """A temporary directory for ``cls``'s files, made on first use, removed at exit."""
    made: list[Path] = []

    def parent() -> Path:
        if not made:
            made.append(Path(tempfile.mkdtemp(prefix=f"convledger-broken-{cls.__name__}-")))
            atexit.register(shutil.rmtree, made[0], True)
        return made[0]

    return parent


def factory_of(cls: type[SqliteStore]) -> Callable[[], SqliteStore]:
    """A maker of ``cls`` stores on new files; closing a store removes its directory."""
    parent = _scratch(cls)
    counter = iter(range(1, 2**62))

    def make() -> SqliteStore:
        directory = parent() / f"store-{next(counter)}"
        directory.mkdir()
        return cls(
            directory / "ledger.sqlite",
            on_close=lambda: shutil.rmtree(directory, ignore_errors=True),
        )

    make.__qualname__ = f"factory_of({cls.__name__})"
    return make


def files_of(cls: type[SqliteStore]) -> Callable[[], SqliteStore]:
    """A maker of ``cls`` stores, each on a new file of one directory kept until exit."""
    parent = _scratch(cls)
    counter = iter(range(2**62))

    def make() -> SqliteStore:
        return cls(parent() / f"store-{next(counter)}.sqlite")

    make.__qualname__ = f"files_of({cls.__name__})"
    return make


# -- opening, step by step ---------------------------------------------------------------------


class OpensStepByStep(SqliteStore):
    """Opens like the reference, through :meth:`_diagnose` and :meth:`_act` (no bug here)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        on_close: Callable[[], None] | None = None,
        registry: KindRegistry | None = None,
        fault_probe: Callable[[str], None] | None = None,
        **options: Any,
    ) -> None:
        StoreBase.__init__(self, registry=registry)
        self._settings = Settings(path=os.fspath(path), **options)
        opened = self._open(self._settings)
        self._connection = opened.connection
        self.outcome = opened.outcome
        self.migration = opened.migration
        self._on_close = on_close
        self._fault_probe = fault_probe
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._closed = False

    def _open(self, settings: Settings) -> Opened:
        """``opening.open_database`` with its steps as methods of this class."""
        opening.check_settings(settings)
        existed = settings.in_memory or os.path.exists(settings.path)
        connection: sqlite3.Connection | None = None
        try:
            with driver_boundary(f"open {settings.path}"):
                connection = opening.connect(settings)
                connection.execute("BEGIN" if settings.read_only else "BEGIN IMMEDIATE")
                try:
                    diagnosis = self._diagnose(connection)
                    opened = self._act(connection, diagnosis, settings)
                    connection.execute("COMMIT")
                except BaseException:
                    opening.rollback(connection)
                    raise
                if not settings.read_only and not settings.in_memory:
                    mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    assert str(mode).lower() == "wal"
        except BaseException:
            if connection is not None:
                connection.close()
            if (
                not existed
                and os.path.exists(settings.path)
                and os.path.getsize(settings.path) == 0
            ):
                os.remove(settings.path)
            raise
        return opened

    def _diagnose(self, connection: sqlite3.Connection) -> Diagnosis:
        return opening.diagnose(connection)

    def _act(
        self, connection: sqlite3.Connection, diagnosis: Diagnosis, settings: Settings
    ) -> Opened:
        return opening._act(connection, diagnosis, settings, self.registry)


class _Tolerant(OpensStepByStep):
    """Opens although the file has a problem of the class ``tolerated`` (a base, no bug)."""

    tolerated: type[LedgerError] = LedgerError

    def _diagnose(self, connection: sqlite3.Connection) -> Diagnosis:
        found = opening.diagnose(connection)
        kept = tuple(p for p in found.problems if not isinstance(p, self.tolerated))
        return attrs.evolve(found, problems=kept)


class AcceptsPartialFts(_Tolerant):
    """SQL-018: opens a version 2 file whose FTS5 table, shadow table or trigger is missing."""

    tolerated = Fts5PartialError


class AcceptsUnknownFts(_Tolerant):
    """SQL-019: opens a version 2 file whose events_fts has another tokenizer or columns."""

    tolerated = Fts5UnknownError


class AcceptsNewerVersion(_Tolerant):
    """SQL-012: opens a file of a schema version newer than it knows, as if it were its own."""

    tolerated = SchemaTooNewError


class MigrationCommitsSchemaFirst(OpensStepByStep):
    """SQL-036: commits the version 2 objects before writing the baselines (half-migrated)."""

    def _act(
        self, connection: sqlite3.Connection, diagnosis: Diagnosis, settings: Settings
    ) -> Opened:
        if diagnosis.version == 1 and not diagnosis.problems:
            observer = settings.on_migration_step

            def step(name: str) -> None:
                if name == "create_objects":
                    connection.execute("COMMIT")
                    connection.execute("BEGIN IMMEDIATE")
                if observer is not None:
                    observer(name)

            settings = attrs.evolve(settings, on_migration_step=step)
        return super()._act(connection, diagnosis, settings)


class SecondBaseline(OpensStepByStep):
    """SQL-031: the migration appends a second baseline (seq 2) to every conversation."""

    def _act(
        self, connection: sqlite3.Connection, diagnosis: Diagnosis, settings: Settings
    ) -> Opened:
        opened = super()._act(connection, diagnosis, settings)
        if opened.outcome == "migrated" and opened.migration is not None:
            for conversation_id in opened.migration.conversations:
                first = rows.read_window(connection, conversation_id, 1, 1, 1)[0]
                again = attrs.evolve(first, seq=2, event_id=settings.new_event_id())
                rows.insert_events(connection, [again])
        return opened


class VersionInUserVersion(OpensStepByStep):
    """SQL-001: a new file records its schema version in PRAGMA user_version too."""

    def _act(
        self, connection: sqlite3.Connection, diagnosis: Diagnosis, settings: Settings
    ) -> Opened:
        opened = super()._act(connection, diagnosis, settings)
        if opened.outcome == "created":
            connection.execute("PRAGMA user_version = 2")
        return opened


class EventsUpdatable(OpensStepByStep):
    """SQL-006: a new file lacks the trigger events_are_immutable, so events can be updated."""

    def _act(
        self, connection: sqlite3.Connection, diagnosis: Diagnosis, settings: Settings
    ) -> Opened:
        opened = super()._act(connection, diagnosis, settings)
        if opened.outcome == "created":
            connection.execute("DROP TRIGGER events_are_immutable")
        return opened


# -- reads and transactions -------------------------------------------------------------------


SCANNING_WINDOW = rows.READ_WINDOW.replace(
    "WHERE conversation_id = ? AND seq >= ?", "WHERE +conversation_id = ? AND +seq >= ?"
)
"""The window read of :class:`ScanningRead`: unary ``+`` keeps SQLite off every index."""


class ScanningRead(SqliteStore):
    """SQL-007: reads a window with ``+conversation_id``, which SQLite answers by a scan."""

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        upper = rows.MAX_SEQ if to_seq is None else min(to_seq, rows.MAX_SEQ)
        if from_seq > upper:
            return []
        with self._gate("read") as connection, driver_boundary("read"):
            found = connection.execute(
                SCANNING_WINDOW, (conversation_id, from_seq, upper, limit)
            ).fetchall()
        return [rows.envelope_of(row) for row in found]


class RawBusyError(SqliteStore):
    """SQL-041: a database still busy after the timeout surfaces as sqlite3's own error."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        try:
            return super()._append(conversation_id, drafts, expected_head)
        except StoreBusyError as error:
            raise sqlite3.OperationalError("database is locked") from error


class DeferredWrites(SqliteStore):
    """SQL-040: writes begin deferred, so the head is read before the write lock is taken."""

    @contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        with self._gate(operation) as connection, driver_boundary(operation):
            connection.execute("BEGIN")
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                opening.rollback(connection)
                raise


class _Deferred(LedgerTransaction):
    """Keeps companion statements for later instead of running them (a base, no bug)."""

    def __init__(self, inner: LedgerTransaction, pending: list[tuple[str, tuple[object, ...]]]):
        self._inner = inner
        self._pending = pending

    def head(self, conversation_id: str) -> int:
        return self._inner.head(conversation_id)

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        return self._inner.append(conversation_id, drafts, expected_head=expected_head)

    def execute(self, sql: str, parameters: Sequence[object] = ()) -> list[tuple[object, ...]]:
        self._pending.append((sql, tuple(parameters)))
        return []


class _HeadOfAnyId(LedgerTransaction):
    """The reference's transaction handle, its ``head`` reading any text as a conversation."""

    def head(self, conversation_id: str) -> int:
        return rows.head_of(self._live(), conversation_id)


class TransactionHeadUnchecked(SqliteStore):
    """SQL-043: the write transaction's ``head("")`` answers 0, not ``invalid_input`` (ENV-005).

    Found by mutation testing (issue 37, ``sqlite/transaction.py``: the handle's
    ``check_identifier`` deleted): the store checks its own ``head`` argument, the handle
    of its write transaction did not, and no check asked it.
    """

    @contextmanager
    def write_transaction(self) -> Iterator[LedgerTransaction]:
        with self._transaction("write transaction", write=True) as connection:
            handle = _HeadOfAnyId(connection, self.registry)
            try:
                yield handle
            finally:
                handle._active = False


class CompanionsAfterCommit(SqliteStore):
    """SQL-043: writes companion rows in a transaction of their own, after the events' one."""

    @contextmanager
    def write_transaction(self) -> Iterator[LedgerTransaction]:
        pending: list[tuple[str, tuple[object, ...]]] = []
        try:
            with super().write_transaction() as tx:
                yield _Deferred(tx, pending)
        finally:
            if pending:
                with self._transaction("companions", write=True) as connection:
                    for sql, parameters in pending:
                        connection.execute(sql, parameters)


# -- several handles (capability multi_process) ------------------------------------------------


class CachedReads(SqliteStore):
    """LED-019: each handle caches heads and read windows, dropped only on its own writes."""

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        super().__init__(path, **options)
        self._heads: dict[str, int] = {}
        self._windows: dict[tuple[str, int, int | None, int], Sequence[Envelope]] = {}

    def _head(self, conversation_id: str) -> int:
        if conversation_id not in self._heads:
            self._heads[conversation_id] = super()._head(conversation_id)
        return self._heads[conversation_id]

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        key = (conversation_id, from_seq, to_seq, limit)
        if key not in self._windows:
            self._windows[key] = super()._read(conversation_id, from_seq, to_seq, limit)
        return self._windows[key]

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        placed = super()._append(conversation_id, drafts, expected_head)
        self._heads.pop(conversation_id, None)
        self._windows = {k: v for k, v in self._windows.items() if k[0] != conversation_id}
        return placed


class SeqsOutsideTheLock(SqliteStore):
    """LED-017: an append reads the head in one transaction and inserts at head+1.. in another."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._transaction("append: head", write=False) as connection:
            runtime.refuse_purged(connection, conversation_id)
            head = rows.head_of(connection, conversation_id)
        if expected_head is not None and expected_head != head:
            raise ConflictError(f"expected head {expected_head}, the ledger is at {head}",
                                requirement="LED-005", actual=head)
        placed = tuple(Envelope.from_draft(draft, conversation_id, head + offset)
                       for offset, draft in enumerate(drafts, start=1))
        with self._transaction("append", write=True) as connection:
            runtime.refuse_purged(connection, conversation_id)
            stored = rows.first_stored_event_id(connection, (d.event_id for d in drafts))
            if stored is not None:
                raise DuplicateError(f"eventId {stored!r} already exists",
                                     requirement="LED-003", identity=stored)
            side.refuse_live_spill_events(connection, conversation_id, drafts)
            return rows.insert_placed(connection, placed)


class ExportOutsideATransaction(SqliteStore):
    """SQL-045: an export reads its events and its companions as separate autocommit reads."""

    def export_conversation(self, conversation_id: str) -> bytes:
        check_identifier(conversation_id, "conversationId", "ENV-005")
        with self._gate("export") as connection, driver_boundary("export"):
            stored = rows.export_rows(connection, conversation_id)
            companions = store_module._companions(connection, conversation_id)
        if not stored:
            raise NotFoundError(f"conversation {conversation_id!r} has no events to export",
                                requirement="ARC-005")
        return encode_stored(conversation_id, stored, companions)


# -- only the SQLite state machine catches these ------------------------------------------------


class HeadCachedPerHandle(SqliteStore):
    """SQL-047: keeps each conversation's head in the handle, blind to other processes."""

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        super().__init__(path, **options)
        self._heads: dict[str, int] = {}

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._transaction("append", write=True) as connection:
            head = self._heads.get(conversation_id)
            if head is None:
                head = rows.head_of(connection, conversation_id)
            if expected_head is not None and expected_head != head:
                raise ConflictError("stale head", requirement="LED-005", actual=head)
            stored = rows.first_stored_event_id(connection, (d.event_id for d in drafts))
            if stored is not None:
                raise DuplicateError("stored", requirement="LED-003", identity=stored)
            placed = tuple(
                Envelope.from_draft(d, conversation_id, head + n)
                for n, d in enumerate(drafts, start=1)
            )
            rows.insert_events(connection, placed)
            self._heads[conversation_id] = head + len(placed)
        return tuple(rows.envelope_of(rows.event_row(e)) for e in placed)

    def reopen(self) -> LedgerStore:
        """Reopen as this class (SqliteStore.reopen would return the correct class)."""
        self.close()
        return type(self)(self.path)


class MigrationForgetsTheLastConversation(SqliteStore):
    """SQL-031: an off-by-one migration writes no baseline for the last conversation."""

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        opened: list[sqlite3.Connection] = []

        def forget(step: str) -> None:
            if step == "write_baselines":
                opened[0].execute("DELETE FROM events WHERE conversation_id ="
                                  " (SELECT max(conversation_id) FROM heads)")

        options.setdefault("connection_hook", opened.append)
        options.setdefault("on_migration_step", forget)
        super().__init__(path, **options)


_AS_OF_LOCK = threading.Lock()
_OFFSET = re.compile(r"([+-]\d{2}):\d{2}$")


@contextmanager
def _offset_minutes_ignored() -> Iterator[None]:
    """``baseline.as_of`` reading an offset's hours only, while the block runs."""
    kept = baseline.as_of

    def as_of(conversation: baseline.V1Conversation) -> str | None:
        times = [item.at for item in conversation.messages + conversation.runs]
        if not times:
            return None
        return max(times, key=lambda text: (baseline.instant(_OFFSET.sub(r"\1:00", text)), text))

    baseline.as_of = as_of
    try:
        yield
    finally:
        baseline.as_of = kept


class AsOfIgnoresOffsetMinutes(SqliteStore):
    """SQL-034: the migration's ``asOf`` reads an offset's hours only (+05:30 as +05:00).

    Found by mutation testing (issue 37, ``sqlite/baseline.py``: ``int(match[10]) * 60`` ->
    ``// 60``): the sample's offsets are whole hours. The migration computes ``asOf``
    through ``baseline.as_of``; this store opens with it replaced (one lock, so two opens
    at once cannot undo each other's replacement).
    """

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        with _AS_OF_LOCK, _offset_minutes_ignored():
            super().__init__(path, **options)


MACHINE = "sqlite_ledger_state_machine"
"""The check that catches the last two stores."""


# -- version 4: the events waiting for their index row (SQL-073 .. SQL-075) -----------------


class _AppendsThenTouchesPending(SqliteStore):
    """Appends as the reference between :meth:`_before` and :meth:`_after`, in the same
    transaction (a base, no bug)."""

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        with self._transaction("append", write=True) as connection:
            before = _index_rowids(connection)
            placed = store_module.append_checked(connection, conversation_id, drafts,
                                                 expected_head)
            self._after(connection, before, _index_rowids(connection) - before)
            return placed

    def _after(self, connection: sqlite3.Connection, before: set[int], added: set[int]) -> None:
        """``before``: the rowids of ``events_fts`` before the append; ``added``: its new ones."""
        raise NotImplementedError


def _index_rowids(connection: sqlite3.Connection) -> set[int]:
    return {int(row[0]) for row in connection.execute("SELECT rowid FROM events_fts")}


def _event_of(connection: sqlite3.Connection, rowid: int) -> tuple[str, int]:
    found = connection.execute(
        "SELECT conversation_id, seq FROM events WHERE search_rowid = ?", (rowid,)).fetchone()
    return str(found[0]), int(found[1])


class NeverIndexesPending(_AppendsThenTouchesPending):
    """SQL-074: the write that fills ``search_pending`` empties it, but indexes only its own
    events: those that were pending are left with neither row."""

    def _after(self, connection: sqlite3.Connection, before: set[int], added: set[int]) -> None:
        newest = max(added, default=0)
        mine = {rowid for rowid in added if rowid > newest - 1}
        connection.executemany("DELETE FROM events_fts WHERE rowid = ?",
                               [(rowid,) for rowid in sorted(added - mine)])


class PendingKeptAfterIndexing(_AppendsThenTouchesPending):
    """SQL-073: the write that indexes the pending events keeps their pending rows, so those
    events have both rows."""

    def _after(self, connection: sqlite3.Connection, before: set[int], added: set[int]) -> None:
        connection.executemany(rows.INSERT_PENDING, [
            (rowid, *_event_of(connection, rowid)) for rowid in sorted(added)
        ])


class PendingGrowsPastTheLimit(_AppendsThenTouchesPending):
    """SQL-074: the write that would fill ``search_pending`` keeps every event pending, so the
    table grows past 32 rows (searches still find every event)."""

    def _after(self, connection: sqlite3.Connection, before: set[int], added: set[int]) -> None:
        for rowid in sorted(added):
            connection.execute("DELETE FROM events_fts WHERE rowid = ?", (rowid,))
            connection.execute(rows.INSERT_PENDING, (rowid, *_event_of(connection, rowid)))


class SearchIgnoresPending(SqliteStore):
    """SQL-075: a search reads ``events_fts`` only, so an event is found only once the index
    caught up with it (SRC-004 too)."""

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        with self._transaction("search", write=False) as connection:
            candidates = iter(scope) if scope is not None else iter(sorted(
                {str(row[0]) for row in connection.execute(
                    "SELECT DISTINCT conversation_id FROM events")}, key=lambda c: c.encode()))
            return page_of(lambda cid, n: fts.hits_of(connection, cid, words, n),
                           requester, candidates, limit, allowed)


class SearchIndexesPending(SqliteStore):
    """SRC-024: a search first indexes the pending events in a write transaction of its own,
    so a search changes the file (its answers stay right)."""

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        if not self._settings.read_only:
            with self._transaction("index", write=True) as connection:
                rows.index_pending(connection)
        return super()._search(requester, words, scope, limit, allowed)


class TailMatchedByLowercase(SqliteStore):
    """SQL-075: the pending events are matched by Python's lower-cased words instead of the
    index's tokenizer, so a diacritic or a ligature matches otherwise while an event waits."""

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        original = fts.tail_of

        def lowered(
            connection: sqlite3.Connection, cid: str, query: tuple[str, ...], n: int
        ) -> list[Hit]:
            wanted = {word.lower() for word in query}
            found = [
                Hit(cid, int(seq), str(at), rows.stored_text(payload))
                for _, owner, seq, at, payload in connection.execute(rows.PENDING_EVENTS)
                if owner == cid and wanted <= set(rows.stored_text(payload).lower().split())
            ]
            return found[::-1][:n]

        fts.tail_of = lowered
        try:
            return super()._search(requester, words, scope, limit, allowed)
        finally:
            fts.tail_of = original


class _MessagesOnlyView(SqlRuntimeView):
    def message_in_use(self, message_id: str) -> bool:
        return self.message(message_id) is not None


class MessageInUseReadsOnlyMessages(SqliteStore):
    """TRN-022: the one lookup of a message id reads ``messages`` alone, so the input of an
    admission not yet placed, or the answer id of a queued run, is admitted again."""

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        with self._transaction("transition", write=True) as connection:
            view = _MessagesOnlyView.opened(connection, conversation_id)
            decision = decide(view, conversation_id, transition, draft.occurred_at)
            if decision.status is not Status.APPLIED:
                return Outcome.of(decision)
            assert decision.head_write is not None
            runtime.swap_head(connection, decision.head_write, draft.occurred_at,
                              read=view.head_read)
            for record in decision.writes:
                runtime.write_record(connection, record)
            placed = append_event(connection, conversation_id, (draft,))
            return Outcome.of(decision, placed[0])


BROKEN: tuple[BrokenStore, ...] = (
    *(
        broken("sqlite", cls, *catches, factory=factory_of(cls))
        for cls, catches in (
            (AcceptsPartialFts, ("SQL-018",)),
            (AcceptsUnknownFts, ("SQL-019",)),
            (AcceptsNewerVersion, ("SQL-012",)),
            (MigrationCommitsSchemaFirst, ("SQL-036",)),
            (SecondBaseline, ("SQL-031",)),
            (VersionInUserVersion, ("SQL-001",)),
            (EventsUpdatable, ("SQL-006",)),
            (DeferredWrites, ("SQL-040",)),
            (RawBusyError, ("SQL-041",)),
            (CompanionsAfterCommit, ("SQL-043",)),
            (ScanningRead, ("SQL-007",)),
            (CachedReads, ("LED-019",)),
            (SeqsOutsideTheLock, ("LED-017",)),
            (ExportOutsideATransaction, ("SQL-045",)),
            (NeverIndexesPending, ("SQL-074",)),
            (PendingKeptAfterIndexing, ("SQL-073",)),
            (PendingGrowsPastTheLimit, ("SQL-074",)),
            (SearchIgnoresPending, ("SQL-075",)),
            (TailMatchedByLowercase, ("SQL-075",)),
            (SearchIndexesPending, ("SRC-024",)),
            (MessageInUseReadsOnlyMessages, ("TRN-022",)),
            (AsOfIgnoresOffsetMinutes, ("SQL-034",)),
            (TransactionHeadUnchecked, ("SQL-043",)),
        )
    ),
    broken("sqlite", HeadCachedPerHandle, "SQL-047", factory=files_of(HeadCachedPerHandle),
           checks=(MACHINE,)),
    broken("sqlite", MigrationForgetsTheLastConversation, "SQL-031",
           factory=files_of(MigrationForgetsTheLastConversation), checks=(MACHINE,)),
)
"""Every broken SQLite store, with the ids that must be among the failed ones (the last two
only the SQLite state machine catches)."""
