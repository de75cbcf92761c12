"""The rows of capability ``fact_rows``: child links and schedules (``facts.md``, SQL-068).

:class:`ChildLink` and :class:`ScheduleRow` are the values a store keeps
beside its ledger; the protocol and the abstract base of the capability are
in :mod:`convledger.host.store`.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from convledger.canonical import JsonValue
from convledger.envelope import EventDraft


@attrs.frozen
class ChildLink:
    """One parent -> child link (SQL-068)."""

    parent_conversation_id: str
    child_conversation_id: str
    state: str
    seed_upto_seq: int
    budget: dict[str, JsonValue]

    def to_json(self) -> dict[str, JsonValue]:
        """The stored record."""
        return {
            "parentConversationId": self.parent_conversation_id,
            "childConversationId": self.child_conversation_id,
            "state": self.state,
            "seedUptoSeq": self.seed_upto_seq,
            "budget": self.budget,
        }


@attrs.frozen
class ScheduleRow:
    """One schedule of a conversation (SQL-068)."""

    conversation_id: str
    schedule_id: str
    kind: str
    next_at: str | None
    state: str
    occurrence: int

    def to_json(self) -> dict[str, JsonValue]:
        """The stored record."""
        return {
            "conversationId": self.conversation_id,
            "id": self.schedule_id,
            "kind": self.kind,
            "nextAt": self.next_at,
            "state": self.state,
            "occurrence": self.occurrence,
        }


FactRow = ChildLink | ScheduleRow
Appends = Sequence[tuple[str, Sequence[EventDraft]]]


