"""Values on the wire of projections, spills and search (``wire.md``, WIR-016 .. WIR-018).

The operations of capabilities projections, spills and search: spill metadata and
byte strings (WIR-016), search hits (WIR-017), and projection definitions,
checkpoints and statuses (WIR-018); a definition's fold travels by name. The
JSON values and the reply checks they use are in
:mod:`convledger.wire.ledger_values`; :mod:`convledger.wire.values` re-exports
every name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from convledger.projections.definition import Checkpoint as ProjectionCheckpoint
from convledger.projections.definition import ProjectionDefinition, ProjectionStatus
from convledger.search.operations import Hit
from convledger.spills.objects import SpillMetadata
from convledger.wire.ledger_values import ReplyError, reply_list, reply_map, value_out

# -- spills and search (WIR-016, WIR-017) -----------------------------------------------------


def metadata_out(metadata: SpillMetadata) -> dict[str, Any]:
    """A spill's metadata as its SPL-040 companion entry (WIR-016)."""
    return {key: value_out(item) for key, item in metadata.to_json().items()}


def metadata_in(value: object) -> SpillMetadata:
    """The metadata ``putSpill`` answered."""
    fields = reply_map(value, "spill metadata")
    try:
        return SpillMetadata(
            reference=fields["reference"],
            media_type=fields["mediaType"],
            size=fields["bytes"],
            sha256=fields["sha256"],
            created_seq=fields["createdSeq"],
            operation=fields["operation"],
        )
    except KeyError as missing:
        raise ReplyError(f"spill metadata lacks {missing}") from None


def bytes_in(value: object, what: str) -> bytes:
    """A byte string of a reply (WIR-016)."""
    if not isinstance(value, bytes):
        raise ReplyError(f"{what} answered a {type(value).__name__}, not a byte string")
    return value


def hit_out(hit: Hit) -> dict[str, Any]:
    """``{conversationId, seq, occurredAt, snippet}`` (WIR-017)."""
    return {
        "conversationId": value_out(hit.conversation_id),
        "seq": hit.seq,
        "occurredAt": value_out(hit.occurred_at),
        "snippet": value_out(hit.snippet),
    }


def hits_in(value: object) -> tuple[Hit, ...]:
    """The hits of a search."""
    found: list[Hit] = []
    for item in reply_list(value, "hits"):
        fields = reply_map(item, "hit")
        if set(fields) != {"conversationId", "seq", "occurredAt", "snippet"}:
            raise ReplyError(f"a hit has the members {sorted(fields)}")
        found.append(
            Hit(fields["conversationId"], fields["seq"], fields["occurredAt"], fields["snippet"])
        )
    return tuple(found)


# -- projections (WIR-018) --------------------------------------------------------------------

DEFINITION_MEMBERS = frozenset(
    {"name", "version", "stateSchema", "initialState", "fold", "kinds"}
)
"""WIR-018: the members of a definition on the wire."""


def definition_out(definition: object, fold: str | None) -> Any:
    """``{name, version, stateSchema, initialState, fold, kinds}`` with the fold's name (WIR-018).

    ``fold`` is the name of the definition's fold (None for a fold that is not
    callable: it travels as null and the store refuses it). Anything that is
    not a :class:`ProjectionDefinition` travels as its CBOR image, and is refused.
    """
    if not isinstance(definition, ProjectionDefinition):
        return value_out(definition)
    kinds: object = definition.kinds
    if isinstance(kinds, frozenset) and all(
        isinstance(pair, tuple) and len(pair) == 2 for pair in kinds
    ):
        kinds = sorted([list(pair) for pair in kinds], key=repr)
    return {
        "name": value_out(definition.name),
        "version": value_out(definition.version),
        "stateSchema": value_out(definition.state_schema),
        "initialState": value_out(definition.initial_state),
        "fold": fold,
        "kinds": value_out(kinds),
    }


def definition_in(value: object, resolve: Callable[[object, object], object]) -> object:
    """The definition a request names, its fold resolved by name; anything else as it came.

    Built with the constructor, so a malformed one is refused with kind
    ``invalid_input`` (PRJ-001, PRJ-002); an unknown fold name resolves to
    None, which is not callable and refused the same way (WIR-018).
    """
    if not isinstance(value, dict) or set(value) != DEFINITION_MEMBERS:
        return value
    kinds = value["kinds"]
    if isinstance(kinds, list) and all(
        isinstance(pair, list) and len(pair) == 2 for pair in kinds
    ):
        # an unhashable member stays a list: refused by the definition's own check
        with contextlib.suppress(TypeError):
            kinds = frozenset(tuple(pair) for pair in kinds)
    # PRJ-004: the fold by its name; an unknown name is refused with invalid_input.
    return ProjectionDefinition(
        name=value["name"],
        version=value["version"],
        state_schema=value["stateSchema"],
        initial_state=value["initialState"],
        fold=resolve(value["fold"], value["version"]),  # type: ignore[arg-type]
        kinds=kinds,
    )


def checkpoint_out(checkpoint: ProjectionCheckpoint | None) -> Any:
    """``{name, version, uptoSeq, state}`` or null (WIR-018)."""
    return None if checkpoint is None else value_out(checkpoint.to_json())


def checkpoint_in(value: object) -> ProjectionCheckpoint | None:
    """A checkpoint or None."""
    if value is None:
        return None
    fields = reply_map(value, "checkpoint")
    if set(fields) != {"name", "version", "uptoSeq", "state"}:
        raise ReplyError(f"a checkpoint has the members {sorted(fields)}")
    return ProjectionCheckpoint(
        fields["name"], fields["version"], fields["uptoSeq"], fields["state"]
    )


def status_out(status: ProjectionStatus) -> dict[str, Any]:
    """``{uptoSeq, head, version}``, version null without a checkpoint (WIR-018)."""
    return {"uptoSeq": status.upto_seq, "head": status.head, "version": status.version}


def status_in(value: object) -> ProjectionStatus:
    """A projection status."""
    fields = reply_map(value, "projection status")
    if set(fields) != {"uptoSeq", "head", "version"}:
        raise ReplyError(f"a projection status has the members {sorted(fields)}")
    return ProjectionStatus(fields["uptoSeq"], fields["head"], fields["version"])
