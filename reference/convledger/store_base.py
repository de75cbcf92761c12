"""What every reference store shares: :class:`StoreBase` (``ledger.md``, ``archive.md``).

:class:`StoreBase` holds everything that does not depend on storage (argument
checks, paging, archive encoding and decoding), so each concrete store
implements only a handful of primitives that must be atomic:

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

Capabilities are declared, never detected (CAP-001). :class:`StoreBase` is the
base of capability ``ledger`` alone; each further capability has its own
abstract base beside its chapter's code (``TransitionsBase`` and
``PurgeBase`` in :mod:`convledger.runtime.store`, ``ProjectionsBase``,
``SpillsBase``, ``SearchBase``, ``FactRowsBase``), each holding only that
capability's hooks: a store subclasses the bases of the capabilities it
implements and declares them. Every operation of the capability table
(:data:`convledger.capabilities.OPERATIONS`) that a store does not implement
answers :class:`NotSupportedError` (CAP-002): :class:`StoreBase` carries one
refusal per such operation, made from the table, and the capability bases
refuse their operations too while the store does not declare them.

Also here: :func:`companions_of`, which the concrete stores use to build an
archive's companions member, and the check of the projection definitions an
import is given (PRJ-043). The checks of one append batch, which need no
store, are in :mod:`convledger.batch`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NoReturn

from convledger import limits
from convledger.archive import Archive, archive_of, decode_archive, encode_archive
from convledger.batch import check_count, checked_batch
from convledger.canonical import JsonValue
from convledger.capabilities import Capability, not_supported, optional_operations
from convledger.envelope import Envelope, EventDraft, check_identifier
from convledger.errors import InvalidInputError, NotFoundError
from convledger.kinds import KindRegistry, default_registry
from convledger.projections import companion as projection_companion
from convledger.projections.companion import projection_problems
from convledger.projections.definition import Checkpoint, ProjectionDefinition, check_definition
from convledger.runtime.companion import COMPANION
from convledger.spills import companion as spill_companion
from convledger.spills.objects import SpillMetadata
from convledger.store_interface import (
    DEFAULT_READ_LIMIT,
    MAX_READ_LIMIT,
    ImportReport,
    Page,
)


class StoreBase(abc.ABC):
    """Capability ``ledger``: argument checks, paging and archives shared by every store."""

    declared: frozenset[Capability] = frozenset({Capability.LEDGER})

    declared_limits: Mapping[str, int] = MappingProxyType({})
    """LIM-010: limits this store raises above chapter LIM's values (none for the reference)."""

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
        :func:`convledger.batch._detached`): plain decoded JSON that no caller holds (LED-014).
        A payload is data: nothing it asserts (the ``sha256`` of a ``provider/message``,
        PRV-021) keys anything the store shares between events or conversations (LED-022).
        """
        # TRN-108 and the order of refusals (ERR-010) are validated_batch's, shared by every path.
        batch = checked_batch(self._registry, conversation_id, drafts, expected_head)
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
        check_count(from_seq, "from_seq", "LED-010", minimum=1)
        if to_seq is not None:
            check_count(to_seq, "to_seq", "LED-010", minimum=1)
            if to_seq < from_seq:
                raise InvalidInputError(
                    # WIR-049: never the decimal text of an integer of more than 64 bits
                    f"to_seq {limits.shown(to_seq)} is before from_seq {limits.shown(from_seq)}",
                    requirement="LED-010",
                    field="to_seq",
                )
        check_count(limit, "limit", "LED-010", minimum=1, maximum=MAX_READ_LIMIT)
        found = self._read(conversation_id, from_seq, to_seq, limit + 1)
        if len(found) > limit:
            return Page(tuple(found[:limit]), next_seq=found[limit - 1].seq + 1)
        return Page(tuple(found))

    def head(self, conversation_id: str) -> int:
        """LED-012: the last seq, 0 for a conversation without events."""
        check_identifier(conversation_id, "conversationId", "ENV-005")  # LED-020, before any read
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

        The order of the refusals is ERR-011's: the bytes, another
        formatVersion, the content in document order (decode_archive), SPL-042,
        the capabilities of the companions, the definitions, and only then the
        store's state in ``_import`` (purged, conflict, duplicate).

        ``projections`` are the definitions of the archive's checkpoints that
        are not built in; a checkpoint is imported only when its fold over the
        imported events gives its state (PRJ-042, PRJ-043). An archive with
        spill metadata needs its bytes: it is imported as a bundle only (SPL-042).
        """
        limits.check_archive(archive, "archive")  # LIM-006, before any decoding
        decoded = decode_archive(archive, self._registry, self._unjudged_companions())
        if spill_companion.COMPANION in decoded.companions:
            raise InvalidInputError(
                "an archive with spill objects is imported as a bundle (import_bundle)",
                requirement="SPL-042",
                field="companions",
            )
        return self._import_checked(decoded, projections)

    def _unjudged_companions(self) -> frozenset[str]:
        """ERR-012: the companions whose capability this store does not declare."""
        return frozenset(
            name for name, capability in (
                (COMPANION, Capability.TRANSITIONS),
                (projection_companion.COMPANION, Capability.PROJECTIONS),
                (spill_companion.COMPANION, Capability.SPILLS),
            ) if capability not in self.declared
        )

    def _import_checked(
        self, decoded: Archive, projections: Sequence[ProjectionDefinition]
    ) -> ImportReport:
        """The checks that need the store (capabilities, definitions), then ``_import``."""
        if COMPANION in decoded.companions and Capability.TRANSITIONS not in self.declared:
            # TRN-109: a runtime companion needs capability transitions.
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
        # ARC-017: events is the count of the archive's events, ignorable ones included.
        return ImportReport(
            conversation_id=decoded.conversation_id,
            events=len(decoded.events),
            head_seq=decoded.events[-1].seq,
        )

    def close(self) -> None:  # noqa: B027 - a store with nothing to release keeps this
        """Release resources; the default store has none."""

    def _require(self, capability: Capability, operation: str) -> None:
        """CAP-002: refuse an operation whose capability this store does not declare.

        ERR-007: every operation calls this first, then checks its arguments
        alone, and only then reads the stored state.
        """
        if capability not in self.capabilities:
            raise not_supported(capability, operation)

    # -- primitives each store implements atomically -----------------------------

    # LED-002, LED-003, LED-004, LED-005: see the contract of ``_append`` in the module docstring.
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
    """PRJ-043, PRJ-055: the caller's definitions for an import, by name (names unique)."""
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


def _refusal(capability: Capability, method: str) -> Callable[..., NoReturn]:
    """CAP-002: the operation of a capability a store does not implement."""

    def refuse(self: StoreBase, *args: object, **kwargs: object) -> NoReturn:
        raise not_supported(capability, method)

    refuse.__name__ = refuse.__qualname__ = method
    refuse.__doc__ = (
        f"CAP-002: {method} needs capability {capability.value!r}, which this store"
        " does not implement; it is refused with not_supported."
    )
    return refuse


for _capability, _operation in optional_operations():
    if not hasattr(StoreBase, _operation.method):
        setattr(StoreBase, _operation.method, _refusal(_capability, _operation.method))

