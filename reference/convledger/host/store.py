"""Capability ``fact_rows``: its protocol and abstract base (``facts.md``, SQL-068, SQL-069).

A store MAY keep the current state of child links and schedules beside its
ledger (FCT). It then declares capability ``fact_rows``; an implementer reads
:class:`FactRowStore` and, to build on the reference, :class:`FactRowsBase`,
which checks the arguments and calls two hooks. The host's step loop uses
the rows only when the store declares the capability, and otherwise records
the facts as events alone.

=====================  =========================================================
hook                   contract
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

import abc
from typing import Protocol, runtime_checkable

from convledger.capabilities import Capability
from convledger.envelope import EventDraft, check_identifier
from convledger.host.rows import Appends, ChildLink, FactRow, ScheduleRow
from convledger.store_base import StoreBase
from convledger.store_interface import LedgerStore


@runtime_checkable
class FactRowStore(LedgerStore, Protocol):
    """Capability ``fact_rows``: child links and schedules beside the ledger (SQL-068)."""

    def write_fact_rows(
        self, row: FactRow, appends: Appends, *, skip_purged: bool = False
    ) -> tuple[str, ...]:
        """Append the drafts and upsert ``row`` in one atomic step (SQL-068, SQL-069)."""
        ...

    def child_links(self, parent_conversation_id: str) -> tuple[ChildLink, ...]:
        """The links of a parent, by child id."""
        ...

    def schedules(self, conversation_id: str) -> tuple[ScheduleRow, ...]:
        """The schedules of a conversation, by id."""
        ...


class FactRowsBase(StoreBase):
    """Argument checks of the row operations; the hooks do the stored part."""

    def write_fact_rows(
        self, row: FactRow, appends: Appends, *, skip_purged: bool = False
    ) -> tuple[str, ...]:
        """SQL-068, SQL-069: append the drafts and upsert ``row`` in one atomic step."""
        self._require(Capability.FACT_ROWS, "write_fact_rows")
        for conversation_id, _ in appends:
            check_identifier(conversation_id, "conversationId", "ENV-005")
        batches = tuple((cid, tuple(drafts)) for cid, drafts in appends)
        return self._write_fact_rows(row, batches, skip_purged)

    def child_links(self, parent_conversation_id: str) -> tuple[ChildLink, ...]:
        """SQL-068, FCT-024: the last link written for each child of a parent, by child id."""
        self._require(Capability.FACT_ROWS, "child_links")
        check_identifier(parent_conversation_id, "conversationId", "ENV-005")
        found = self._fact_rows("children", parent_conversation_id)
        return tuple(row for row in found if isinstance(row, ChildLink))

    def schedules(self, conversation_id: str) -> tuple[ScheduleRow, ...]:
        """SQL-068, FCT-024: the last row written for each schedule of a conversation, by id."""
        self._require(Capability.FACT_ROWS, "schedules")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        found = self._fact_rows("schedules", conversation_id)
        return tuple(row for row in found if isinstance(row, ScheduleRow))

    # -- hooks -----------------------------------------------------------------------------------

    @abc.abstractmethod
    def _write_fact_rows(
        self,
        row: FactRow,
        appends: tuple[tuple[str, tuple[EventDraft, ...]], ...],
        skip_purged: bool,
    ) -> tuple[str, ...]: ...

    @abc.abstractmethod
    def _fact_rows(self, table: str, conversation_id: str) -> tuple[FactRow, ...]: ...
