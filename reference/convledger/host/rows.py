"""Child links and schedules kept beside the ledger (chapter ``facts.md``, SQL-068, SQL-069).

:class:`FactRowOperations` is mixed into :class:`convledger.store.StoreBase`.
A store that keeps these rows implements two primitives; the default refuses
with ``not_supported``, and the step loop then records the facts as events
alone:

=====================  =========================================================
primitive              contract
=====================  =========================================================
``_write_fact_rows``   in ONE atomic step: append each batch of drafts to its
                       conversation (a purged one is skipped when
                       ``skip_purged``, else the whole step is refused) and
                       upsert the child link or schedule row; answer the
                       conversations that took events
``_fact_rows``         the child links of a parent, or the schedules of a
                       conversation
=====================  =========================================================

Child links outlive a purge of either conversation (SQL-068): a child settling
after both were purged updates its row alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from convledger.canonical import JsonValue
from convledger.envelope import EventDraft, check_identifier
from convledger.errors import NotSupportedError


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


class FactRowOperations:
    """Argument checks of the row operations; the primitives do the stored part."""

    def write_fact_rows(
        self, row: FactRow, appends: Appends, *, skip_purged: bool = False
    ) -> tuple[str, ...]:
        """SQL-068, SQL-069: append the drafts and upsert ``row`` in one atomic step."""
        for conversation_id, _ in appends:
            check_identifier(conversation_id, "conversationId", "ENV-005")
        batches = tuple((cid, tuple(drafts)) for cid, drafts in appends)
        return self._write_fact_rows(row, batches, skip_purged)

    def child_links(self, parent_conversation_id: str) -> tuple[ChildLink, ...]:
        """SQL-068: the links of a parent, by child id."""
        check_identifier(parent_conversation_id, "conversationId", "ENV-005")
        found = self._fact_rows("children", parent_conversation_id)
        return tuple(row for row in found if isinstance(row, ChildLink))

    def schedules(self, conversation_id: str) -> tuple[ScheduleRow, ...]:
        """SQL-068: the schedules of a conversation, by id."""
        check_identifier(conversation_id, "conversationId", "ENV-005")
        found = self._fact_rows("schedules", conversation_id)
        return tuple(row for row in found if isinstance(row, ScheduleRow))

    # -- primitives ------------------------------------------------------------------------------

    def _write_fact_rows(
        self,
        row: FactRow,
        appends: tuple[tuple[str, tuple[EventDraft, ...]], ...],
        skip_purged: bool,
    ) -> tuple[str, ...]:
        raise NotSupportedError(
            "this store keeps no child links or schedules beside its ledger",
            requirement="SQL-068",
            capability="fact_rows",
        )

    def _fact_rows(self, table: str, conversation_id: str) -> tuple[FactRow, ...]:
        raise NotSupportedError(
            "this store keeps no child links or schedules beside its ledger",
            requirement="SQL-068",
            capability="fact_rows",
        )
