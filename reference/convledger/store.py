"""The store interface (chapters ``ledger.md``, ``archive.md``, ``capabilities.md``).

Theory of operation
-------------------
A store is the ledger plus, optionally, the capabilities of later chapters.
:class:`LedgerStore` is the whole interface a conformance run drives; it
assumes no particular database. :class:`StoreBase` holds everything that does
not depend on storage (argument checks, paging, archive encoding and
decoding), so each concrete store implements only a handful of primitives that
must be atomic:

=====================  =====================================================
primitive              contract
=====================  =====================================================
``_append``            assign seq head+1.. to the drafts and persist them, all
                       or nothing, after checking ``expected_head`` and global
                       eventId uniqueness inside the same atomic step
``_read``              up to ``limit`` envelopes of one conversation in
                       ``[from_seq, to_seq]``, in seq order
``_head``              the last seq of a conversation, 0 when it has none
``_snapshot_events``   every envelope of one conversation, read atomically
``_import``            write an archive's envelopes as they are, all or
                       nothing, into an empty log with no eventId collision
=====================  =====================================================

Capabilities are declared, never detected (CAP-001). An operation of a
capability the store does not declare raises :class:`NotSupportedError`
(CAP-002); :class:`StoreBase` does that by default for every optional
operation, so a store opts in by declaring the capability and overriding the
operation.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from convledger.archive import Archive, archive_of, decode_archive, encode_archive
from convledger.canonical import JsonValue
from convledger.capabilities import Capability as Capability
from convledger.capabilities import not_supported as not_supported
from convledger.envelope import Envelope, EventDraft, check_identifier, validate_draft_fields
from convledger.errors import (
    CanonicalJsonError,
    DuplicateError,
    InvalidInputError,
    NotFoundError,
)
from convledger.fast import canonical as fast_canonical
from convledger.fast.decode import decode_stored
from convledger.host.rows import FactRowOperations
from convledger.kinds import KindRegistry, default_registry
from convledger.projections import companion as projection_companion
from convledger.projections.companion import projection_problems
from convledger.projections.definition import (
    Checkpoint,
    ProjectionDefinition,
    ProjectionStatus,
    check_definition,
)
from convledger.projections.operations import ProjectionOperations
from convledger.runtime.companion import COMPANION
from convledger.runtime.operations import (
    PurgeOutcome,
    RecoveryCursor,
    RecoveryPage,
    RuntimeOperations,
)
from convledger.runtime.records import Run
from convledger.runtime.state import RUNTIME_KINDS, Snapshot
from convledger.runtime.transitions import Transition
from convledger.runtime.view import Outcome
from convledger.search.operations import Hit, SearchOperations
from convledger.spills import companion as spill_companion
from convledger.spills.bundle import decode_bundle, encode_bundle
from convledger.spills.objects import Authorize, SpillMetadata
from convledger.spills.operations import SpillOperations

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



class StoreBase(
    RuntimeOperations, ProjectionOperations, SpillOperations, SearchOperations,
    FactRowOperations, abc.ABC
):
    """Argument checks, paging and archives shared by every reference store."""

    declared: frozenset[Capability] = frozenset({Capability.LEDGER})

    def __init__(self, *, registry: KindRegistry | None = None) -> None:
        self._registry = registry if registry is not None else default_registry()

    @property
    def capabilities(self) -> frozenset[Capability]:
        """The declared capabilities (CAP-001)."""
        return self.declared

    @property
    def registry(self) -> KindRegistry:
        """The kinds producers may append (KND-002)."""
        return self._registry

    # -- ledger core ---------------------------------------------------------

    def append(
        self,
        conversation_id: str,
        drafts: Sequence[EventDraft],
        *,
        expected_head: int | None = None,
    ) -> tuple[Envelope, ...]:
        """Validate everything that needs no stored state, then call :meth:`_append`.

        :meth:`_append` receives the drafts with detached payloads (see
        :func:`_detached`): plain decoded JSON that no caller holds (LED-014).
        """
        batch = validated_batch(self._registry, conversation_id, drafts, expected_head)
        for draft in batch:
            if draft.kind in RUNTIME_KINDS:
                raise InvalidInputError(
                    f"{draft.kind} is written by migration and transitions only, never appended",
                    requirement="TRN-108",
                    field="kind",
                )
        return self._append(conversation_id, batch, expected_head)

    def read(
        self,
        conversation_id: str,
        *,
        from_seq: int = 1,
        to_seq: int | None = None,
        limit: int = DEFAULT_READ_LIMIT,
    ) -> Page:
        """LED-007 .. LED-011: validate the window, fetch limit + 1, derive the cursor."""
        check_identifier(conversation_id, "conversationId", "ENV-005")
        _check_count(from_seq, "from_seq", "LED-010", minimum=1)
        if to_seq is not None:
            _check_count(to_seq, "to_seq", "LED-010", minimum=1)
            if to_seq < from_seq:
                raise InvalidInputError(
                    f"to_seq {to_seq} is before from_seq {from_seq}",
                    requirement="LED-010",
                    field="to_seq",
                )
        _check_count(limit, "limit", "LED-010", minimum=1, maximum=MAX_READ_LIMIT)
        found = self._read(conversation_id, from_seq, to_seq, limit + 1)
        if len(found) > limit:
            return Page(tuple(found[:limit]), next_seq=found[limit - 1].seq + 1)
        return Page(tuple(found))

    def head(self, conversation_id: str) -> int:
        """LED-012: the last seq, 0 for a conversation without events."""
        check_identifier(conversation_id, "conversationId", "ENV-005")
        return self._head(conversation_id)

    def export_conversation(self, conversation_id: str) -> bytes:
        """ARC-001: the canonical archive, read in one atomic snapshot (ARC-014)."""
        check_identifier(conversation_id, "conversationId", "ENV-005")
        events, companions = self._export_contents(conversation_id)
        if not events:
            raise NotFoundError(
                f"conversation {conversation_id!r} has no events to export",
                requirement="ARC-005",
            )
        return encode_archive(archive_of(conversation_id, events, companions))

    def import_conversation(
        self, archive: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        """ARC-003 .. ARC-013: decode and check, then write all or nothing.

        ``projections`` are the definitions of the archive's checkpoints that
        are not built in; a checkpoint is imported only when its fold over the
        imported events gives its state (PRJ-042, PRJ-043). An archive with
        spill metadata needs its bytes: it is imported as a bundle only (SPL-042).
        """
        decoded = decode_archive(archive, self._registry)
        if spill_companion.COMPANION in decoded.companions:
            raise InvalidInputError(
                "an archive with spill objects is imported as a bundle (import_bundle)",
                requirement="SPL-042",
                field="companions",
            )
        return self._import_checked(decoded, projections)

    def export_bundle(self, conversation_id: str) -> bytes:
        """SPL-050: the archive and the bytes of its live spills, read in one snapshot."""
        self._require(Capability.SPILLS, "export_bundle")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        events, companions, objects = self._export_bundle_contents(conversation_id)
        if not events:
            raise NotFoundError(
                f"conversation {conversation_id!r} has no events to export",
                requirement="ARC-005",
            )
        archive = encode_archive(archive_of(conversation_id, events, companions))
        return encode_bundle(archive, objects)

    def import_bundle(
        self, bundle: bytes, *, projections: Sequence[ProjectionDefinition] = ()
    ) -> ImportReport:
        """SPL-051 .. SPL-055: decode, check every object, write all or nothing."""
        self._require(Capability.SPILLS, "import_bundle")
        return self._import_checked(decode_bundle(bundle, self._registry), projections)

    def _import_checked(
        self, decoded: Archive, projections: Sequence[ProjectionDefinition]
    ) -> ImportReport:
        """The checks that need the store (capabilities, definitions), then ``_import``."""
        if COMPANION in decoded.companions and Capability.TRANSITIONS not in self.declared:
            raise not_supported(Capability.TRANSITIONS, "import of a runtime companion")
        if projection_companion.COMPANION in decoded.companions:
            self._require(Capability.PROJECTIONS, "import of a projections companion")
        if spill_companion.COMPANION in decoded.companions:
            self._require(Capability.SPILLS, "import of a spills companion")
        definitions = _definitions(projections)
        problems = projection_problems(
            decoded.events, decoded.companions, self._registry, definitions
        )
        if problems:
            raise problems[0]
        self._import(decoded)
        return ImportReport(
            conversation_id=decoded.conversation_id,
            events=len(decoded.events),
            head_seq=decoded.events[-1].seq,
        )

    def reopen(self) -> LedgerStore:
        """CAP-002: a store that does not persist refuses to reopen."""
        raise not_supported(Capability.PERSISTENCE, "reopen")

    def close(self) -> None:
        """Release resources; the default store has none."""

    # -- primitives each store implements atomically -----------------------------

    @abc.abstractmethod
    def _append(
        self, conversation_id: str, drafts: tuple[EventDraft, ...], expected_head: int | None
    ) -> tuple[Envelope, ...]: ...

    @abc.abstractmethod
    def _read(
        self, conversation_id: str, from_seq: int, to_seq: int | None, limit: int
    ) -> Sequence[Envelope]: ...

    @abc.abstractmethod
    def _head(self, conversation_id: str) -> int: ...

    @abc.abstractmethod
    def _snapshot_events(self, conversation_id: str) -> Sequence[Envelope]: ...

    @abc.abstractmethod
    def _import(self, archive: Archive) -> None:
        """Write the events and, when present, the ``runtime`` companion's records (TRN-105)."""

    def _export_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue]]:
        """The events and the companions of one conversation, read atomically (ARC-014).

        The ledger core has no companions; a store with runtime state
        overrides this to read both in one snapshot.
        """
        return self._snapshot_events(conversation_id), {}

    def _export_bundle_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue], dict[str, bytes]]:
        """Events, companions and spill bytes, read in one snapshot (SPL-054)."""
        raise NotImplementedError


def companions_of(
    runtime: dict[str, JsonValue],
    checkpoints: Sequence[Checkpoint],
    spills: Sequence[SpillMetadata],
) -> dict[str, JsonValue]:
    """TRN-103, PRJ-040, SPL-040: the companions member; each present only when non-empty."""
    companions = dict(runtime)
    if checkpoints:
        companions[projection_companion.COMPANION] = projection_companion.checkpoints_json(
            checkpoints
        )
    if spills:
        companions[spill_companion.COMPANION] = spill_companion.spills_json(spills)
    return companions


def _definitions(projections: object) -> dict[str, ProjectionDefinition]:
    """PRJ-043: the caller's definitions for an import, by name (names unique)."""
    if isinstance(projections, (str, bytes)) or not isinstance(projections, Sequence):
        raise InvalidInputError(
            "projections is a sequence of ProjectionDefinition", requirement="PRJ-043",
            field="projections",
        )
    found: dict[str, ProjectionDefinition] = {}
    for definition in projections:
        checked = check_definition(definition)
        if checked.name in found:
            raise InvalidInputError(
                f"projection {checked.name!r} is given twice", requirement="PRJ-043",
                field="projections",
            )
        found[checked.name] = checked
    return found


def validated_batch(
    registry: KindRegistry,
    conversation_id: object,
    drafts: object,
    expected_head: object,
) -> tuple[EventDraft, ...]:
    """Every check of an append that needs no stored state (LED-001, LED-003, LED-005, LED-006).

    Returns the drafts with payloads detached from the caller's objects. Every
    append path of every store calls this, so they cannot disagree.
    """
    check_identifier(conversation_id, "conversationId", "ENV-005")
    # _detached encodes each payload once; that encoding is also its ENV-009 check.
    batch = tuple(_detached(validate_draft_fields(draft)) for draft in _as_batch(drafts))
    for draft in batch:
        registry.check_payload(draft.kind, draft.schema_version, draft.payload)
    _refuse_repeated_ids(batch)
    if expected_head is not None:
        _check_count(expected_head, "expected_head", "LED-005", minimum=0)
    return batch


def _as_batch(drafts: object) -> tuple[EventDraft, ...]:
    if isinstance(drafts, (str, bytes)) or not isinstance(drafts, Sequence):
        raise InvalidInputError("drafts must be a sequence of EventDraft", requirement="LED-001")
    if not 1 <= len(drafts) <= MAX_BATCH:
        raise InvalidInputError(
            f"an append carries 1 to {MAX_BATCH} drafts, got {len(drafts)}",
            requirement="LED-001",
            field="drafts",
        )
    return tuple(drafts)


def _detached(draft: EventDraft) -> EventDraft:
    """The draft with its payload read back from its canonical bytes (ENV-009, LED-014).

    The copy shares no object with the caller, so later mutations cannot reach
    the ledger, and it holds only the types a decoder yields (``dict``,
    ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``): the kind's
    schema then judges exactly the value a later read returns (a tuple or a
    read-only mapping is a JSON array or object too), and a payload this
    implementation could not decode again is refused before it is stored.
    """
    try:
        # decode_stored reads canonical text exactly as canonical.decode does (proven in
        # tests/test_fast_decode.py), and the encoder just wrote canonical text.
        payload = decode_stored(fast_canonical.encode(draft.payload).decode("utf-8"))
    except CanonicalJsonError as error:
        raise InvalidInputError(
            f"payload is not canonical JSON or cannot be read back: {error.message}",
            requirement="ENV-009",
            field="payload",
        ) from error
    return attrs.evolve(draft, payload=payload)


def _refuse_repeated_ids(batch: tuple[EventDraft, ...]) -> None:
    seen: set[str] = set()
    for draft in batch:
        if draft.event_id in seen:
            raise DuplicateError(
                f"eventId {draft.event_id!r} appears twice in one batch",
                requirement="LED-003",
                identity=draft.event_id,
            )
        seen.add(draft.event_id)


def _check_count(
    value: object, field: str, requirement: str, *, minimum: int, maximum: int | None = None
) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            f"{field} must be an integer, got {value!r}", requirement=requirement, field=field
        )
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise InvalidInputError(
            f"{field} must be {bounds}, got {value}", requirement=requirement, field=field
        )
    return value

