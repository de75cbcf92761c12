"""The store operations of capability ``projections`` (chapter ``projections.md``).

:class:`ProjectionOperations` is mixed into :class:`convledger.store.StoreBase`.
It checks the arguments (PRJ-001, PRJ-011) and calls one primitive per
operation:

======================  =========================================================
primitive               contract
======================  =========================================================
``_catch_up``           in ONE atomic step: refuse a purged conversation, read the
                        stored checkpoint and the head, call
                        :func:`~convledger.projections.fold.advance` with a reader
                        of the same step, and store its result only forward
                        (PRJ-011 .. PRJ-013); return the stored checkpoint
``_load_checkpoint``    the stored checkpoint of one name, or None
``_projection_status``  the stored checkpoint and the head, read atomically
======================  =========================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convledger.capabilities import Capability
from convledger.envelope import check_identifier
from convledger.errors import InvalidInputError
from convledger.projections.definition import (
    Checkpoint,
    ProjectionDefinition,
    ProjectionStatus,
    check_definition,
    check_name,
)
from convledger.projections.fold import DEFAULT_MAX_EVENTS, MAX_EVENTS


class ProjectionOperations:
    """Argument checks of the projection operations; the primitives do the stored part."""

    if TYPE_CHECKING:

        def _require(self, capability: Capability, operation: str) -> None: ...

    def catch_up(
        self,
        conversation_id: str,
        definition: ProjectionDefinition,
        *,
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> Checkpoint:
        """PRJ-011: fold at most ``max_events`` more events and store the checkpoint."""
        self._require(Capability.PROJECTIONS, "catch_up")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        check_definition(definition)
        if (
            isinstance(max_events, bool)
            or not isinstance(max_events, int)
            or not 1 <= max_events <= MAX_EVENTS
        ):
            raise InvalidInputError(
                f"max_events must be an integer in 1..{MAX_EVENTS}, got {max_events!r}",
                requirement="PRJ-011",
                field="max_events",
            )
        return self._catch_up(conversation_id, definition, max_events)

    def load_checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None:
        """PRJ-010: the stored checkpoint of projection ``name``, or None."""
        self._require(Capability.PROJECTIONS, "load_checkpoint")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        return self._load_checkpoint(conversation_id, check_name(name))

    def projection_status(self, conversation_id: str, name: str) -> ProjectionStatus:
        """PRJ-014: the checkpoint's uptoSeq and version beside the head, read together."""
        self._require(Capability.PROJECTIONS, "projection_status")
        check_identifier(conversation_id, "conversationId", "ENV-005")
        stored, head = self._projection_status(conversation_id, check_name(name))
        if stored is None:
            return ProjectionStatus(upto_seq=0, head=head, version=None)
        return ProjectionStatus(upto_seq=stored.upto_seq, head=head, version=stored.version)

    # -- primitives ------------------------------------------------------------------------------

    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint:
        raise NotImplementedError

    def _load_checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None:
        raise NotImplementedError

    def _projection_status(
        self, conversation_id: str, name: str
    ) -> tuple[Checkpoint | None, int]:
        raise NotImplementedError


def should_store(stored: Checkpoint | None, result: Checkpoint) -> bool:
    """PRJ-012, PRJ-015: store a result that moved; never a checkpoint at uptoSeq 0."""
    return result is not stored and result.upto_seq > 0
