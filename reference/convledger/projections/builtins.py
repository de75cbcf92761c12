"""The built-in projections (PRJ-050 .. PRJ-052): a conversation summary and state slots.

Both understand every pair of the store's registry (``kinds`` None) and
change their state in place, which a fold may do with the state catch-up
hands it (a private copy, PRJ-033).
"""

from __future__ import annotations

from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.projections.definition import ProjectionDefinition

_TIME: dict[str, JsonValue] = {"type": ["string", "null"]}
_COUNT: dict[str, JsonValue] = {"type": "integer", "minimum": 0}

SUMMARY_SCHEMA: dict[str, JsonValue] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["byKind", "events", "firstOccurredAt", "head", "lastOccurredAt"],
    "properties": {
        "events": _COUNT,
        "byKind": {"type": "object", "additionalProperties": _COUNT},
        "firstOccurredAt": _TIME,
        "lastOccurredAt": _TIME,
        "head": _COUNT,
    },
    "additionalProperties": False,
}


def fold_summary(state: JsonValue, envelope: Envelope) -> JsonValue:
    """PRJ-051: count the event by kind; the first and last occurredAt as their text."""
    assert isinstance(state, dict)
    by_kind = state["byKind"]
    assert isinstance(by_kind, dict)
    count = by_kind.get(envelope.kind, 0)
    assert isinstance(count, int)
    by_kind[envelope.kind] = count + 1
    events = state["events"]
    assert isinstance(events, int)
    state["events"] = events + 1
    if state["firstOccurredAt"] is None:
        state["firstOccurredAt"] = envelope.occurred_at
    state["lastOccurredAt"] = envelope.occurred_at
    state["head"] = envelope.seq
    return state


SUMMARY = ProjectionDefinition(
    name="convledger.summary",
    version=1,
    state_schema=SUMMARY_SCHEMA,
    initial_state={
        "events": 0, "byKind": {}, "firstOccurredAt": None, "lastOccurredAt": None, "head": 0,
    },
    fold=fold_summary,
)
"""PRJ-051: ``{events, byKind, firstOccurredAt, lastOccurredAt, head}``."""

STATE_SLOTS_SCHEMA: dict[str, JsonValue] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "required": ["actor", "seq", "value", "version"],
        "properties": {
            "value": {},
            "version": {"type": "integer", "minimum": 1},
            "actor": {"type": "string"},
            "seq": {"type": "integer", "minimum": 1},
        },
        "additionalProperties": False,
    },
}


def fold_state_slots(state: JsonValue, envelope: Envelope) -> JsonValue:
    """PRJ-052: a ``state/set`` v1 replaces its slot; every other event leaves the state."""
    if envelope.kind != "state/set" or envelope.schema_version != 1:
        return state
    assert isinstance(state, dict)
    payload = envelope.payload
    assert isinstance(payload, dict)
    name = payload["name"]
    assert isinstance(name, str)
    state[name] = {
        "value": payload["value"],
        "version": payload["version"],
        "actor": payload["actor"],
        "seq": envelope.seq,
    }
    return state


STATE_SLOTS = ProjectionDefinition(
    name="convledger.state-slots",
    version=1,
    state_schema=STATE_SLOTS_SCHEMA,
    initial_state={},
    fold=fold_state_slots,
)
"""PRJ-052: ``{slotName: {value, version, actor, seq}}`` of the last ``state/set`` per name."""

BUILT_INS: dict[str, ProjectionDefinition] = {
    definition.name: definition for definition in (SUMMARY, STATE_SLOTS)
}
"""PRJ-050: the built-ins by name; import checks their checkpoints without being handed them."""
