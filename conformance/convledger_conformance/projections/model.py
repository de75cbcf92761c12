"""The model of chapter PRJ: folds computed by the check itself, from what the store reads.

A check never trusts the store's fold: it reads the events with the ledger
API and folds them here, so a store whose checkpoint runs ahead, skips an
event or keeps an old version's state disagrees with this model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.projections.definition import ProjectionDefinition
from convledger.projections.named import counting as counting
from convledger.store import LedgerStore
from convledger_conformance.ledger.model import read_whole

__all__ = ["counting", "expected_state", "ledger", "loose"]


def loose(value: object) -> Any:
    """A value passed where the API wants another type, to prove it is refused."""
    return value


def expected_state(
    definition: ProjectionDefinition, events: Sequence[Envelope], upto_seq: int, store: LedgerStore
) -> bytes:
    """The canonical bytes of the fold of events 1..``upto_seq`` (PRJ-012, PRJ-030)."""
    state = canonical.decode(canonical.encode(definition.initial_state))
    for envelope in events:
        if envelope.seq > upto_seq:
            break
        pair = (envelope.kind, envelope.schema_version)
        known = (
            store.registry.knows(*pair) if definition.kinds is None else pair in definition.kinds
        )
        if known:
            state = definition.fold(cast(JsonValue, state), envelope)
    return canonical.encode(state)


def ledger(store: LedgerStore, conversation_id: str) -> list[Envelope]:
    """Every envelope of one conversation, by the ledger API."""
    return list(read_whole(store, conversation_id))
