"""The spills gallery: broken stores of chapter SPL.

Each class has exactly ONE bug a real store could make (one is prior-art bug
6: an export that forgets the spills), and is listed in :data:`BROKEN` with
the requirement ids a conformance run must report failed for it. Each
overrides a hook of ``SpillsBase`` (or ``get_spill``) and calls ``super()``.
MemoryStore variants serve most; the corrupted spill needs bytes on disk, so
that variant is an SQLite store.
"""

from __future__ import annotations

from collections.abc import Sequence

from convledger.archive import Archive
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.memory import MemoryStore
from convledger.spills.objects import CREATED, DELETED, Authorize, SpillMetadata
from convledger.sqlite import SqliteStore
from galleries import BrokenStore, broken
from galleries.sqlite import factory_of


class AuthorizedOnlyAtPut(MemoryStore):
    """SPL-020: get_spill trusts the authorization checked at put and never asks again."""

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Authorize) -> bytes:
        found = self._get_spill(conversation_id, reference)
        if found is None:
            return super().get_spill(conversation_id, reference, authorize=authorize)
        return found[1]


class ReferenceOfAnyConversation(MemoryStore):
    """SPL-021: looks a reference up in every conversation, not only the addressed one."""

    def __init__(self) -> None:
        super().__init__()
        self._holders: dict[str, None] = {}
        """The conversations a spill was put into or imported with, in order."""

    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata:
        stored = super()._put_spill(conversation_id, metadata, data, draft)
        self._holders[conversation_id] = None
        return stored

    def _import(self, archive: Archive) -> None:
        super()._import(archive)
        self._holders[archive.conversation_id] = None

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        for holder in [conversation_id, *self._holders]:
            found = super()._get_spill(holder, reference)
            if found is not None:
                return found
        return None


class ExportsWithoutSpills(MemoryStore):
    """SPL-044: the export forgets the spills companion (prior-art bug 6)."""

    def _export_bundle_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue], dict[str, bytes]]:
        events, companions, _ = super()._export_bundle_contents(conversation_id)
        companions.pop("spills", None)
        return events, companions, {}


class ReturnsCorruptedSpill(SqliteStore):
    """SPL-022: returns the stored bytes without checking their sha256."""

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Authorize) -> bytes:
        found = self._get_spill(conversation_id, reference)
        if found is None or authorize(found[0].descriptor) is not True:
            return super().get_spill(conversation_id, reference, authorize=authorize)
        return found[1]


class SpillEventsCheckedUpToAnOrdinaryOne(MemoryStore):
    """SPL-008: stops looking for ``spill/*`` events at the first ordinary event of a batch.

    The loop over the batch says ``break`` where it means ``continue``, so a batch whose
    forged ``spill/deleted`` of a live object follows an ordinary event is appended. Found
    by mutation testing (``scripts/mutation.py``: ``spills/operations.py``): every forged
    event of the suite was alone in its batch. Here the batch is placed without the
    conversation's live objects in view when such an event follows an ordinary one.
    """

    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]:
        kinds = [draft.kind in (CREATED, DELETED) for draft in drafts]
        ordinary = kinds.index(False) if False in kinds else len(kinds)
        if not any(kinds[ordinary:]):
            return super()._append(conversation_id, drafts, expected_head)
        live = self._spills.pop(conversation_id, None)
        try:
            return super()._append(conversation_id, drafts, expected_head)
        finally:
            if live is not None:
                self._spills[conversation_id] = live


BROKEN: tuple[BrokenStore, ...] = (
    broken("spills", AuthorizedOnlyAtPut, "SPL-020"),
    broken("spills", ReferenceOfAnyConversation, "SPL-021"),
    broken("spills", ExportsWithoutSpills, "SPL-044"),
    broken("spills", SpillEventsCheckedUpToAnOrdinaryOne, "SPL-008"),
    broken("spills", ReturnsCorruptedSpill, "SPL-022", factory=factory_of(ReturnsCorruptedSpill)),
)
"""Every broken store of chapter SPL and the ids its bug must fail."""
