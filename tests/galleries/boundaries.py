"""The boundaries gallery: broken MemoryStores that refuse a value exactly at its limit (issue 20).

Each class has exactly ONE bug, an off-by-one written as ``>=`` where the
spec says "at most": it refuses the largest (or smallest) legal value of one
bound of ``spec/limits.json`` with ``invalid_input``, and accepts everything
else as the reference does. The generated boundary checks
(``convledger_conformance.hostile.boundaries``) must kill each one; the hostile
corpus, which sends only values past a limit, cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from convledger.envelope import Envelope, EventDraft
from convledger.errors import InvalidInputError
from convledger.limits import MAX_OCCURRED_AT_BYTES
from convledger.memory import MemoryStore
from convledger.projections.definition import ProjectionDefinition
from convledger.store import Page
from convledger_conformance.spec_values import BOUNDS
from galleries import BrokenStore, broken

_MAXIMUM = {bound.name: bound.maximum for bound in BOUNDS}
READ_LIMIT = _MAXIMUM["readLimit"]
APPEND_DRAFTS = _MAXIMUM["appendDrafts"]
PROJECTION_NAME_CHARS = _MAXIMUM["projectionNameChars"]
SPILL_REFERENCE_CHARS = _MAXIMUM["spillReferenceChars"]


def _refuse(field: str, requirement: str) -> InvalidInputError:
    return InvalidInputError(f"{field} is too large", requirement=requirement, field=field)


class RefusesTheLargestReadLimit(MemoryStore):
    """LED-010: a read limit of exactly 10000 is refused (``limit >= 10000``, not ``>``)."""

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = 1000,
    ) -> Page:
        if limit == READ_LIMIT and not isinstance(limit, bool):
            raise _refuse("limit", "LED-010")
        return super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)


class RefusesTheLargestBatch(MemoryStore):
    """LED-001: an append of exactly 10000 drafts is refused."""

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        if isinstance(drafts, Sequence) and len(drafts) == APPEND_DRAFTS:
            raise _refuse("drafts", "LED-001")
        return super().append(conversation_id, drafts, expected_head=expected_head)


class RefusesProjectionNamesAtTheLimit(MemoryStore):
    """PRJ-001: a projection definition whose name has exactly 200 characters is refused."""

    def catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, *, max_events: int = 10_000
    ) -> Any:
        if len(getattr(definition, "name", "")) == PROJECTION_NAME_CHARS:
            raise _refuse("name", "PRJ-001")
        return super().catch_up(conversation_id, definition, max_events=max_events)


class RefusesSpillReferencesAtTheLimit(MemoryStore):
    """SPL-005: a spill reference of exactly 1024 characters is refused."""

    def put_spill(self, conversation_id: str, data: bytes, **arguments: Any) -> Any:
        reference = arguments.get("reference")
        if isinstance(reference, str) and len(reference) == SPILL_REFERENCE_CHARS:
            raise _refuse("reference", "SPL-005")
        return super().put_spill(conversation_id, data, **arguments)


class RefusesOccurredAtOfTheLimit(MemoryStore):
    """LIM-008: an append whose occurredAt has exactly 64 bytes is refused."""

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        times = [getattr(d, "occurred_at", "") for d in drafts]
        if any(isinstance(t, str) and len(t.encode("utf-8", "replace")) == MAX_OCCURRED_AT_BYTES
               for t in times):
            raise _refuse("occurredAt", "LIM-008")
        return super().append(conversation_id, drafts, expected_head=expected_head)


BROKEN: tuple[BrokenStore, ...] = (
    broken("boundaries", RefusesTheLargestReadLimit, "LED-010"),
    broken("boundaries", RefusesTheLargestBatch, "LED-001"),
    broken("boundaries", RefusesProjectionNamesAtTheLimit, "PRJ-001"),
    broken("boundaries", RefusesSpillReferencesAtTheLimit, "SPL-005"),
    broken("boundaries", RefusesOccurredAtOfTheLimit, "LIM-008"),
)
