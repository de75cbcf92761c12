"""Capabilities ``transitions`` and ``purge``: protocols and abstract bases (``transitions.md``).

An implementer of capability ``transitions`` reads :class:`TransitionStore`
(what a conformance run calls) and, to build on the reference,
:class:`TransitionsBase`: it checks everything that needs no stored state
(the declaration, the conversation id, the transition's fields, the event's
identity and time, the recorded payload against the kind registry) and calls
one hook per operation. Capability ``purge`` is apart (:class:`PurgeStore`,
:class:`PurgeBase`) because a store may keep runtime records without being
able to forget a conversation.

=======================  ======================================================
hook                     contract
=======================  ======================================================
``_transit``             in ONE atomic step: refuse a purged conversation,
                         decide with :func:`~convledger.runtime.rules.decide`
                         over the stored state and, when applied, compare-and-
                         swap the head, write the records and append the event
``_load_run``            one run of one conversation, or None
``_active_runs``         the conversation's active runs by ordinal
``_snapshot``            :class:`Snapshot` or None without a head
``_scan_recoverable``    up to ``limit`` owned runs after a cursor, in order
``_purge``               (:class:`PurgeBase`) delete and tombstone atomically;
                         True when newly purged
=======================  ======================================================

None of the read hooks may read the ledger (TRN-080).
"""

from __future__ import annotations

import abc
from typing import Protocol, runtime_checkable

from convledger import limits
from convledger.capabilities import Capability
from convledger.envelope import EventDraft, check_identifier, check_occurred_at
from convledger.errors import InvalidInputError, NotFoundError
from convledger.runtime.operations import (
    MAX_SCAN_LIMIT,
    TRANSITION_SCHEMA_VERSION,
    PurgeOutcome,
    RecoveryCursor,
    RecoveryPage,
)
from convledger.runtime.records import Run
from convledger.runtime.state import TRANSITION_KIND, Snapshot
from convledger.runtime.transitions import Transition, recorded_input, validate
from convledger.runtime.view import Outcome
from convledger.store_base import StoreBase
from convledger.store_interface import LedgerStore


@runtime_checkable
class TransitionStore(LedgerStore, Protocol):
    """Capability ``transitions``: the eight transitions and four bounded reads (TRN)."""

    def transition(
        self, conversation_id: str, transition: Transition, *, event_id: str, occurred_at: str
    ) -> Outcome:
        """Apply one runtime transition; an applied one appends its event (TRN-001 .. TRN-007)."""
        ...

    def load_run(self, conversation_id: str, run_id: str) -> Run | None:
        """One run of one conversation (TRN-080)."""
        ...

    def list_active_runs(self, conversation_id: str) -> tuple[Run, ...]:
        """The active runs in causal order (TRN-081)."""
        ...

    def load_snapshot(self, conversation_id: str) -> Snapshot:
        """Head, active runs and history (TRN-082)."""
        ...

    def scan_recoverable(
        self, *, after: RecoveryCursor | None = None, limit: int = 100
    ) -> RecoveryPage:
        """Owned runs of every conversation, keyset paged (TRN-083)."""
        ...


@runtime_checkable
class PurgeStore(LedgerStore, Protocol):
    """Capability ``purge``: forget a conversation and refuse it forever (TRN-090 .. TRN-094)."""

    def purge(self, conversation_id: str) -> PurgeOutcome:
        """Delete a conversation and leave a tombstone."""
        ...


class TransitionsBase(StoreBase):
    """Argument checks of the runtime operations; the hooks do the stored part."""

    # -- transitions (TRN-001 .. TRN-075) --------------------------------------------------

    def transition(
        self,
        conversation_id: str,
        transition: Transition,
        *,
        event_id: str,
        occurred_at: str,
    ) -> Outcome:
        """Apply one transition; an applied one appends its event atomically (TRN-002)."""
        self._require(Capability.TRANSITIONS, "transition")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        checked = validate(transition)
        # TRN-005: the event carries the caller's eventId and occurredAt, checked as chapter ENV.
        draft = EventDraft(
            event_id=check_identifier(event_id, "eventId", "ENV-004"),
            kind=TRANSITION_KIND,
            schema_version=TRANSITION_SCHEMA_VERSION,
            occurred_at=check_occurred_at(occurred_at),
            payload={"type": checked.type, "input": recorded_input(checked)},
        )
        # KND-003 through the codec seam: the compiled validator, or jsonschema for any payload
        # it does not accept (the same answer, tests/test_fast_validate.py), ~4x faster here.
        self._registry.check_appended_payload(draft.kind, draft.schema_version, draft.payload)
        return self._transit(conversation_id, checked, draft)

    # -- bounded operational reads (TRN-080 .. TRN-084) ---------------------------------------

    def load_run(self, conversation_id: str, run_id: str) -> Run | None:
        """TRN-080: the run of this conversation, never another conversation's."""
        self._require(Capability.TRANSITIONS, "load_run")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        check_identifier(run_id, "runId", "TRN-007")
        return self._load_run(conversation_id, run_id)

    def list_active_runs(self, conversation_id: str) -> tuple[Run, ...]:
        """TRN-081: the active runs in causal (ordinal) order."""
        self._require(Capability.TRANSITIONS, "list_active_runs")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        return tuple(self._active_runs(conversation_id))

    def load_snapshot(self, conversation_id: str) -> Snapshot:
        """TRN-082: head, active runs and history; not_found before the first transition."""
        self._require(Capability.TRANSITIONS, "load_snapshot")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        snapshot = self._snapshot(conversation_id)
        if snapshot is None:
            raise NotFoundError(
                f"conversation {conversation_id!r} has no runtime state", requirement="TRN-082"
            )
        return snapshot

    def scan_recoverable(
        self, *, after: RecoveryCursor | None = None, limit: int = 100
    ) -> RecoveryPage:
        """TRN-083: owned runs of every conversation, by (conversationId, ordinal), keyset paged."""
        self._require(Capability.TRANSITIONS, "scan_recoverable")
        if after is not None:
            if not isinstance(after, RecoveryCursor):
                raise InvalidInputError(
                    "after must be a RecoveryCursor", requirement="TRN-083", field="after"
                )
            check_identifier(after.conversation_id, "after.conversationId", "TRN-083")
            # LIM-007: an ordinal beyond +/-(2**53 - 1) is refused before any driver sees it
            limits.check_integer(
                after.ordinal, "after.ordinal", "TRN-083", minimum=-limits.MAX_INTEGER
            )
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_SCAN_LIMIT:
            raise InvalidInputError(
                f"limit must be an integer in 1..{MAX_SCAN_LIMIT}, got {limits.shown(limit)}",
                requirement="TRN-083",
                field="limit",
            )
        found = tuple(self._scan_recoverable(after, limit + 1))
        if len(found) > limit:  # TRN-084: next exactly when one more recoverable run follows
            return RecoveryPage(found[:limit], RecoveryCursor.after(found[limit - 1]))
        return RecoveryPage(found)

    # -- hooks -----------------------------------------------------------------------------------

    @abc.abstractmethod
    def _transit(
        self, conversation_id: str, transition: Transition, draft: EventDraft
    ) -> Outcome: ...

    @abc.abstractmethod
    def _load_run(self, conversation_id: str, run_id: str) -> Run | None: ...

    @abc.abstractmethod
    def _active_runs(self, conversation_id: str) -> list[Run]: ...

    @abc.abstractmethod
    def _snapshot(self, conversation_id: str) -> Snapshot | None: ...

    @abc.abstractmethod
    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]: ...


class PurgeBase(StoreBase):
    """The argument checks of ``purge``; the hook deletes and tombstones."""

    def purge(self, conversation_id: str) -> PurgeOutcome:
        """TRN-090: delete the conversation, refuse it forever; conflict while runs are active."""
        self._require(Capability.PURGE, "purge")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        newly = self._purge(conversation_id)
        return PurgeOutcome.PURGED if newly else PurgeOutcome.ALREADY_PURGED

    @abc.abstractmethod
    def _purge(self, conversation_id: str) -> bool: ...
