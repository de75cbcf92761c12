"""The rule of capability ``projections`` that needs no store (chapter ``projections.md``).

:func:`should_store`: a checkpoint is stored only when it moved, never at
uptoSeq 0 (PRJ-012, PRJ-015). The protocol and the abstract base of the
capability are in :mod:`convledger.projections.store`.
"""

from __future__ import annotations

from convledger.projections.definition import (
    Checkpoint,
)


def should_store(stored: Checkpoint | None, result: Checkpoint) -> bool:
    """PRJ-012, PRJ-015: store a result that moved; never a checkpoint at uptoSeq 0."""
    return result is not stored and result.upto_seq > 0
