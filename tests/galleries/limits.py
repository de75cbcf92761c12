"""The limits gallery: broken MemoryStores of chapter LIM (hostile input, issue 16).

Each class has exactly ONE bug that the hostile-input corpus
(``convledger_conformance.hostile``) must find, in process and over the wire.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from convledger.batch import validated_batch
from convledger.envelope import Envelope, EventDraft
from convledger.memory import MemoryStore
from convledger.store import Page
from galleries import BrokenStore, broken


class AcceptsOversizedIds(MemoryStore):
    """LIM-001: skips every check of an append that names an id longer than 1024 characters."""

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        fields = ("event_id", "kind")
        names = [conversation_id, *(getattr(d, n, "") for d in drafts for n in fields)]
        if any(isinstance(name, str) and len(name) > 1024 for name in names):
            return self._append(conversation_id, tuple(drafts), expected_head)
        return super().append(conversation_id, drafts, expected_head=expected_head)


class CountsIdentifierCharacters(MemoryStore):
    """LIM-001: bounds the conversationId and eventIds of an append by 1024 characters, not
    UTF-8 bytes, so 513 two-byte characters pass (issue 37)."""

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        stand_ins: dict[str, str] = {}

        def short(value: object) -> object:
            if isinstance(value, str) and len(value) <= 1024 < len(value.encode("utf-8")):
                return stand_ins.setdefault(value, f"stand-in-{len(stand_ins)}")
            return value

        listed = [attrs.evolve(d, event_id=short(d.event_id)) if isinstance(d, EventDraft)
                  else d for d in drafts]
        checked = validated_batch(self._registry, short(conversation_id), listed, expected_head)
        back = {stand: value for value, stand in stand_ins.items()}
        batch = tuple(attrs.evolve(d, event_id=back.get(d.event_id, d.event_id))
                      for d in checked)
        return self._append(conversation_id, batch, expected_head)


class FailsOnHugeLimits(MemoryStore):
    """LIM-007: a read limit beyond 64 bits reaches a driver that raises an untyped error."""

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = 1000,
    ) -> Page:
        if isinstance(limit, int) and limit.bit_length() > 64:
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        return super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)


BROKEN: tuple[BrokenStore, ...] = (
    broken("limits", AcceptsOversizedIds, "LIM-001"),
    broken("limits", CountsIdentifierCharacters, "LIM-001",
           checks=("identifiers_at_the_byte_limit",)),
    broken("limits", FailsOnHugeLimits, "LIM-007"),
)
