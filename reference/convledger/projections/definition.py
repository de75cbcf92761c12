"""What a projection is (chapter ``projections.md``, PRJ-001 .. PRJ-003).

A projection is caller code: a name, a version, a JSON Schema of its state, an
initial state and a deterministic fold. The store keeps only its checkpoint,
``{name, version, uptoSeq, state}`` per conversation, and never runs a fold
it was not handed by the caller of ``catch_up`` (its code lives with the
caller, so a store in another language can serve it too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import attrs

from convledger import codec
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, check_identifier, check_positive_integer
from convledger.errors import CanonicalJsonError, InvalidInputError
from convledger.patterns import ecma_validator

if TYPE_CHECKING:
    import jsonschema  # imported where a state schema is compiled or checked

Fold = Callable[[JsonValue, Envelope], JsonValue]
"""``fold(state, envelope) -> state``: may change ``state`` in place, must return the new one."""

MAX_NAME_CHARS = 200  # PRJ-001, LIM-013: code points (len of a str), never UTF-16 units
"""PRJ-001: the longest projection name, in characters."""


def _validate_name(_: object, __: attrs.Attribute[str], value: str) -> None:
    check_name(value)


def _validate_version(_: object, __: attrs.Attribute[int], value: int) -> None:
    check_positive_integer(value, "version", "PRJ-001")


@attrs.frozen
class ProjectionDefinition:
    """A projection, as its caller declares it (PRJ-001).

    ``kinds`` names the ``(kind, schemaVersion)`` pairs the fold understands;
    None means every pair the store's kind registry knows (PRJ-031).
    """

    name: str = attrs.field(validator=_validate_name)
    version: int = attrs.field(validator=_validate_version)
    state_schema: JsonValue = attrs.field(eq=False)
    initial_state: JsonValue = attrs.field(eq=False)
    fold: Fold = attrs.field(eq=False)
    kinds: frozenset[tuple[str, int]] | None = attrs.field(default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        check_definition(self)


@attrs.frozen
class Checkpoint:
    """The stored progress of one projection over one conversation (PRJ-010)."""

    name: str
    version: int
    upto_seq: int
    state: JsonValue = attrs.field(eq=False)

    def to_json(self) -> dict[str, JsonValue]:
        """The wire object ``{name, version, uptoSeq, state}`` (PRJ-040)."""
        return {
            "name": self.name,
            "version": self.version,
            "uptoSeq": self.upto_seq,
            "state": self.state,
        }

    def state_bytes(self) -> bytes:
        """The canonical JSON of the state, how checkpoints are compared (PRJ-012)."""
        return codec.encode(self.state)


@attrs.frozen
class ProjectionStatus:
    """The honest lag of a projection (PRJ-014): its checkpoint against the ledger head."""

    upto_seq: int
    head: int
    version: int | None

    @property
    def lag(self) -> int:
        """How many events the checkpoint has not folded yet."""
        return self.head - self.upto_seq


def check_name(value: object) -> str:
    """PRJ-001: a non-empty string of scalar values, at most :data:`MAX_NAME_CHARS` long."""
    name = check_identifier(value, "name", "PRJ-001")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInputError(
            f"a projection name has at most {MAX_NAME_CHARS} characters",
            requirement="PRJ-001",
            field="name",
        )
    return name


def check_definition(definition: object) -> ProjectionDefinition:
    """PRJ-001, PRJ-002: every rule a definition must meet before any store reads it."""
    if not isinstance(definition, ProjectionDefinition):
        raise InvalidInputError(
            "a projection is a ProjectionDefinition", requirement="PRJ-001", field="definition"
        )
    check_name(definition.name)
    check_positive_integer(definition.version, "version", "PRJ-001")
    if not callable(definition.fold):
        raise InvalidInputError("fold must be callable", requirement="PRJ-001", field="fold")
    _check_kinds(definition.kinds)
    validator = state_validator(definition.state_schema)
    check_state(validator, definition.initial_state, "initial_state", "PRJ-002")
    return definition


def _check_kinds(kinds: object) -> None:
    if kinds is None:
        return
    if not isinstance(kinds, frozenset) or not all(
        isinstance(pair, tuple)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and pair[0]
        and not isinstance(pair[1], bool)
        and isinstance(pair[1], int)
        and pair[1] >= 1
        for pair in kinds
    ):
        raise InvalidInputError(
            "kinds is None or a frozenset of (kind, schemaVersion) pairs",
            requirement="PRJ-001",
            field="kinds",
        )


_VALIDATORS: dict[bytes, jsonschema.protocols.Validator] = {}


def state_validator(schema: object) -> jsonschema.protocols.Validator:
    """PRJ-002: the compiled Draft 2020-12 validator of a state schema (cached by its bytes)."""
    if not isinstance(schema, dict):
        raise InvalidInputError(
            "state_schema must be a JSON Schema object", requirement="PRJ-002",
            field="state_schema",
        )
    try:
        key = codec.encode(schema)
    except CanonicalJsonError as error:
        raise InvalidInputError(
            f"state_schema is not JSON: {error.message}", requirement="PRJ-002",
            field="state_schema",
        ) from error
    found = _VALIDATORS.get(key)
    if found is None:
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            raise InvalidInputError(
                f"state_schema is not a valid JSON Schema: {error.message}",
                requirement="PRJ-002",
                field="state_schema",
            ) from error
        found = _VALIDATORS[key] = ecma_validator()(schema)  # KND-005's patterns
    return found


def check_state(
    validator: jsonschema.protocols.Validator, state: object, field: str, requirement: str
) -> bytes:
    """The canonical bytes of ``state``, refused unless it is JSON its schema accepts."""
    try:
        encoded = codec.encode(state)
    except CanonicalJsonError as error:
        raise InvalidInputError(
            f"{field} is not canonical JSON: {error.message}", requirement=requirement,
            field=field,
        ) from error
    import jsonschema.exceptions

    problem = jsonschema.exceptions.best_match(validator.iter_errors(cast(Any, state)))
    if problem is not None:
        raise InvalidInputError(
            f"{field} breaks its state schema: {problem.message}", requirement=requirement,
            field=field,
        )
    return encoded
