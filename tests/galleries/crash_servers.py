"""Broken wire servers for ``convledger-conformance crash`` (chapter DUR, issue 36), ONE bug each.

Each class is the reference's wire SQLite store (``serve-wire --store sqlite``)
with one bug, and its ``at`` opens it on a crash run's location:
``python -m convledger serve-wire --opener galleries.crash_servers:NAME.at``
(``tests`` on ``PYTHONPATH``). They are the cases the crash command missed
or mis-reported before issue 36; :data:`CONTROLS` says which requirement the
command must report failed for each (``tests/test_crash_controls.py``).

- :class:`RefusesWritesAfterRestart`: once its location was opened before,
  every write is refused ``unavailable`` (DUR-008, DUR-015).
- :class:`JournalInMemory`: ``journal_mode=MEMORY`` and a cache of 10 pages,
  so a large write spills pages into the file before its COMMIT and a kill
  in the write phase leaves a half-written file (chapter DUR, often DUR-005).
- :class:`HeadInSecondTransaction`: the head is kept in a second file, written
  in a transaction after the events' one commits (DUR-014).
- :class:`InternalOnLargeImport`: an import of more than 500 events fails with
  an exception, answered ``internal`` (DUR-005, DUR-015: the timed import).
- :class:`LeasesConversations`: a conversation's first writer process leases
  it, and an append of any other process is refused ``unavailable``
  (DUR-012: the hand-off of concurrent writers).
- :class:`PurgeDeletesAtClose`: a purge writes its tombstone and deletes the
  events only when the store closes, which a kill prevents (DUR-007).
- :class:`LedgerOnly`: not broken; it declares only ``ledger`` and
  ``persistence``, so DUR-004, DUR-006 and DUR-007 are ``not_applicable``
  (DUR-016), never passed.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from convledger.archive import Archive
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft
from convledger.errors import UnavailableError
from convledger.sqlite import SqliteStore
from convledger.sqlite.runtime import PURGE_TABLES
from convledger.sqlite.runtime_view import PURGED
from convledger.wire.server import CARRIED


class _WireSqlite(SqliteStore):
    """The reference wire SQLite store: what the protocol carries (WIR-021), ``ledger.sqlite``."""

    declared = SqliteStore.declared & CARRIED

    @property
    def capabilities(self) -> frozenset[Capability]:
        return super().capabilities & self.declared

    @classmethod
    def at(cls, location: str) -> SqliteStore:
        """WIR-040: the store of ``location/ledger.sqlite`` (created empty when absent)."""
        directory = Path(location)
        directory.mkdir(parents=True, exist_ok=True)
        return cls(directory / "ledger.sqlite")


class RefusesWritesAfterRestart(_WireSqlite):
    """The bug: a store opened on a location opened before refuses every write."""

    def __init__(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        marker = Path(path).with_name("opened-before")
        self._refusing = marker.exists()
        marker.touch()

    @contextlib.contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        if write and self._refusing:
            raise UnavailableError(f"{operation}: the store is read-only since its restart",
                                   requirement="DUR-008")
        with super()._transaction(operation, write=write) as connection:
            yield connection


class JournalInMemory(_WireSqlite):
    """The bug: the rollback journal lives in memory and the page cache is tiny, so pages of
    an uncommitted write reach the file and a kill leaves nothing to roll them back."""

    def __init__(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self._connection.execute("PRAGMA journal_mode = MEMORY")
        self._connection.execute("PRAGMA cache_size = 10")


class HeadInSecondTransaction(_WireSqlite):
    """The bug: every conversation's head lives in ``heads.sqlite``, rewritten in its own
    transaction after the write's transaction committed (a slow disk between the two)."""

    def __init__(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self._heads = sqlite3.connect(Path(path).with_name("heads.sqlite"), isolation_level=None,
                                      check_same_thread=False)
        self._heads.execute("CREATE TABLE IF NOT EXISTS heads (conversation_id TEXT PRIMARY KEY,"
                            " head INTEGER NOT NULL)")
        if self._heads.execute("SELECT count(*) FROM heads").fetchone()[0] == 0:
            self._store_heads(self._connection)

    @contextlib.contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        with super()._transaction(operation, write=write) as connection:
            yield connection
        if write:
            time.sleep(0.005)
            self._store_heads(connection)

    def _store_heads(self, connection: sqlite3.Connection) -> None:
        heads = connection.execute(
            "SELECT conversation_id, max(seq) FROM events GROUP BY conversation_id").fetchall()
        self._heads.execute("BEGIN IMMEDIATE")
        self._heads.execute("DELETE FROM heads")
        self._heads.executemany("INSERT INTO heads VALUES (?, ?)", heads)
        self._heads.execute("COMMIT")

    def _head(self, conversation_id: str) -> int:
        found = self._heads.execute("SELECT head FROM heads WHERE conversation_id = ?",
                                    (conversation_id,)).fetchone()
        return 0 if found is None else int(found[0])


class InternalOnLargeImport(_WireSqlite):
    """The bug: an import of more than 500 events fails (a statement too large for a buffer),
    and the server answers ``internal``."""

    def _import(self, archive: Archive) -> None:
        if len(archive.events) > 500:
            raise RuntimeError(f"import buffer overflow at {len(archive.events)} events")
        super()._import(archive)


class LeasesConversations(_WireSqlite):
    """The bug: the first process that appends to a conversation leases it (a file beside the
    database), and appends of every other process are refused ``unavailable``."""

    def _append(self, conversation_id: str, drafts: tuple[EventDraft, ...],
                expected_head: int | None) -> tuple[Envelope, ...]:
        lease = Path(self.path).with_name(f"lease-{conversation_id}")
        if not lease.exists():
            lease.write_text(str(os.getpid()), "utf-8")
        elif lease.read_text("utf-8") != str(os.getpid()):
            raise UnavailableError(f"{conversation_id!r} is leased by another process",
                                   requirement="DUR-012")
        return super()._append(conversation_id, drafts, expected_head)


class PurgeDeletesAtClose(_WireSqlite):
    """The bug: a purge commits its tombstone at once and deletes the conversation's rows when
    the store closes (a write-behind queue), so after a kill the events are back."""

    _queued: ClassVar[list[str]] = []

    def _purge(self, conversation_id: str) -> bool:
        with self._transaction("purge", write=True) as connection:
            if connection.execute(PURGED, (conversation_id,)).fetchone() is not None:
                return False
            connection.execute("INSERT INTO purged (conversation_id, purged_at) VALUES (?, ?)",
                               (conversation_id, self._settings.clock()))
        self._queued.append(conversation_id)
        return True

    def close(self) -> None:
        queued, self._queued[:] = list(self._queued), []
        if queued and not self._closed:
            with self._transaction("purge", write=True) as connection:
                for conversation_id in queued:
                    for table, column in PURGE_TABLES:
                        connection.execute(f"DELETE FROM {table} WHERE {column} = ?",
                                           (conversation_id,))
        super().close()


class LedgerOnly(_WireSqlite):
    """Not broken: it declares only ``ledger`` and ``persistence`` (DUR-016)."""

    declared = frozenset({Capability.LEDGER, Capability.PERSISTENCE})


CONTROLS: dict[str, tuple[str, ...]] = {
    "RefusesWritesAfterRestart": ("DUR-008", "DUR-015"),
    "JournalInMemory": ("DUR-001", "DUR-002", "DUR-003", "DUR-005", "DUR-008", "DUR-014"),
    "HeadInSecondTransaction": ("DUR-014",),
    "InternalOnLargeImport": ("DUR-005", "DUR-015"),
    "LeasesConversations": ("DUR-012",),
    "PurgeDeletesAtClose": ("DUR-007",),
}
"""For each broken server, the requirements the crash command must report failed (all of them;
for :class:`JournalInMemory`, whose half-written file shows as any of these, at least one)."""
