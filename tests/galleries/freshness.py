"""The freshness gallery: SQLite stores that cache what was read (LED-019, issue 20).

Each class has exactly ONE bug: one read is answered from a cache.

* ``Caches*PerHandle`` keep the cache in the handle and empty it only on that
  handle's own writes, so a handle that only reads never sees what another
  handle wrote. The check that kills them, ``every_read_fresh_across_handles``,
  reads through a handle that never writes right after a write through another.
* ``Caches*PerProcess`` keep it in the class, shared by every handle of the
  process (keyed by file), and empty it on every write transaction the
  process makes, so every handle of one process agrees and the check above
  passes them; a handle never sees what another PROCESS wrote. The check that
  kills them, ``every_read_fresh_across_processes``, reads in this process
  right after a write in another. One per read family: runtime reads,
  checkpoints, spills, search.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, ClassVar

from convledger.sqlite import SqliteStore
from galleries import BrokenStore, broken
from galleries.sqlite import files_of


class _CachesPerHandle(SqliteStore):
    """Keeps the answers of one read in the handle; its own writes empty the cache."""

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        self._kept: dict[object, object] = {}

    def _kept_or(self, key: object, read: Any) -> Any:
        if key not in self._kept:
            self._kept[key] = read()
        return self._kept[key]

    def transition(self, *arguments: Any, **options: Any) -> Any:
        self._kept.clear()
        return super().transition(*arguments, **options)

    def catch_up(self, *arguments: Any, **options: Any) -> Any:
        self._kept.clear()
        return super().catch_up(*arguments, **options)

    def append(self, *arguments: Any, **options: Any) -> Any:
        self._kept.clear()
        return super().append(*arguments, **options)


class CachesSnapshotsPerHandle(_CachesPerHandle):
    """LED-019: load_snapshot answers from the handle's cache, stale after another's transition."""

    def load_snapshot(self, conversation_id: str) -> Any:
        return self._kept_or(("snapshot", conversation_id),
                             lambda: super(CachesSnapshotsPerHandle, self).load_snapshot(
                                 conversation_id))


class CachesCheckpointsPerHandle(_CachesPerHandle):
    """LED-019: load_checkpoint answers from the handle's cache, stale after another's catch-up."""

    def load_checkpoint(self, conversation_id: str, name: str) -> Any:
        return self._kept_or(("checkpoint", conversation_id, name),
                             lambda: super(CachesCheckpointsPerHandle, self).load_checkpoint(
                                 conversation_id, name))


class CachesSearchesPerHandle(_CachesPerHandle):
    """LED-019: search answers a repeated query from the handle's cache of hits."""

    def search(self, requester: str, query: str, **options: Any) -> Any:
        key = ("search", requester, query, repr(sorted(options.items(), key=str)))
        return self._kept_or(key, lambda: super(CachesSearchesPerHandle, self).search(
            requester, query, **options))


class CachesRunsPerHandle(_CachesPerHandle):
    """LED-019: load_run remembers that a run does not exist, after another handle accepted it."""

    def load_run(self, conversation_id: str, run_id: str) -> Any:
        return self._kept_or(("run", conversation_id, run_id),
                             lambda: super(CachesRunsPerHandle, self).load_run(conversation_id,
                                                                               run_id))


class CachesSpillsPerHandle(_CachesPerHandle):
    """LED-019, SPL-021: get_spill keeps the bytes it has read in the handle and serves them
    again after another handle deleted or purged the object (issue 37)."""

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Any) -> Any:
        key = ("spill", conversation_id, reference)
        if key in self._kept:
            return self._kept[key]
        found = super().get_spill(conversation_id, reference, authorize=authorize)
        self._kept[key] = found  # only what was found is kept: a missing one is read again
        return found


class _CachesPerProcess(SqliteStore):
    """Keeps the answers of one read in the class, for every handle of this process; every
    write transaction of this process, through any handle, empties it."""

    _kept: ClassVar[dict[object, object]] = {}

    def _kept_or(self, key: tuple[object, ...], read: Any) -> Any:
        key = (type(self).__name__, self.path, *key)
        if key not in self._kept:
            self._kept[key] = read()
        return self._kept[key]

    @contextlib.contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[Any]:
        if write:
            self._kept.clear()
        try:
            with super()._transaction(operation, write=write) as connection:
                yield connection
        finally:
            if write:
                self._kept.clear()


class CachesActiveRunsPerProcess(_CachesPerProcess):
    """LED-019: list_active_runs answers from this process's cache, stale after another
    process's transition."""

    def list_active_runs(self, conversation_id: str) -> Any:
        return self._kept_or(("active", conversation_id),
                             lambda: super(CachesActiveRunsPerProcess, self).list_active_runs(
                                 conversation_id))


class CachesProjectionStatusPerProcess(_CachesPerProcess):
    """LED-019: projection_status answers from this process's cache, stale after another
    process's append or catch-up."""

    def projection_status(self, conversation_id: str, name: str) -> Any:
        return self._kept_or(
            ("status", conversation_id, name),
            lambda: super(CachesProjectionStatusPerProcess, self).projection_status(
                conversation_id, name))


class CachesSpillsPerProcess(_CachesPerProcess):
    """LED-019: get_spill remembers in this process that a spill is missing, after another
    process put it."""

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Any) -> Any:
        def read() -> object:
            try:
                return super(CachesSpillsPerProcess, self).get_spill(
                    conversation_id, reference, authorize=authorize)
            except Exception as error:  # the refusal is kept too, and raised again
                return error

        kept = self._kept_or(("spill", conversation_id, reference), read)
        if isinstance(kept, Exception):
            raise kept
        return kept


class CachesSearchesPerProcess(_CachesPerProcess):
    """LED-019: search answers a repeated query from this process's cache of hits."""

    def search(self, requester: str, query: str, **options: Any) -> Any:
        key = ("search", requester, query, repr(sorted(options.items(), key=str)))
        return self._kept_or(key, lambda: super(CachesSearchesPerProcess, self).search(
            requester, query, **options))


PER_HANDLE: tuple[BrokenStore, ...] = tuple(
    broken("freshness", cls, "LED-019", factory=files_of(cls),
           checks=("every_read_fresh_across_handles",))
    for cls in (CachesSnapshotsPerHandle, CachesCheckpointsPerHandle, CachesSearchesPerHandle,
                CachesRunsPerHandle, CachesSpillsPerHandle)
)
"""Killed by the check across handles of one process."""
PER_PROCESS: tuple[BrokenStore, ...] = tuple(
    broken("freshness", cls, "LED-019", factory=files_of(cls),
           checks=("every_read_fresh_across_processes",))
    for cls in (CachesActiveRunsPerProcess, CachesProjectionStatusPerProcess,
                CachesSpillsPerProcess, CachesSearchesPerProcess)
)
"""Killed only by the check across processes: they pass the checks across handles."""
BROKEN: tuple[BrokenStore, ...] = PER_HANDLE + PER_PROCESS
