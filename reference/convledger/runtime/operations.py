"""The store operations of capability ``transitions`` and ``purge`` (chapter ``transitions.md``).

:class:`RuntimeOperations` is mixed into :class:`convledger.store.StoreBase`.
It checks everything that needs no stored state (the capability, the
conversation id, the transition's fields, the event's identity and time, the
recorded payload against the kind registry) and then calls one primitive per
operation. A store that declares the capability implements the primitives;
one that does not inherits the CAP-002 refusals.

=======================  ======================================================
primitive                contract
=======================  ======================================================
``_transit``             in ONE atomic step: refuse a purged conversation,
                         decide with :func:`~convledger.runtime.rules.decide`
                         over the stored state and, when applied, compare-and-
                         swap the head, write the records and append the event
``_load_run``            one run of one conversation, or None
``_active_runs``         the conversation's active runs by ordinal
``_snapshot``            :class:`Snapshot` or None without a head
``_scan_recoverable``    up to ``limit`` owned runs after a cursor, in order
``_purge``               delete and tombstone atomically; True when newly purged
=======================  ======================================================

None of the read primitives may read the ledger (TRN-080).
"""

from __future__ import annotations

import enum

import attrs

from convledger.capabilities import Capability, not_supported
from convledger.envelope import EventDraft, check_identifier, check_occurred_at
from convledger.errors import InvalidInputError, NotFoundError
from convledger.kinds import KindRegistry
from convledger.runtime.records import Run
from convledger.runtime.state import TRANSITION_KIND, Snapshot
from convledger.runtime.transitions import Transition, recorded_input, validate
from convledger.runtime.view import Outcome

TRANSITION_SCHEMA_VERSION = 1
MAX_SCAN_LIMIT = 1000
"""TRN-083: the largest page ``scan_recoverable`` serves."""


class PurgeOutcome(enum.Enum):
    """What ``purge`` answers (TRN-090, TRN-091)."""

    PURGED = "purged"
    ALREADY_PURGED = "already_purged"


@attrs.frozen(order=True)
class RecoveryCursor:
    """A keyset position: the last (conversationId, ordinal) a page returned (TRN-083).

    Conversations are ordered by the code points of their ids (which is the
    order of their UTF-8 bytes), never by a locale collation (TRN-083, TRN-085).
    """

    conversation_id: str
    ordinal: int

    @classmethod
    def after(cls, run: Run) -> RecoveryCursor:
        """The cursor just past ``run``."""
        return cls(run.conversation_id, run.ordinal)


@attrs.frozen
class RecoveryPage:
    """One page of ``scan_recoverable``; ``next`` is present exactly when more remain."""

    runs: tuple[Run, ...]
    next: RecoveryCursor | None = None


class RuntimeOperations:
    """Argument checks of the runtime operations; the primitives do the stored part."""

    declared: frozenset[Capability]

    _registry: KindRegistry  # set by StoreBase

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
        self._registry.check_payload(draft.kind, draft.schema_version, draft.payload)
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
            if isinstance(after.ordinal, bool) or not isinstance(after.ordinal, int):
                raise InvalidInputError(
                    "after.ordinal must be an integer", requirement="TRN-083", field="after"
                )
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_SCAN_LIMIT:
            raise InvalidInputError(
                f"limit must be an integer in 1..{MAX_SCAN_LIMIT}, got {limit!r}",
                requirement="TRN-083",
                field="limit",
            )
        found = tuple(self._scan_recoverable(after, limit + 1))
        if len(found) > limit:  # TRN-084: next exactly when one more recoverable run follows
            return RecoveryPage(found[:limit], RecoveryCursor.after(found[limit - 1]))
        return RecoveryPage(found)

    # -- purge (TRN-090 .. TRN-094) ---------------------------------------------------------------

    def purge(self, conversation_id: str) -> PurgeOutcome:
        """TRN-090: delete the conversation, refuse it forever; conflict while runs are active."""
        self._require(Capability.PURGE, "purge")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        newly = self._purge(conversation_id)
        return PurgeOutcome.PURGED if newly else PurgeOutcome.ALREADY_PURGED

    # -- primitives ------------------------------------------------------------------------------

    def _transit(self, conversation_id: str, transition: Transition, draft: EventDraft) -> Outcome:
        raise NotImplementedError

    def _load_run(self, conversation_id: str, run_id: str) -> Run | None:
        raise NotImplementedError

    def _active_runs(self, conversation_id: str) -> list[Run]:
        raise NotImplementedError

    def _snapshot(self, conversation_id: str) -> Snapshot | None:
        raise NotImplementedError

    def _scan_recoverable(self, after: RecoveryCursor | None, limit: int) -> list[Run]:
        raise NotImplementedError

    def _purge(self, conversation_id: str) -> bool:
        raise NotImplementedError

    def _require(self, capability: Capability, operation: str) -> None:
        """CAP-002: refuse an operation whose capability the store does not declare."""
        if capability not in self.declared:
            raise not_supported(capability, operation)


def recovery_order(run: Run) -> tuple[bytes, int]:
    """TRN-083, TRN-085: code-point order of conversation ids (their UTF-8 bytes), then ordinal."""
    return run.conversation_id.encode("utf-8", "surrogatepass"), run.ordinal


def after_cursor(run: Run, cursor: RecoveryCursor | None) -> bool:
    """True when ``run`` comes strictly after ``cursor`` in recovery order."""
    if cursor is None:
        return True
    key = (cursor.conversation_id.encode("utf-8", "surrogatepass"), cursor.ordinal)
    return recovery_order(run) > key


__all__ = [
    "MAX_SCAN_LIMIT",
    "PurgeOutcome",
    "RecoveryCursor",
    "RecoveryPage",
    "RuntimeOperations",
    "after_cursor",
    "recovery_order",
]
