"""How the wire store turns arguments into request values and replies into results (WIR).

For :class:`~convledger_conformance.wire.store.WireStore`: projection
definitions with their fold by name (WIR-018), ``authorize`` as a
flag and a callback (WIR-030), arguments of operations the protocol does not
carry (WIR-007), values without a CBOR image refused as ``invalid_input``
(WIR-011), and replies that do not decode (a protocol error, WIR-009).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from convledger.errors import InvalidInputError
from convledger.projections.definition import ProjectionDefinition
from convledger.projections.named import fold_name
from convledger.store import Capability
from convledger.wire import values
from convledger_conformance.wire.connection import WireProtocolError

T = TypeVar("T")


def _refuse_unencodable(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return call()
    except values.Unencodable as error:
        raise InvalidInputError(f"{error}", requirement="WIR-011") from None


def _definition_out(definition: object) -> Any:
    """WIR-018: a definition with its fold by name; a callable fold without one cannot travel."""
    if not isinstance(definition, ProjectionDefinition):
        return values.value_out(definition)
    name = fold_name(definition)
    if name is None and callable(definition.fold):
        raise InvalidInputError(
            "a definition whose fold has no name cannot travel (WIR-018)",
            requirement="WIR-018", field="fold",
        )
    return values.definition_out(definition, name)


def _projections_out(projections: object) -> dict[str, Any]:
    """``projections``: absent when empty, else each definition as :func:`_definition_out`."""
    if isinstance(projections, (list, tuple)):
        if not projections:
            return {}
        return {"projections": [_definition_out(item) for item in projections]}
    return {"projections": values.value_out(projections)}


def _authorize_out(authorize: object) -> dict[str, Any]:
    """WIR-030: ``authorize`` is true for a callable, false for another value, absent for None."""
    if authorize is None:
        return {}
    return {"authorize": callable(authorize)}


def _callback(authorize: object) -> Callable[[Any], object] | None:
    """The callable the server may call back, if the caller gave one."""
    return authorize if callable(authorize) else None


def _best_effort(value: object) -> Any:
    """The CBOR image of an argument of an operation the protocol does not carry, or null.

    Such a request is answered ``not_supported`` whatever its arguments (WIR-007),
    so a value without an image (a callback, a definition object) travels as null.
    """
    try:
        return values.value_out(value)
    except values.Unencodable:
        return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _reply(decode: Callable[[object], T], value: object) -> T:
    try:
        return decode(value)
    except values.ReplyError as error:
        raise WireProtocolError(f"{error}") from None


def _capabilities(value: object) -> frozenset[Capability]:
    if not isinstance(value, list):
        raise WireProtocolError(f"a declaration is an array of names, got {value!r}")
    try:
        return frozenset(Capability(name) for name in value)
    except ValueError as error:
        raise WireProtocolError(f"an unknown capability in {value!r}: {error}") from None
