"""Crash-broken and race-broken stores (chapter DUR), each with ONE bug, on the SQLite store.

Each subclasses :class:`~convledger.sqlite.SqliteStore`, so its locator opens
it as itself in the server processes the checks of
:mod:`convledger_conformance.durability.checks` start, kill and race
(``convledger serve-wire --opener``; this module is importable there through
``PYTHONPATH``). A crash-broken store passes every check of a single process
that is never killed; a race-broken store passes every check of one writer.

- :class:`AcknowledgesBeforeCommit`: an append answers with its envelopes and
  commits them 50 ms later, in a thread (DUR-001).
- :class:`KeepsWritesInMemory`: appends wait in process memory until a timer
  flushes them every second (no write reaches the file in time; DUR-001).
- :class:`BatchInSeveralTransactions`: a batch's events are committed one
  transaction each, so a kill can leave part of it (DUR-002).
- :class:`ImportsInSeveralTransactions`: an import commits its events 100 at a
  time (DUR-005).
- :class:`CachesHeadPerProcess`: ``head`` answers from a cache of this process,
  updated only by its own appends (DUR-010).
- :class:`ChecksExpectedHeadOutsideLock`: ``expectedHead`` is compared in one
  transaction and the events appended in the next (DUR-010).
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from convledger.archive import Archive
from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError
from convledger.sqlite import SqliteStore
from galleries import broken
from galleries.sqlite import factory_of


class _CommitsLater(SqliteStore):
    """Answers an append with the envelopes it will have and commits it ``DELAY`` later.

    ``close`` first waits for the commits still pending (a store closed in order
    keeps what it acknowledged; only a kill loses it, which is the bug the crash
    check proves). Without that, an append just before ``close`` (the CAP-005
    fresh-store check makes one) committed on a closed store in a thread that
    outlived it, and pytest reported the thread's ``StoreClosedError``.
    """

    DELAY: ClassVar[float] = 0.05

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, int] = {}
        self._pending_lock = threading.Lock()
        self._commits: list[threading.Thread] = []

    def close(self) -> None:
        self._drain()
        super().close()

    def _drain(self) -> None:
        """Wait until every acknowledged append is committed."""
        with self._pending_lock:
            threads = list(self._commits)
        for thread in threads:
            thread.join()

    def _append(self, conversation_id: str, drafts: tuple[EventDraft, ...],
                expected_head: int | None) -> tuple[Envelope, ...]:
        with self._pending_lock:
            head = super()._head(conversation_id) + self._pending.get(conversation_id, 0)
            if expected_head is not None and expected_head != head:
                raise ConflictError("the head moved", requirement="LED-005", actual=head)
            self._pending[conversation_id] = self._pending.get(conversation_id, 0) + len(drafts)
        placed = tuple(Envelope.from_draft(draft, conversation_id, head + n)
                       for n, draft in enumerate(drafts, start=1))
        self._later(conversation_id, drafts)
        return placed

    def _later(self, conversation_id: str, drafts: tuple[EventDraft, ...]) -> None:
        def commit() -> None:
            time.sleep(self.DELAY)
            self._commit(conversation_id, drafts)

        thread = threading.Thread(target=commit, daemon=True)
        self._track(thread)
        thread.start()

    def _track(self, thread: threading.Thread) -> None:
        """Keep ``thread`` for ``close`` to wait on (and forget those already done)."""
        with self._pending_lock:
            self._commits = [*(t for t in self._commits if t.is_alive()), thread]

    def _commit(self, conversation_id: str, drafts: tuple[EventDraft, ...]) -> None:
        with self._pending_lock:
            try:
                super()._append(conversation_id, drafts, None)
            finally:
                self._pending[conversation_id] -= len(drafts)

    def _head(self, conversation_id: str) -> int:
        with self._pending_lock:
            return super()._head(conversation_id) + self._pending.get(conversation_id, 0)


class AcknowledgesBeforeCommit(_CommitsLater):
    """The bug: the append's reply is sent before its transaction commits (50 ms later)."""


class KeepsWritesInMemory(_CommitsLater):
    """The bug: appends live in process memory until a timer flushes them, once a second."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._buffer: list[tuple[str, tuple[EventDraft, ...]]] = []
        self._timer: threading.Timer | None = None

    def _later(self, conversation_id: str, drafts: tuple[EventDraft, ...]) -> None:
        with self._pending_lock:
            self._buffer.append((conversation_id, drafts))
            if self._timer is None:
                self._timer = threading.Timer(1.0, self._flush)
                self._timer.daemon = True
                self._commits = [*(t for t in self._commits if t.is_alive()), self._timer]
                self._timer.start()

    def _drain(self) -> None:
        """Stop the timers (or wait for a flush one began), then flush what is left."""
        with self._pending_lock:
            timers = [t for t in self._commits if isinstance(t, threading.Timer)]
        for timer in timers:
            timer.cancel()
        super()._drain()
        self._flush()

    def _flush(self) -> None:
        with self._pending_lock:
            buffered, self._buffer, self._timer = self._buffer, [], None
        for conversation_id, drafts in buffered:
            self._commit(conversation_id, drafts)


class BatchInSeveralTransactions(SqliteStore):
    """The bug: each event of a batch is committed in its own transaction."""

    def _append(self, conversation_id: str, drafts: tuple[EventDraft, ...],
                expected_head: int | None) -> tuple[Envelope, ...]:
        placed: list[Envelope] = []
        for n, draft in enumerate(drafts):
            placed.extend(super()._append(conversation_id, (draft,),
                                          expected_head if n == 0 else None))
            time.sleep(0.005)  # a slow disk: the window between two commits is wide
        return tuple(placed)


class ImportsInSeveralTransactions(SqliteStore):
    """The bug: an import (of a ledger without companions) commits 100 events at a time."""

    def _import(self, archive: Archive) -> None:
        if archive.companions:
            super()._import(archive)
            return
        events = list(archive.events)
        for start in range(0, len(events), 100):
            drafts = tuple(
                EventDraft(event_id=e.event_id, kind=e.kind, occurred_at=e.occurred_at,
                           payload=e.payload, schema_version=e.schema_version,
                           ignorable=e.ignorable)
                for e in events[start:start + 100]
            )
            super()._append(archive.conversation_id, drafts, start if start else 0)
            time.sleep(0.1)  # a slow disk: the window between two commits is wide


class CachesHeadPerProcess(SqliteStore):
    """The bug: ``head`` answers from this process's cache, which only its own appends move."""

    _cache: ClassVar[dict[tuple[str, str], int]] = {}

    def _head(self, conversation_id: str) -> int:
        key = (str(self._settings.path), conversation_id)
        if key not in self._cache:
            self._cache[key] = super()._head(conversation_id)
        return self._cache[key]

    def _append(self, conversation_id: str, drafts: tuple[EventDraft, ...],
                expected_head: int | None) -> tuple[Envelope, ...]:
        placed = super()._append(conversation_id, drafts, expected_head)
        self._cache[(str(self._settings.path), conversation_id)] = placed[-1].seq
        return placed


class ChecksExpectedHeadOutsideLock(SqliteStore):
    """The bug: ``expectedHead`` is checked in one transaction, the events written in the next."""

    def _append(self, conversation_id: str, drafts: tuple[EventDraft, ...],
                expected_head: int | None) -> tuple[Envelope, ...]:
        if expected_head is not None:
            actual = super()._head(conversation_id)
            if actual != expected_head:
                raise ConflictError("the head moved", requirement="LED-005", actual=actual)
            time.sleep(0.005)
        return super()._append(conversation_id, drafts, None)


CRASH_CHECK = ("killed_store_keeps_what_it_acknowledged",)
RACE_CHECK = ("concurrent_histories_are_linearizable",)

BROKEN = (
    broken("durability", AcknowledgesBeforeCommit, "DUR-001",
           factory=factory_of(AcknowledgesBeforeCommit), checks=CRASH_CHECK),
    broken("durability", KeepsWritesInMemory, "DUR-001",
           factory=factory_of(KeepsWritesInMemory), checks=CRASH_CHECK),
    broken("durability", BatchInSeveralTransactions, "DUR-002",
           factory=factory_of(BatchInSeveralTransactions), checks=CRASH_CHECK),
    broken("durability", ImportsInSeveralTransactions, "DUR-005",
           factory=factory_of(ImportsInSeveralTransactions), checks=CRASH_CHECK),
    broken("durability", CachesHeadPerProcess, "DUR-010",
           factory=factory_of(CachesHeadPerProcess), checks=RACE_CHECK),
    broken("durability", ChecksExpectedHeadOutsideLock, "DUR-010",
           factory=factory_of(ChecksExpectedHeadOutsideLock), checks=RACE_CHECK),
)
