"""The store operations of capability ``spills`` (chapter ``spills.md``).

:class:`SpillOperations` is mixed into :class:`convledger.store.StoreBase`.
It checks the arguments (SPL-001 .. SPL-006), builds the ledger event, asks
the authorization callback on every read (SPL-020) and checks the bytes it
returns against their sha256 (SPL-022). The primitives:

=================  ==============================================================
primitive          contract
=================  ==============================================================
``_put_spill``     in ONE atomic step: refuse a purged conversation, refuse a
                   live reference (``duplicate``), append the ``spill/created``
                   event (eventId unique) and store the object with its seq
``_get_spill``     the metadata and the bytes of a live object of THIS
                   conversation, or None
``_delete_spill``  in ONE atomic step: refuse a purged conversation, find the
                   live object (else ``not_found``), append the event the
                   given function builds from its size, delete the object
=================  ==============================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.envelope import Envelope, EventDraft, check_identifier, check_occurred_at
from convledger.errors import IntegrityError, NotFoundError, UnauthorizedError
from convledger.kinds import KindRegistry
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

SPILL_SCHEMA_VERSION = 1


class SpillOperations:
    """Argument checks and authorization of the spill operations."""

    _registry: KindRegistry  # set by StoreBase

    if TYPE_CHECKING:

        def _require(self, capability: Capability, operation: str) -> None: ...

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

    # -- primitives ------------------------------------------------------------------------------

    def _put_spill(
        self, conversation_id: str, metadata: SpillMetadata, data: bytes, draft: EventDraft
    ) -> SpillMetadata:
        raise NotImplementedError

    def _get_spill(
        self, conversation_id: str, reference: str
    ) -> tuple[SpillMetadata, bytes] | None:
        raise NotImplementedError

    def _delete_spill(
        self, conversation_id: str, reference: str, draft_for: Callable[[int], EventDraft]
    ) -> Envelope:
        raise NotImplementedError


def granted(authorize: Authorize, descriptor: JsonValue) -> None:
    """SPL-020: only the literal True grants; a denial or a raising callback is unauthorized.

    The callback receives a copy of the descriptor, so it cannot change what
    the store keeps.
    """
    copy = canonical.decode(canonical.encode(descriptor))
    try:
        answer = authorize(copy)  # type: ignore[arg-type]
    except Exception as error:
        raise UnauthorizedError(
            f"the authorization callback raised {error!r}", requirement="SPL-020"
        ) from error
    if answer is not True:
        raise UnauthorizedError(
            "the authorization callback denied the spill", requirement="SPL-020"
        )


def not_live(conversation_id: str, reference: str) -> NotFoundError:
    """SPL-021, SPL-031: no live object of that reference in that conversation."""
    return NotFoundError(
        f"no spill {reference!r} in conversation {conversation_id!r}", requirement="SPL-021"
    )
