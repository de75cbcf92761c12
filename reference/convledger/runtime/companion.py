"""The ``runtime`` companion of an archive (TRN-103 .. TRN-106).

An archive carries a conversation's operational state beside its ledger, so an
import restores runs, admissions and history (including draft bodies, which
the ledger never records) and keeps answering every idempotency key. The
companion cannot lie: import rebuilds the state from the archive's own events
and refuses a companion that differs from that rebuild, or whose draft bodies
do not hash to their recorded summaries (integrity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import IntegrityError, InvalidInputError, LedgerError
from convledger.runtime.state import (
    RUNTIME_KINDS,
    RuntimeState,
    comparable,
    draft_problems,
    rebuild,
)

COMPANION = "runtime"


def has_runtime_events(events: Sequence[Envelope]) -> bool:
    """TRN-103: True when the ledger holds a baseline or a transition."""
    return any(envelope.kind in RUNTIME_KINDS for envelope in events)


def companion_problems(
    conversation_id: str, events: Sequence[Envelope], companions: Mapping[str, JsonValue]
) -> list[LedgerError]:
    """Every reason the ``runtime`` companion disagrees with the ledger (TRN-103, TRN-104)."""
    present = COMPANION in companions
    if present != has_runtime_events(events):
        return [InvalidInputError(
            "an archive has a runtime companion exactly when its ledger has runtime events",
            requirement="TRN-104",
            field="companions",
        )]
    if not present:
        return []
    try:
        stored = RuntimeState.from_json(conversation_id, companions[COMPANION])
    except IntegrityError as error:  # a record breaking TRN-011, TRN-014, TRN-015: TRN-111
        return [InvalidInputError(
            f"the runtime companion is not of the shape of TRN-103: {error.message}",
            requirement="TRN-104",
            field="companions",
        )]
    if canonical.encode(stored.to_json()) != canonical.encode(companions[COMPANION]):
        # exactly the four members, each list in its stored order (TRN-103), so that a
        # re-export gives the imported bytes (TRN-106)
        return [InvalidInputError(
            "the runtime companion has other members or lists out of their order (TRN-103)",
            requirement="TRN-104",
            field="companions",
        )]
    try:
        rebuilt = rebuild(conversation_id, events)
    except IntegrityError as error:
        return [error]
    problems: list[LedgerError] = []
    if canonical.encode(comparable(stored)) != canonical.encode(comparable(rebuilt)):
        problems.append(IntegrityError(
            "the runtime companion differs from the state its ledger rebuilds",
            requirement="TRN-104",
        ))
    problems.extend(IntegrityError(why, requirement="TRN-102") for why in draft_problems(stored))
    return problems


def runtime_of(conversation_id: str, companions: Mapping[str, JsonValue]) -> RuntimeState | None:
    """The state a checked archive carries, or None when it has none."""
    if COMPANION not in companions:
        return None
    return RuntimeState.from_json(conversation_id, companions[COMPANION])


def companions_for(state: RuntimeState | None) -> dict[str, JsonValue]:
    """TRN-103: the companions member of an export: ``runtime`` when there is a state."""
    if state is None or state.is_empty():
        return {}
    return {COMPANION: state.to_json()}
