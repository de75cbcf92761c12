"""The store interface: what a conformance run may call (``ledger.md``, ``archive.md``).

:class:`LedgerStore` is the whole interface a conformance run drives; it
assumes no particular database. :class:`ExtendedStore` adds the operations of
the projections, spills and search capabilities (PRJ, SPL, SRC). :class:`Page`
and :class:`ImportReport` are the values those operations return, and the
limits of one read and one append (LED-001, LED-007) are constants here.

The shared implementation is :class:`convledger.store_base.StoreBase`; the
checks of an append batch are in :mod:`convledger.batch`. :mod:`convledger.store`
re-exports every name of the three modules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft
from convledger.kinds import KindRegistry
from convledger.projections.definition import (
    Checkpoint,
    ProjectionDefinition,
    ProjectionStatus,
)
from convledger.runtime.operations import PurgeOutcome, RecoveryCursor, RecoveryPage
from convledger.runtime.records import Run
from convledger.runtime.state import Snapshot
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome
from convledger.search.operations import Hit
from convledger.spills.objects import Authorize, SpillMetadata

DEFAULT_READ_LIMIT = 1000
"""LED-007: the page size when the caller names none."""
MAX_READ_LIMIT = 10_000
"""LED-007: the largest page a caller may ask for."""
MAX_BATCH = 10_000
"""LED-001: the most drafts one append may carry."""


@attrs.frozen
class Page:
    """One bounded read (LED-008, LED-009).

    ``next_seq`` is the seq to read from next, present only when more events
    remain inside the requested window.
    """

    items: tuple[Envelope, ...]
    next_seq: int | None = None


@attrs.frozen
class ImportReport:
    """What an import wrote."""

    conversation_id: str
    events: int
    head_seq: int


@runtime_checkable
class LedgerStore(Protocol):
    """Every operation a conformance run may call; see the chapters for each."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        """The declared capabilities (CAP-001)."""
        ...

    @property
    def registry(self) -> KindRegistry:
        """The kinds this store lets producers append (KND-002)."""
        ...

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        """Append drafts at head+1.. atomically (LED-001 .. LED-006)."""
        ...

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = DEFAULT_READ_LIMIT,
    ) -> Page:
        """A bounded, ordered window of one ledger (LED-007 .. LED-011)."""
        ...

    def head(self, conversation_id: str) -> int:
        """The last seq of the conversation, 0 when it has none (LED-012)."""
        ...

    def export_conversation(self, conversation_id: str) -> bytes:
        """The canonical archive of one conversation (ARC-001, ARC-004)."""
        ...

    def import_conversation(self, archive: bytes) -> ImportReport:
        """Import an archive into an empty log, all or nothing (ARC-003 .. ARC-013)."""
        ...

    def reopen(self) -> LedgerStore:
        """Close this handle and open the same data again (capability persistence)."""
        ...

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

    def purge(self, conversation_id: str) -> PurgeOutcome:
        """Delete a conversation and refuse it forever (TRN-090 .. TRN-094)."""
        ...

    def close(self) -> None:
        """Release resources; the handle must not be used afterwards."""
        ...


@runtime_checkable
class ExtendedStore(LedgerStore, Protocol):
    """The operations of capabilities projections, spills and search (PRJ, SPL, SRC).

    Kept apart from :class:`LedgerStore` so that a store without these
    capabilities (one over the wire, say) still is a :class:`LedgerStore`;
    the conformance checks of these chapters use this protocol.
    """

    def import_conversation(
        self, archive: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        """Import an archive; ``projections`` check its checkpoints (PRJ-042, PRJ-043)."""
        ...

    def catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, *, max_events: int = ...
    ) -> Checkpoint:
        """Fold more events into the projection's checkpoint (PRJ-011)."""
        ...

    def load_checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None:
        """The stored checkpoint of one projection (PRJ-010)."""
        ...

    def projection_status(self, conversation_id: str, name: str) -> ProjectionStatus:
        """The checkpoint's uptoSeq beside the head (PRJ-014)."""
        ...

    def put_spill(
        self,
        conversation_id: str,
        data: bytes,
        *,
        media_type: str,
        operation: dict[str, JsonValue],
        reference: str,
        event_id: str,
        occurred_at: str,
    ) -> SpillMetadata:
        """Store a spill object and its ``spill/created`` event (SPL-001)."""
        ...

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Authorize) -> bytes:
        """The bytes of a spill, authorized again (SPL-020)."""
        ...

    def delete_spill(
        self,
        conversation_id: str,
        reference: str,
        *,
        reason: str = ...,
        event_id: str,
        occurred_at: str,
    ) -> Envelope:
        """Delete a spill object and append ``spill/deleted`` (SPL-030)."""
        ...

    def export_bundle(self, conversation_id: str) -> bytes:
        """The archive with the spill bytes, one CBOR file (SPL-050)."""
        ...

    def import_bundle(
        self, bundle: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        """Import a bundle, all or nothing (SPL-051 .. SPL-055)."""
        ...

    def search(
        self,
        requester: str,
        query: str,
        *,
        scope: Sequence[str] | None = None,
        limit: int = ...,
        authorize: Callable[[str], bool] | None = None,
    ) -> tuple[Hit, ...]:
        """Full-text search, default-denied across conversations (SRC-001)."""
        ...
