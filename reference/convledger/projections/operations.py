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

from convledger.projections.definition import (
    Checkpoint,
)


def should_store(stored: Checkpoint | None, result: Checkpoint) -> bool:
    """PRJ-012, PRJ-015: store a result that moved; never a checkpoint at uptoSeq 0."""
    return result is not stored and result.upto_seq > 0
