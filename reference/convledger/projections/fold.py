"""Folding a ledger into a checkpoint (PRJ-010 .. PRJ-033).

:func:`advance` is the whole catch-up, written once for every store: it
starts from the stored checkpoint (or from the initial state when there is
none, or when the stored one has another version, PRJ-020), reads bounded
pages from ``uptoSeq + 1`` through the ``read`` function the store gives it
(a read inside the store's own atomic step, PRJ-011), passes each envelope
through the projection's replay gate (PRJ-030 .. PRJ-032) and folds it. It
writes nothing: the store stores the result in the same atomic step, only
forward (PRJ-012, PRJ-013).

The gate of a projection, by the pair ``(kind, schemaVersion)``:

=============================  ===========  =====================================
the fold understands the pair  ignorable    what catch-up does
=============================  ===========  =====================================
yes                            any          folds it
no                             true         skips it (uptoSeq still passes it)
no                             absent       refuses: ``replay_refused``, nothing
                                            written
=============================  ===========  =====================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import cast

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import InvalidInputError, LedgerError, ReplayRefusedError
from convledger.kinds import KindRegistry
from convledger.projections.definition import (
    Checkpoint,
    ProjectionDefinition,
    check_state,
    state_validator,
)

PAGE = 1000
"""How many events catch-up reads per page (PRJ-011)."""
DEFAULT_MAX_EVENTS = 10_000
"""PRJ-011: how many events one catch-up folds when the caller names no bound."""
MAX_EVENTS = 1_000_000
"""PRJ-011: the most events one catch-up may fold."""

Reader = Callable[[int, int], Sequence[Envelope]]
"""``read(from_seq, limit)``: up to ``limit`` envelopes from ``from_seq``, in seq order."""


def understands(
    definition: ProjectionDefinition, registry: KindRegistry, envelope: Envelope
) -> bool:
    """PRJ-030 .. PRJ-032: True to fold, False to skip; raise to refuse."""
    pair = (envelope.kind, envelope.schema_version)
    known = registry.knows(*pair) if definition.kinds is None else pair in definition.kinds
    if known:
        return True
    if envelope.ignorable:
        return False
    raise ReplayRefusedError(
        f"projection {definition.name!r} v{definition.version} cannot fold {envelope.kind!r} "
        f"schemaVersion {envelope.schema_version} at seq {envelope.seq}: unknown to it and "
        "not ignorable",
        requirement="PRJ-031",
        conversation_id=envelope.conversation_id,
        seq=envelope.seq,
        event_id=envelope.event_id,
        schema_version=envelope.schema_version,
        event_kind=envelope.kind,
    )


def starting_point(definition: ProjectionDefinition, stored: Checkpoint | None) -> Checkpoint:
    """PRJ-020: the stored checkpoint of this version, else the initial state at uptoSeq 0."""
    if stored is not None and stored.version == definition.version:
        return stored
    return Checkpoint(definition.name, definition.version, 0, fresh(definition.initial_state))


def fresh(state: JsonValue) -> JsonValue:
    """A copy of ``state`` that shares nothing with it (folds may change state in place)."""
    # PRJ-003: catch-up hands a fold this private copy, never a state anyone else holds.
    return cast(JsonValue, canonical.decode(canonical.encode(state)))


def fold_events(
    definition: ProjectionDefinition,
    registry: KindRegistry,
    state: JsonValue,
    events: Iterable[Envelope],
) -> JsonValue:
    """Fold ``events`` into ``state`` through the gate (PRJ-030); a failing fold is PRJ-033."""
    fold = definition.fold
    for envelope in events:
        if not understands(definition, registry, envelope):
            continue
        try:
            state = fold(state, envelope)
        except LedgerError:
            raise
        except Exception as error:
            raise InvalidInputError(
                f"the fold of {definition.name!r} failed at seq {envelope.seq}: {error!r}",
                requirement="PRJ-033",
                field="fold",
            ) from error
    return state


def advance(
    definition: ProjectionDefinition,
    registry: KindRegistry,
    stored: Checkpoint | None,
    read: Reader,
    head: int,
    max_events: int,
) -> Checkpoint:
    """The checkpoint after folding at most ``max_events`` events past ``stored`` (PRJ-011).

    ``head`` is the conversation's head read in the same atomic step as
    ``read``. The result never claims a seq beyond ``head`` (PRJ-013), and its
    state is checked against the schema (PRJ-033) before the store writes it.
    """
    start = starting_point(definition, stored)
    target = min(head, start.upto_seq + max_events)  # PRJ-053: skipped events count too
    state, upto = start.state, start.upto_seq
    while upto < target:
        page = read(upto + 1, min(PAGE, target - upto))
        if not page:
            break
        state = fold_events(definition, registry, state, page)
        upto = page[-1].seq
    if upto == start.upto_seq and start is stored:
        return start
    check_state(state_validator(definition.state_schema), state, "state", "PRJ-033")
    return Checkpoint(definition.name, definition.version, upto, state)


def fold_upto(
    definition: ProjectionDefinition,
    registry: KindRegistry,
    events: Sequence[Envelope],
    upto_seq: int,
) -> JsonValue:
    """PRJ-012, PRJ-042: the state a fresh fold of events 1..``upto_seq`` gives."""
    state = fresh(definition.initial_state)
    return fold_events(
        definition, registry, state, (e for e in events if e.seq <= upto_seq)
    )
