"""The freshness gallery: SQLite stores that cache what a handle read (LED-019, issue 20).

Each class has exactly ONE bug: one read is answered from a cache kept in the
handle and emptied only by that handle's own writes, so a handle that only
reads never sees what another handle wrote. The check that kills them,
``every_read_fresh_across_handles``, reads through a handle that never writes
right after a write through another.
"""

from __future__ import annotations

from typing import Any

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


BROKEN: tuple[BrokenStore, ...] = tuple(
    broken("freshness", cls, "LED-019", factory=files_of(cls),
           checks=("every_read_fresh_across_handles",))
    for cls in (CachesSnapshotsPerHandle, CachesCheckpointsPerHandle, CachesSearchesPerHandle,
                CachesRunsPerHandle)
)
