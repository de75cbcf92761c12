"""The ``projections`` companion of an archive (PRJ-040 .. PRJ-044).

An archive carries the conversation's checkpoints, ``[{name, version,
uptoSeq, state}, ...]`` by name in code-point order, present only when there
is at least one. A checkpoint cannot lie on import: its uptoSeq must be a seq
of the imported ledger and its state the fold of events 1..uptoSeq, which the
importer computes with the definition (built-in, or handed to the import by
its caller); a checkpoint it cannot compute is refused, not taken on trust.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from convledger import codec
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import IntegrityError, InvalidInputError, LedgerError
from convledger.kinds import KindRegistry
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.projections.fold import fold_upto

COMPANION = "projections"
_MEMBERS = frozenset({"name", "version", "uptoSeq", "state"})


def checkpoints_json(checkpoints: Sequence[Checkpoint]) -> list[JsonValue]:
    """PRJ-040: the companion value, by name in code-point order."""
    ordered = sorted(checkpoints, key=lambda c: c.name.encode("utf-8", "surrogatepass"))
    return [checkpoint.to_json() for checkpoint in ordered]


def parse_checkpoints(value: JsonValue) -> list[Checkpoint]:
    """PRJ-041: the checkpoints of a companion value, or ``invalid_input`` for its shape."""
    if not isinstance(value, list) or not value:
        raise _shape("the projections companion is a non-empty array")
    parsed: list[Checkpoint] = []
    for item in value:
        if not isinstance(item, dict) or set(item) != _MEMBERS:
            raise _shape("a checkpoint is exactly {name, version, uptoSeq, state}")
        name, version, upto = item["name"], item["version"], item["uptoSeq"]
        if not isinstance(name, str) or not name:
            raise _shape("a checkpoint name is a non-empty string")
        for number, low in ((version, 1), (upto, 1)):
            if isinstance(number, bool) or not isinstance(number, int) or number < low:
                raise _shape("version and uptoSeq are positive integers")
        assert isinstance(version, int) and isinstance(upto, int)
        parsed.append(Checkpoint(name, version, upto, item["state"]))
    if checkpoints_json(parsed) != value or len({c.name for c in parsed}) != len(parsed):
        raise _shape("checkpoint names are unique and in code-point order")
    return parsed


def projection_problems(
    events: Sequence[Envelope],
    companions: Mapping[str, JsonValue],
    registry: KindRegistry,
    definitions: Mapping[str, ProjectionDefinition] | None,
) -> list[LedgerError]:
    """Every reason the companion disagrees with the ledger (PRJ-041 .. PRJ-043).

    ``definitions`` None is a reader without the caller's code (``convledger
    verify``): it checks the built-ins and skips the rest. Otherwise every
    checkpoint needs its definition, built-in or given (PRJ-043).
    """
    if COMPANION not in companions:
        return []
    try:
        checkpoints = parse_checkpoints(companions[COMPANION])
    except InvalidInputError as error:
        return [error]
    head = events[-1].seq if events else 0
    from convledger.projections.builtins import BUILT_INS  # here: it imports jsonschema

    known = dict(BUILT_INS) if definitions is None else {**BUILT_INS, **definitions}
    problems: list[LedgerError] = []
    for checkpoint in checkpoints:
        if checkpoint.upto_seq > head:
            problems.append(IntegrityError(
                f"checkpoint {checkpoint.name!r} claims seq {checkpoint.upto_seq}, "
                f"the ledger ends at {head}",
                requirement="PRJ-042",
            ))
            continue
        definition = known.get(checkpoint.name)
        if definition is None or definition.version != checkpoint.version:
            if definitions is not None:
                problems.append(InvalidInputError(
                    f"no definition of {checkpoint.name!r} v{checkpoint.version} to check it by",
                    requirement="PRJ-043",
                    field="companions",
                ))
            continue
        problems.extend(_state_problems(definition, registry, events, checkpoint))
    return problems


def _state_problems(
    definition: ProjectionDefinition,
    registry: KindRegistry,
    events: Sequence[Envelope],
    checkpoint: Checkpoint,
) -> list[LedgerError]:
    try:
        folded = fold_upto(definition, registry, events, checkpoint.upto_seq)
        same = codec.encode(folded) == codec.encode(checkpoint.state)
    except LedgerError as error:
        return [IntegrityError(
            f"checkpoint {checkpoint.name!r} cannot be folded from its ledger: {error.message}",
            requirement="PRJ-042",
        )]
    if same:
        return []
    return [IntegrityError(
        f"checkpoint {checkpoint.name!r} differs from the fold of events 1..{checkpoint.upto_seq}",
        requirement="PRJ-042",
    )]


def _shape(message: str) -> InvalidInputError:
    return InvalidInputError(message, requirement="PRJ-041", field="companions")
