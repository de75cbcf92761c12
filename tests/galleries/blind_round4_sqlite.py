"""Blind round 4 (issue 37), the stores built on the SQLite reference store.

Written blind, as :mod:`tests.galleries.blind_round4` says. Most of them are
handles that keep a cache and serve a read from it after another handle (or
another process) wrote: each cache is of a kind a real implementer adds for
speed, invalidated in a way that looks right on one handle. Every store is
on its own temporary file, so it declares ``multi_process`` and
``persistence``; :meth:`SqliteStore.open_handle`, ``reopen`` and the
locator open the same class, so every handle has the bug.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from convledger.archive import Archive
from convledger.envelope import Envelope, EventDraft
from convledger.errors import InvalidInputError
from convledger.host.rows import FactRow
from convledger.projections.definition import Checkpoint, ProjectionDefinition, ProjectionStatus
from convledger.runtime.operations import RecoveryCursor
from convledger.runtime.records import Run
from convledger.runtime.state import Snapshot
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome
from convledger.search.operations import Hit
from convledger.spills.objects import SpillMetadata
from convledger.sqlite import rows
from convledger.sqlite.errors import driver_boundary
from convledger.sqlite.store import SqliteStore


def _file_factory(cls: type[SqliteStore]) -> Callable[[], SqliteStore]:
    """A maker of ``cls`` stores, each on a new file in its own temporary directory."""
    parent: list[Path] = []
    counter = itertools.count(1)

    def make() -> SqliteStore:
        if not parent:
            parent.append(Path(tempfile.mkdtemp(prefix="convledger-blind4-")))
            atexit.register(shutil.rmtree, parent[0], True)
        directory = parent[0] / f"store-{next(counter)}"
        directory.mkdir()
        return cls(
            directory / "ledger.sqlite",
            on_close=lambda: shutil.rmtree(directory, ignore_errors=True),
        )

    return make


class _ForgetsOnOwnWrites(SqliteStore):
    """A handle with a cache that each write through this handle empties."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cache: dict[object, object] = {}
        self._cache_lock = threading.Lock()

    def _forget(self) -> None:
        with self._cache_lock:
            self._cache.clear()

    def _cached(self, key: object, compute: Callable[[], object]) -> Any:
        with self._cache_lock:
            if key in self._cache:
                return self._cache[key]
        value = compute()
        with self._cache_lock:
            self._cache[key] = value
        return value

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        try:
            return super()._append(conversation_id, drafts, expected_head)
        finally:
            self._forget()

    def _import(self, archive: Archive) -> None:
        try:
            super()._import(archive)
        finally:
            self._forget()

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        try:
            return super()._transit(conversation_id, transition, draft)
        finally:
            self._forget()

    def _purge(self, conversation_id: str) -> bool:
        try:
            return super()._purge(conversation_id)
        finally:
            self._forget()

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        try:
            return super()._catch_up(conversation_id, definition, max_events)
        finally:
            self._forget()

    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata:
        try:
            return super()._put_spill(conversation_id, metadata, data, draft)
        finally:
            self._forget()

    def _delete_spill(
        self, conversation_id: str, reference: str, draft_for: Callable[[int], EventDraft]
    ) -> Envelope:
        try:
            return super()._delete_spill(conversation_id, reference, draft_for)
        finally:
            self._forget()

    def _write_fact_rows(
        self,
        row: FactRow,
        appends: tuple[tuple[str, tuple[EventDraft, ...]], ...],
        skip_purged: bool,
    ) -> tuple[str, ...]:
        try:
            return super()._write_fact_rows(row, appends, skip_purged)
        finally:
            self._forget()


class LoadRunCache(_ForgetsOnOwnWrites):
    """``load_run`` answers from a per-handle cache that only this handle's writes empty.

    Bug: runs are read many times a second by a worker, so each handle keeps
    the runs it loaded; a transition through another handle (another worker's
    acquire, a recover by the sweeper) leaves the cached run stale.
    Breaks: LED-021 (``loadRun`` reflects another handle's transition), LED-019.
    Realistic: a per-connection cache is correct in a single-process test.
    """

    def _load_run(self, conversation_id: str, run_id: str) -> Run | None:
        return self._cached(
            ("run", conversation_id, run_id),
            lambda: super(LoadRunCache, self)._load_run(conversation_id, run_id),
        )


class CheckpointCacheKeyedByHead(_ForgetsOnOwnWrites):
    """``load_checkpoint`` is cached and revalidated by the conversation's head.

    Bug: the cache entry is reused while the head is unchanged ("a checkpoint
    only changes when the ledger grows"). A catch-up through another handle
    changes the checkpoint without changing the head, so this handle keeps
    answering the older checkpoint (or none).
    Breaks: LED-021 (``loadCheckpoint`` after another handle's catch-up).
    Realistic: the head is the obvious version stamp of a conversation.
    """

    def _load_checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None:
        head = self._head(conversation_id)
        return self._cached(
            ("checkpoint", conversation_id, name, head),
            lambda: super(CheckpointCacheKeyedByHead, self)._load_checkpoint(conversation_id, name),
        )


class ExportCacheKeyedByHead(_ForgetsOnOwnWrites):
    """``export_conversation`` is cached and revalidated by the head.

    Bug: exports are large and "a conversation's archive changes only when
    events are added", so the bytes are reused while the head is unchanged.
    The archive's ``projections`` companion changes with a catch-up, which
    adds no event: after another handle's catch-up this handle exports the
    archive without (or with the older) checkpoint.
    Breaks: LED-019 and LED-021 (an export reflects another handle's write),
    PRJ-040.
    Realistic: the head is the natural ETag of a conversation.
    """

    def export_conversation(self, conversation_id: str) -> bytes:
        if not isinstance(conversation_id, str):
            return super().export_conversation(conversation_id)
        try:
            head = self.head(conversation_id)
        except InvalidInputError:
            return super().export_conversation(conversation_id)
        if head == 0:
            return super().export_conversation(conversation_id)
        return self._cached(  # type: ignore[no-any-return]
            ("export", conversation_id, head),
            lambda: super(ExportCacheKeyedByHead, self).export_conversation(conversation_id),
        )


class NegativeRuntimeCache(_ForgetsOnOwnWrites):
    """"No runtime state yet" is cached per handle.

    Bug: a conversation without a head is asked about often (every poll of an
    idle conversation), so a handle remembers that ``load_snapshot`` found
    nothing and that ``load_run`` found no run. A first accept, or an import
    of an archive with a runtime companion, through another handle leaves
    this handle answering ``not_found`` / none.
    Breaks: LED-021 (``loadSnapshot``, ``loadRun`` after another handle's
    transition or import).
    Realistic: negative caching is the cache people forget to invalidate.
    """

    def _snapshot(self, conversation_id: str) -> Snapshot | None:
        with self._cache_lock:
            if ("no-runtime", conversation_id) in self._cache:
                return None
        found = super()._snapshot(conversation_id)
        if found is None:
            with self._cache_lock:
                self._cache[("no-runtime", conversation_id)] = True
        return found

    def _load_run(self, conversation_id: str, run_id: str) -> Run | None:
        with self._cache_lock:
            if ("no-run", conversation_id, run_id) in self._cache:
                return None
        found = super()._load_run(conversation_id, run_id)
        if found is None:
            with self._cache_lock:
                self._cache[("no-run", conversation_id, run_id)] = True
        return found


class SpillNegativeCache(_ForgetsOnOwnWrites):
    """A spill reference that was not found is remembered per handle.

    Bug: ``get_spill`` of a missing reference is cached as missing; a
    ``put_spill`` or ``import_bundle`` through another handle leaves this
    handle answering ``not_found``.
    Breaks: LED-021 (``getSpill`` after another handle's put or bundle import).
    Realistic: a poller asks for an object before it exists.
    """

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        with self._cache_lock:
            if ("no-spill", conversation_id, reference) in self._cache:
                return None
        found = super()._get_spill(conversation_id, reference)
        if found is None:
            with self._cache_lock:
                self._cache[("no-spill", conversation_id, reference)] = True
        return found


class SpillCacheForgetsPurge(SqliteStore):
    """Spill bytes are cached per handle; deletes are broadcast to every handle, purges are not.

    Bug: every handle of this process registers itself, and a ``delete_spill``
    through any handle drops the entry from all of them; a purge through
    another handle is not broadcast, so ``get_spill`` keeps returning the
    bytes of an object the purge removed.
    Breaks: LED-021 ("getSpill MUST NOT return the bytes of an object another
    handle has ... purged"), SPL-032, TRN-094.
    Realistic: the invalidation was wired to the spill operations, and purge
    lives in another module.
    """

    _handles: ClassVar[weakref.WeakSet[SpillCacheForgetsPurge]] = weakref.WeakSet()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bytes: dict[tuple[str, str], tuple[SpillMetadata, bytes]] = {}
        self._handles.add(self)

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        key = (conversation_id, reference)
        if key in self._bytes:
            return self._bytes[key]
        found = super()._get_spill(conversation_id, reference)
        if found is not None:
            self._bytes[key] = found
        return found

    def _delete_spill(
        self, conversation_id: str, reference: str, draft_for: Callable[[int], EventDraft]
    ) -> Envelope:
        placed = super()._delete_spill(conversation_id, reference, draft_for)
        for handle in list(self._handles):
            handle._bytes.pop((conversation_id, reference), None)
        return placed

    def _purge(self, conversation_id: str) -> bool:
        newly = super()._purge(conversation_id)
        for key in [key for key in self._bytes if key[0] == conversation_id]:
            del self._bytes[key]
        return newly


class SearchCacheWithoutCallback(_ForgetsOnOwnWrites):
    """Searches without an ``authorize`` callback are cached per handle.

    Bug: without a callback a search sees only the requester's own
    conversation (SRC-010), which the implementer took to be safe to cache;
    an append (or a purge) through another handle is not seen by this
    handle's cached answer.
    Breaks: LED-021 (``search`` after another handle's append or purge),
    SRC-004 (a hit of a purged conversation).
    Realistic: the callback was the only per-call input that looked dynamic.
    """

    def search(  # type: ignore[override]
        self,
        requester: str,
        query: str,
        *,
        scope: Sequence[str] | None = None,
        limit: int = 20,
        authorize: Callable[[str], bool] | None = None,
    ) -> tuple[Hit, ...]:
        if authorize is not None or not isinstance(requester, str) or not isinstance(query, str):
            return super().search(requester, query, scope=scope, limit=limit, authorize=authorize)
        try:
            key = ("search", requester, query, None if scope is None else tuple(scope), limit)
            hash(key)
        except TypeError:
            return super().search(requester, query, scope=scope, limit=limit, authorize=authorize)
        return self._cached(  # type: ignore[no-any-return]
            key,
            lambda: super(SearchCacheWithoutCallback, self).search(
                requester, query, scope=scope, limit=limit, authorize=None
            ),
        )


class ProjectionStatusCache(_ForgetsOnOwnWrites):
    """``projection_status`` is cached per handle until this handle writes.

    Bug: a dashboard polls the lag of every projection; the handle keeps the
    status it computed. An append through another handle (the head moves) or
    its catch-up (``uptoSeq`` moves) is not reflected: the status right after
    an append reports the old head.
    Breaks: LED-021 (``projectionStatus``), PRJ-014.
    Realistic: status looks like monitoring data, where staleness is normal.
    """

    def projection_status(self, conversation_id: str, name: str) -> ProjectionStatus:
        if not isinstance(conversation_id, str) or not isinstance(name, str):
            return super().projection_status(conversation_id, name)
        return self._cached(  # type: ignore[no-any-return]
            ("status", conversation_id, name),
            lambda: super(ProjectionStatusCache, self).projection_status(conversation_id, name),
        )


class FactRowsCacheByTotalChanges(SqliteStore):
    """Fact rows are cached and revalidated by the connection's ``total_changes``.

    Bug: ``sqlite3.Connection.total_changes`` counts the rows changed through
    *this* connection only; the implementer read it as "the database changed".
    A ``write_fact_rows`` through another handle leaves ``child_links`` and
    ``schedules`` of this handle stale.
    Breaks: LED-021 (``childLinks``, ``schedules``), FCT-024.
    Realistic: ``PRAGMA data_version`` is the right counter, and the two are
    easily confused.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rows: dict[tuple[str, str], tuple[int, tuple[FactRow, ...]]] = {}

    def _fact_rows(self, table: str, conversation_id: str) -> tuple[FactRow, ...]:
        stamp = self._connection.total_changes
        found = self._rows.get((table, conversation_id))
        if found is not None and found[0] == stamp:
            return found[1]
        rows_found = super()._fact_rows(table, conversation_id)
        self._rows[(table, conversation_id)] = (self._connection.total_changes, rows_found)
        return rows_found


class ProcessWideActiveRunsCache(SqliteStore):
    """``list_active_runs`` is cached once per process, invalidated by every handle of it.

    Bug: the cache is shared by all handles of the process and every write
    through any of them invalidates the conversation's entry, so two handles
    in one process always agree. A transition made in another process is not
    seen: this process keeps listing the old active runs.
    Breaks: LED-021 ("in this process or another"), LED-019.
    Realistic: the in-process multi-handle test passes; the process boundary
    is where the cache ends.
    """

    _shared: ClassVar[dict[tuple[str, str], list[Run]]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def _drop(self, conversation_id: str) -> None:
        with self._shared_lock:
            self._shared.pop((self.path, conversation_id), None)

    def _active_runs(self, conversation_id: str) -> list[Run]:
        key = (self.path, conversation_id)
        with self._shared_lock:
            if key in self._shared:
                return list(self._shared[key])
        found = super()._active_runs(conversation_id)
        with self._shared_lock:
            self._shared[key] = list(found)
        return found

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        try:
            return super()._transit(conversation_id, transition, draft)
        finally:
            self._drop(conversation_id)

    def _purge(self, conversation_id: str) -> bool:
        try:
            return super()._purge(conversation_id)
        finally:
            self._drop(conversation_id)

    def _import(self, archive: Archive) -> None:
        try:
            super()._import(archive)
        finally:
            self._drop(archive.conversation_id)


class HeadCacheInvalidatedByAppendOnly(SqliteStore):
    """The head is cached per handle; only appends (through any handle here) invalidate it.

    Bug: a process-wide generation counter is raised by every ``append`` and
    a handle's cached heads are valid while it is unchanged. Transitions,
    ``put_spill``, ``delete_spill``, imports and purges also add or remove
    events but do not raise it, so after one of them through another handle
    this handle's ``head`` is stale.
    Breaks: LED-021 (every write of the capability table, "not only
    append"), LED-019, LED-012.
    Realistic: the invalidation sits in ``append``, the one write the
    implementer thought adds events.
    """

    _generation: ClassVar[dict[str, int]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._heads: dict[str, tuple[int, int]] = {}

    def _head(self, conversation_id: str) -> int:
        generation = self._generation.get(self.path, 0)
        found = self._heads.get(conversation_id)
        if found is not None and found[0] == generation:
            return found[1]
        head = super()._head(conversation_id)
        self._heads[conversation_id] = (generation, head)
        return head

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        try:
            return super()._append(conversation_id, drafts, expected_head)
        finally:
            self._generation[self.path] = self._generation.get(self.path, 0) + 1

    def _own_write(self) -> None:
        self._heads.clear()

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        try:
            return super()._transit(conversation_id, transition, draft)
        finally:
            self._own_write()

    def _import(self, archive: Archive) -> None:
        try:
            super()._import(archive)
        finally:
            self._own_write()

    def _purge(self, conversation_id: str) -> bool:
        try:
            return super()._purge(conversation_id)
        finally:
            self._own_write()

    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata:
        try:
            return super()._put_spill(conversation_id, metadata, data, draft)
        finally:
            self._own_write()

    def _delete_spill(
        self, conversation_id: str, reference: str, draft_for: Callable[[int], EventDraft]
    ) -> Envelope:
        try:
            return super()._delete_spill(conversation_id, reference, draft_for)
        finally:
            self._own_write()

    def _write_fact_rows(
        self,
        row: FactRow,
        appends: tuple[tuple[str, tuple[EventDraft, ...]], ...],
        skip_purged: bool,
    ) -> tuple[str, ...]:
        try:
            return super()._write_fact_rows(row, appends, skip_purged)
        finally:
            self._own_write()


class ScanRecoverableCache(_ForgetsOnOwnWrites):
    """``scan_recoverable`` pages are cached per handle until this handle writes.

    Bug: the recovery sweeper scans every few seconds through its own handle
    and never writes through it unless it recovers something; acquires,
    terminals and purges made by workers on other handles are not seen, so
    it recovers runs that already ended or misses new ones.
    Breaks: LED-021 (``scanRecoverable`` after another handle's transition).
    Realistic: the scan touches every conversation and looked expensive.
    """

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        key = ("scan", None if after is None else (after.conversation_id, after.ordinal), limit)
        return list(
            self._cached(
                key, lambda: super(ScanRecoverableCache, self)._scan_recoverable(after, limit)
            )
        )


# ---------------------------------------------------------------------------------------------
# Two boundaries of the engine (on SQLite :memory:, no multi_process needed)
# ---------------------------------------------------------------------------------------------


class SearchQueryInBytes(SqliteStore):
    """The 1000-character bound of a search query is counted in UTF-8 bytes.

    Bug: the query is bound to a column/buffer measured in bytes, so a query
    of 1000 characters of which some take two or more bytes (501 of ``é``) is
    refused ``invalid_input``, though SRC-022 counts characters (LIM-013).
    Breaks: SRC-022, LIM-013.
    Realistic: "1000" was sized for a byte buffer.
    """

    def search(  # type: ignore[override]
        self, requester: str, query: str, **kwargs: Any
    ) -> tuple[Hit, ...]:
        if isinstance(query, str):
            try:
                size = len(query.encode("utf-8"))
            except UnicodeEncodeError:
                size = 0
            if size > 1000:
                raise InvalidInputError(
                    "query longer than 1000 characters", requirement="SRC-022", field="query"
                )
        return super().search(requester, query, **kwargs)


class ReadWithoutSeqClamp(SqliteStore):
    """A read passes ``fromSeq`` / ``toSeq`` to the driver unclamped.

    Bug: the read window is bound as SQL parameters as it came; SQLite takes
    64-bit integers only, so a ``fromSeq`` or ``toSeq`` beyond 2^63 - 1 (any
    integer >= 1 is a valid window, LIM-007) fails in the driver with an
    untyped ``OverflowError`` instead of an empty page.
    Breaks: LIM-007 (the read exception), LED-011, ERR-006.
    Realistic: the clamp to the largest seq looks like dead code.
    """

    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]:
        upper = rows.MAX_SEQ if to_seq is None else to_seq
        with self._gate("read") as connection, driver_boundary("read"):
            return rows.read_window(connection, conversation_id, from_seq, upper, limit)


# ---------------------------------------------------------------------------------------------
# Factories
# ---------------------------------------------------------------------------------------------

load_run_cache = _file_factory(LoadRunCache)
checkpoint_cache_keyed_by_head = _file_factory(CheckpointCacheKeyedByHead)
export_cache_keyed_by_head = _file_factory(ExportCacheKeyedByHead)
negative_runtime_cache = _file_factory(NegativeRuntimeCache)
spill_negative_cache = _file_factory(SpillNegativeCache)
spill_cache_forgets_purge = _file_factory(SpillCacheForgetsPurge)
search_cache_without_callback = _file_factory(SearchCacheWithoutCallback)
projection_status_cache = _file_factory(ProjectionStatusCache)
fact_rows_cache_by_total_changes = _file_factory(FactRowsCacheByTotalChanges)
process_wide_active_runs_cache = _file_factory(ProcessWideActiveRunsCache)
head_cache_invalidated_by_append_only = _file_factory(HeadCacheInvalidatedByAppendOnly)
scan_recoverable_cache = _file_factory(ScanRecoverableCache)


def search_query_in_bytes() -> SqliteStore:
    return SearchQueryInBytes(":memory:")


def read_without_seq_clamp() -> SqliteStore:
    return ReadWithoutSeqClamp(":memory:")


SQLITE_STORES: tuple[tuple[str, str], ...] = (
    ("load_run_cache", "freshness"),
    ("checkpoint_cache_keyed_by_head", "freshness"),
    ("export_cache_keyed_by_head", "freshness"),
    ("negative_runtime_cache", "freshness"),
    ("spill_negative_cache", "freshness"),
    ("spill_cache_forgets_purge", "freshness"),
    ("search_cache_without_callback", "freshness"),
    ("projection_status_cache", "freshness"),
    ("fact_rows_cache_by_total_changes", "freshness"),
    ("process_wide_active_runs_cache", "freshness"),
    ("head_cache_invalidated_by_append_only", "freshness"),
    ("scan_recoverable_cache", "freshness"),
    ("search_query_in_bytes", "boundaries"),
    ("read_without_seq_clamp", "boundaries"),
)
"""(factory, class of the issue) of the stores in this module."""
