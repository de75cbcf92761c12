"""The table of named folds (WIR-018): projection definitions whose fold is known by name.

The table is normative (chapter ``wire.md``, WIR-018): a server in any
language runs exactly these folds for these names. It lives in the reference,
which serves it over the wire, and the conformance suite builds its
definitions from it.

A fold is code, so a definition cannot travel to a store in another process
as it is: over the wire it travels as its data (name, version, state schema,
initial state, kinds) with its fold **by name** (chapter ``wire.md``,
WIR-018). Every definition the PRJ checks and the projection state machine
hand a store is built here, with a :class:`NamedFold`, so that an
out-of-process store runs exactly the checks an in-process one does.

==============================  ==============================================
fold name                       fold
==============================  ==============================================
``convledger.summary``          the built-in summary (PRJ-051)
``convledger.state-slots``      the built-in state slots (PRJ-052)
``conformance.count``           ``{count, seqs}``: appends ``seq * version``
``conformance.fails-raises``    sets ``count`` for seqs 1-2, then raises
``conformance.fails-set``       sets ``count`` for seqs 1-2, then returns a set
``conformance.fails-schema``    sets ``count`` for seqs 1-2, then breaks the schema
==============================  ==============================================

A fold receives the definition's ``version`` besides the state and the
envelope, so one named fold serves every version (the state machine bumps
versions without bound). The names and their behaviour are stable: a
server in another language implements each of them (WIR-018).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import attrs

from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.projections.builtins import STATE_SLOTS, SUMMARY
from convledger.projections.definition import ProjectionDefinition

FoldCode = Callable[[JsonValue, Envelope, int], JsonValue]
"""A named fold: ``(state, envelope, version) -> state``."""

COUNT: Final = "conformance.count"
"""The fold of :func:`counting`."""


def _count(state: JsonValue, envelope: Envelope, version: int) -> JsonValue:
    assert isinstance(state, dict)
    seqs = state["seqs"]
    assert isinstance(seqs, list)
    return {"count": len(seqs) + 1, "seqs": [*seqs, envelope.seq * version]}


def _failing(kind: str) -> FoldCode:
    def fold(state: JsonValue, envelope: Envelope, version: int) -> JsonValue:
        if envelope.seq < 3:
            assert isinstance(state, dict)
            state["count"] = envelope.seq  # in place: catch-up hands the fold a copy (PRJ-003)
            return state
        if kind == "raises":
            raise RuntimeError("fold broke")
        if kind == "set":
            return {1, 2}  # type: ignore[return-value]
        return {"count": "not an integer", "seqs": []}

    return fold


def _detour(state: JsonValue, envelope: Envelope, version: int) -> JsonValue:
    """PRJ-054: at seq 2 a state the schema rejects, replaced by a valid one at seq 3."""
    if envelope.seq == 2:
        return {"count": "not an integer", "seqs": []}
    return {"count": envelope.seq, "seqs": [envelope.seq * version]}


FOLDS: Final[dict[str, FoldCode]] = {
    SUMMARY.name: lambda state, envelope, _: SUMMARY.fold(state, envelope),
    STATE_SLOTS.name: lambda state, envelope, _: STATE_SLOTS.fold(state, envelope),
    COUNT: _count,
    "conformance.fails-raises": _failing("raises"),
    "conformance.fails-set": _failing("set"),
    "conformance.fails-schema": _failing("schema"),
    "conformance.detour": _detour,
}
"""WIR-018: every named fold, by name."""

FAILURES: Final = ("raises", "set", "schema")
"""The kinds of :func:`failing` folds (PRJ-033)."""


@attrs.frozen
class NamedFold:
    """The fold ``FOLDS[name]`` of a definition of ``version`` (WIR-018)."""

    name: str
    version: int

    def __call__(self, state: JsonValue, envelope: Envelope) -> JsonValue:
        """Fold one envelope."""
        return FOLDS[self.name](state, envelope, self.version)


def resolve(name: object, version: object) -> NamedFold | None:
    """The fold a wire definition names, or None when no fold has that name (WIR-018)."""
    if not isinstance(name, str) or name not in FOLDS:
        return None
    return NamedFold(name, version)  # type: ignore[arg-type]  # the definition checks version


def fold_name(definition: ProjectionDefinition) -> str | None:
    """The name of a definition's fold, or None when it has none (a fold that cannot travel)."""
    fold: object = definition.fold
    if isinstance(fold, NamedFold):
        return fold.name
    if fold is SUMMARY.fold:
        return SUMMARY.name
    if fold is STATE_SLOTS.fold:
        return STATE_SLOTS.name
    return None


def counting(
    name: str = "conformance.count", version: int = 1,
    kinds: frozenset[tuple[str, int]] | None = None,
) -> ProjectionDefinition:
    """A projection whose state is ``{count, seqs}``: it records ``seq * version`` per fold."""
    schema: dict[str, JsonValue] = {
        "type": "object",
        "required": ["count", "seqs"],
        "properties": {"count": {"type": "integer"}, "seqs": {"type": "array"}},
    }
    return ProjectionDefinition(
        name=name, version=version, state_schema=schema,
        initial_state={"count": 0, "seqs": []}, fold=NamedFold(COUNT, version), kinds=kinds,
    )


def failing(kind: str) -> ProjectionDefinition:
    """A counting projection named ``fails-KIND`` whose fold fails from seq 3 on (PRJ-033)."""
    return attrs.evolve(
        counting(name=f"fails-{kind}"), fold=NamedFold(f"conformance.fails-{kind}", 1)
    )
