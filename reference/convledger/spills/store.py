"""Capability ``spills``: its protocol and abstract base (chapter ``spills.md``).

An implementer of capability ``spills`` reads :class:`SpillStore` (what a
conformance run calls) and, to build on the reference, :class:`SpillsBase`:
it checks the arguments (SPL-001 .. SPL-006), builds the ledger event, asks
the authorization callback on every read (SPL-020), checks the bytes it
returns against their sha256 (SPL-022) and encodes and decodes bundles
(SPL-050 .. SPL-055). The hooks:

==========================  =====================================================
hook                        contract
==========================  =====================================================
``_put_spill``              in ONE atomic step: refuse a purged conversation (TRN-110),
                            refuse a live reference (``duplicate``), append the
                            ``spill/created`` event (eventId unique) and store
                            the object with its seq
``_get_spill``              the metadata and the bytes of a live object of THIS
                            conversation, or None
``_delete_spill``           in ONE atomic step: refuse a purged conversation,
                            find the live object (else ``not_found``), append
                            the event the given function builds from its size,
                            delete the object
``_export_bundle_contents`` events, companions and live spill bytes of one
                            conversation, read in one snapshot (SPL-054)
==========================  =====================================================
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from convledger import limits
from convledger.archive import archive_of, encode_archive
from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft, check_identifier, check_occurred_at
from convledger.errors import IntegrityError, NotFoundError
from convledger.projections.definition import ProjectionDefinition
from convledger.spills.bundle import decode_bundle, encode_bundle
from convledger.spills.objects import (
    CREATED,
    DELETED,
    Authorize,
    SpillMetadata,
    check_authorize,
    check_data,
    check_media_type,
    check_operation,
    check_reason,
    check_reference,
    digest,
)
from convledger.spills.operations import SPILL_SCHEMA_VERSION, granted
from convledger.store_base import StoreBase
from convledger.store_interface import ImportReport, LedgerStore


@runtime_checkable
class SpillStore(LedgerStore, Protocol):
    """Capability ``spills``: binary objects beside the ledger, authorized on every read (SPL)."""

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


class SpillsBase(StoreBase):
    """Argument checks and authorization of the spill operations; the hooks store."""

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
        """SPL-001: store the object and its ``spill/created`` event in one atomic step."""
        self._require(Capability.SPILLS, "put_spill")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        body = check_data(data)
        metadata = SpillMetadata(
            reference=check_reference(reference),
            media_type=check_media_type(media_type),
            size=len(body),
            sha256=digest(body),
            created_seq=0,
            operation=check_operation(operation),
        )
        draft = EventDraft(
            event_id=check_identifier(event_id, "eventId", "ENV-004"),
            kind=CREATED,
            schema_version=SPILL_SCHEMA_VERSION,
            occurred_at=check_occurred_at(occurred_at),
            payload={
                "reference": metadata.reference,
                "bytes": metadata.size,
                "sha256": metadata.sha256,
                "mediaType": metadata.media_type,
            },
        )
        self._registry.check_payload(draft.kind, draft.schema_version, draft.payload)
        return self._put_spill(conversation_id, metadata, body, draft)

    def get_spill(self, conversation_id: str, reference: str, *, authorize: Authorize) -> bytes:
        """SPL-020 .. SPL-023: ask ``authorize`` again, then return the checked bytes."""
        self._require(Capability.SPILLS, "get_spill")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        check_reference(reference)
        callback = check_authorize(authorize)
        found = self._get_spill(conversation_id, reference)
        if found is None:
            raise NotFoundError(
                f"no spill {reference!r} in conversation {conversation_id!r}",
                requirement="SPL-021",
            )
        metadata, body = found
        granted(callback, metadata.descriptor)  # SPL-023: asked before the bytes are checked
        if len(body) != metadata.size or digest(body) != metadata.sha256:
            raise IntegrityError(
                f"spill {reference!r} does not match its recorded size and sha256",
                requirement="SPL-022",
            )
        return body

    def delete_spill(
        self,
        conversation_id: str,
        reference: str,
        *,
        reason: str = "deleted",
        event_id: str,
        occurred_at: str,
    ) -> Envelope:
        """SPL-030: delete the object and append ``spill/deleted`` in one atomic step."""
        self._require(Capability.SPILLS, "delete_spill")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        check_reference(reference)
        why = check_reason(reason)
        identity = check_identifier(event_id, "eventId", "ENV-004")
        at = check_occurred_at(occurred_at)

        def draft_for(size: int) -> EventDraft:
            return EventDraft(
                event_id=identity,
                kind=DELETED,
                schema_version=SPILL_SCHEMA_VERSION,
                occurred_at=at,
                payload={"reference": reference, "bytes": size, "reason": why},
            )

        return self._delete_spill(conversation_id, reference, draft_for)

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
        limits.check_archive(bundle, "bundle")  # LIM-006, before any decoding
        return self._import_checked(
            decode_bundle(bundle, self._registry, self._unjudged_companions()), projections
        )

    # -- hooks ------------------------------------------------------------------------------

    @abc.abstractmethod
    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata: ...

    @abc.abstractmethod
    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None: ...

    @abc.abstractmethod
    def _delete_spill(
        self, conversation_id: str, reference: str, draft_for: Callable[[int], EventDraft]
    ) -> Envelope: ...

    @abc.abstractmethod
    def _export_bundle_contents(
        self, conversation_id: str
    ) -> tuple[Sequence[Envelope], dict[str, JsonValue], dict[str, bytes]]:
        """Events, companions and spill bytes, read in one snapshot (SPL-054)."""
