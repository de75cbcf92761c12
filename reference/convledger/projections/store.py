"""Capability ``projections``: its protocol and abstract base (chapter ``projections.md``).

An implementer of capability ``projections`` reads :class:`ProjectionStore`
(what a conformance run calls) and, to build on the reference,
:class:`ProjectionsBase`: it checks the arguments (PRJ-001, PRJ-011) and calls
one hook per operation.

======================  =========================================================
hook                    contract
======================  =========================================================
``_catch_up``           in ONE atomic step: refuse a purged conversation, read the
                        stored checkpoint and the head, call
                        :func:`~convledger.projections.fold.advance` with a reader
                        of the same step, and store its result only forward
                        (PRJ-011 .. PRJ-013); return the stored checkpoint
``_load_checkpoint``    the stored checkpoint of one name, or None
``_projection_status``  the stored checkpoint and the head, read atomically
======================  =========================================================

An import of an archive with a ``projections`` companion needs this
capability; the definitions of its checkpoints that are not built in are
given to ``import_conversation`` (PRJ-042, PRJ-043), which
:class:`~convledger.store_base.StoreBase` serves.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from convledger import limits
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
from convledger.store_base import StoreBase
from convledger.store_interface import ImportReport, LedgerStore


@runtime_checkable
class ProjectionStore(LedgerStore, Protocol):
    """Capability ``projections``: honest checkpoints of named folds (PRJ)."""

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


class ProjectionsBase(StoreBase):
    """Argument checks of the projection operations; the hooks do the stored part."""

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
                f"max_events must be an integer in 1..{MAX_EVENTS}, got {limits.shown(max_events)}",
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

    # -- hooks ------------------------------------------------------------------------------

    @abc.abstractmethod
    def _catch_up(
        self, conversation_id: str, definition: ProjectionDefinition, max_events: int
    ) -> Checkpoint: ...

    @abc.abstractmethod
    def _load_checkpoint(self, conversation_id: str, name: str) -> Checkpoint | None: ...

    @abc.abstractmethod
    def _projection_status(
        self, conversation_id: str, name: str
    ) -> tuple[Checkpoint | None, int]: ...
