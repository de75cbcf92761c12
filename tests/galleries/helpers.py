"""The helpers gallery: broken MemoryStores that break a call the suite makes for itself (issue 20).

The suite reads whole ledgers (``read`` with limit 1000, the default of LED-007) and
heads to compare states before and after the call a check tests. A store that
breaks such a call used to fail every check that compares states: one bug, a flood
of 71 failed checks. CAP-006 reports it once, as the broken call, with the checks
it stopped ``not_run``. Each class has ONE bug in ``read`` or ``head``.
"""

from __future__ import annotations

from convledger.errors import InvalidInputError
from convledger.memory import MemoryStore
from convledger.store import Page
from galleries import BrokenStore, broken


class PagesCappedBelowTheDefault(MemoryStore):
    """LED-008: a read of 1000 events or more is refused (the store caps pages at 999)."""

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = 1000,
    ) -> Page:
        if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1000:
            raise InvalidInputError("limit is too large", requirement="LED-010", field="limit")
        return super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)


class HeadBreaksOnUnknownConversations(MemoryStore):
    """LED-012: head of a conversation without events raises a KeyError instead of answering 0."""

    def head(self, conversation_id: str) -> int:
        answer = super().head(conversation_id)
        if answer == 0 and isinstance(conversation_id, str):
            raise KeyError(conversation_id)
        return answer


BROKEN: tuple[BrokenStore, ...] = (
    broken("helpers", PagesCappedBelowTheDefault, "LED-008", "LED-010"),
    broken("helpers", HeadBreaksOnUnknownConversations, "LED-012"),
)
