"""The rules of capability ``projections`` that need no store (chapter ``projections.md``).

:func:`should_store`: a checkpoint is stored only when it moved, never at
uptoSeq 0 (PRJ-012, PRJ-015). :func:`catch_up_rows`: the steps of one catch-up
inside a store's write transaction, the same for every engine; each store
passes its own statements (``sqlite/companions.py``, ``postgres/companions.py``).
The protocol and the abstract base of the capability are in
:mod:`convledger.projections.store`.
"""

from __future__ import annotations

from collections.abc import Callable

from convledger.kinds import KindRegistry
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.fold import Reader, advance


def should_store(stored: Checkpoint | None, result: Checkpoint) -> bool:
    """PRJ-012, PRJ-015: store a result that moved; never a checkpoint at uptoSeq 0."""
    return result is not stored and result.upto_seq > 0


def catch_up_rows(
    definition: ProjectionDefinition,
    registry: KindRegistry,
    max_events: int,
    *,
    load: Callable[[str], Checkpoint | None],
    head: Callable[[], int],
    read: Reader,
    write: Callable[[Checkpoint | None, Checkpoint], None],
    probe: Callable[[str], None],
) -> Checkpoint:
    """PRJ-011 .. PRJ-013: read the checkpoint and the head, fold, write over the row read.

    Every callable runs in the caller's one write transaction, which holds
    the conversation's write lock (SQL-060, PGS-061); ``write`` gets the
    checkpoint as read (None: no row) so that it writes over that row only.
    """
    stored = load(definition.name)
    result = advance(definition, registry, stored, read, head(), max_events)
    if not should_store(stored, result):
        return result if stored is None else stored
    write(stored, result)
    probe("checkpoint")
    return result
