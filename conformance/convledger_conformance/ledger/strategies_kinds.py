"""Strategies and tables of chapter KND: unregistered pairs, ``ignorable``, example payloads.

Envelopes of unregistered (kind, schemaVersion) pairs marked ignorable, which
import keeps (KND-004) and no append may write (KND-002); the ``ignorable``
member in each shape an archived envelope may carry it (ENV-010, RPL-003,
KND-004); and one valid payload of every registered pair (KND-001,
:data:`EXAMPLE_PAYLOADS`). The draft strategies they build on are in
:mod:`convledger_conformance.ledger.strategies`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from hypothesis import strategies as st

from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.kinds import default_registry
from convledger_conformance.ledger.strategies import (
    _IDENTIFIERS,
    _OCCURRED_AT,
    SCALAR_TEXT,
    STATE_SET,
    UNKNOWN_KIND,
    json_values,
)
from convledger_conformance.spec_values import MAX_SAFE_INTEGER


def _unregistered(pair: tuple[str, int, JsonValue]) -> tuple[str, int, JsonValue]:
    kind, version, payload = pair
    if default_registry().knows(kind, version):
        version += 1  # no kind of the registry has two consecutive versions yet
    return kind, version, payload


_UNKNOWN_IGNORABLE: st.SearchStrategy[tuple[str, int, JsonValue]] = st.tuples(
    st.just(UNKNOWN_KIND) | st.just(STATE_SET) | st.text(SCALAR_TEXT, min_size=1),
    st.integers(1, MAX_SAFE_INTEGER),
    json_values(),
).map(_unregistered)


def unknown_ignorable_events() -> st.SearchStrategy[tuple[str, int, JsonValue]]:
    """(kind, schemaVersion, payload) of an unregistered pair, for an ignorable envelope."""
    return _UNKNOWN_IGNORABLE


_UNREGISTERED_IGNORABLE_DRAFTS: st.SearchStrategy[EventDraft] = st.builds(
    lambda event_id, pair, stamp: EventDraft(
        event_id=event_id, kind=pair[0], occurred_at=stamp, payload=pair[2],
        schema_version=pair[1], ignorable=True,
    ),
    _IDENTIFIERS,
    _UNKNOWN_IGNORABLE,
    _OCCURRED_AT,
)


def unregistered_ignorable_batches(
    *, max_size: int = 3
) -> st.SearchStrategy[list[EventDraft]]:
    """Batches made only of ignorable drafts of unregistered pairs, distinct eventIds (KND-002).

    Import keeps such envelopes (KND-004), but no append may write them,
    ignorable or not: every one of these batches must be refused.
    """
    return st.lists(
        _UNREGISTERED_IGNORABLE_DRAFTS, min_size=1, max_size=max_size,
        unique_by=lambda d: d.event_id,
    )


def _set_ignorable(value: object) -> Callable[[dict[str, object]], None]:
    return lambda wire: wire.__setitem__("ignorable", value)


def _drop_ignorable(wire: dict[str, object]) -> None:
    wire.pop("ignorable", None)


IGNORABLE_MEMBERS: Final[Mapping[str, Callable[[dict[str, object]], None]]] = {
    "absent": _drop_ignorable,
    "true": _set_ignorable(True),
    "false": _set_ignorable(False),
    "null": _set_ignorable(None),
    "1": _set_ignorable(1),
    '"true"': _set_ignorable("true"),
}
"""The ``ignorable`` member an archived envelope may arrive with, each as a change of a wire.

ENV-010 admits the literal ``true`` or no member; everything else is refused
with ``invalid_input``. Without ``true``, an envelope of an unregistered pair
is refused by the replay gate (RPL-003); with it, it is kept (KND-004).
"""


EXAMPLE_PAYLOADS: Final[Mapping[tuple[str, int], JsonValue]] = {
    ("runtime/baseline", 1): {
        "migratedAt": "2024-01-01T00:00:00Z", "head": {}, "messages": [], "runs": [],
        "admissions": [],
    },
    ("runtime/transition", 1): {"type": "interrupt", "input": {"runId": "r"}},
    ("provider/request", 1): {
        "runId": "r", "attempt": 1, "stepNumber": 0, "modelId": "m",
        "instructionsSha256": "0" * 64, "messageShas": ["1" * 64], "bodySha256": "2" * 64,
    },
    ("provider/message", 1): {"sha256": "a" * 64, "message": {"role": "user"}},
    ("provider/response", 1): {"runId": "r", "attempt": 1, "stepNumber": 0,
                               "response": {"id": "x"}},
    ("state/set", 1): {"name": "n", "version": 1, "value": [1.5, None], "actor": "a"},
    ("spill/created", 1): {"reference": "s", "bytes": 0, "sha256": "b" * 64,
                           "mediaType": "text/plain"},
    ("spill/deleted", 1): {"reference": "s", "bytes": 3, "reason": "expired"},
    ("schedule/set", 1): {"id": "s", "kind": "every", "nextAt": "2024-01-01T00:00:00.5+01:00"},
    ("schedule/fired", 1): {"id": "s", "occurrence": 1, "lateByMs": 0, "nextAt": None,
                            "state": "done"},
    ("schedule/late", 1): {"id": "s", "occurrence": 2, "lateByMs": 1},
    ("schedule/cancelled", 1): {"id": "s"},
    ("schedule/failed", 1): {"id": "s", "occurrence": 1, "message": "", "attempts": 3,
                             "retryAt": None, "terminal": True},
    ("child/spawned", 1): {"childConversationId": "c", "seedUptoSeq": 0, "budget": {}},
    ("child/state", 1): {"parentConversationId": "p", "childConversationId": "c",
                         "state": "lost"},
    ("retry/scheduled", 1): {"attempt": 1, "delayMs": 0, "reason": ""},
    ("retry/started", 1): {"attempt": 2},
    ("sandbox/probed", 1): {"result": "degraded", "required": ["git"], "missing": ["git"]},
}
"""One valid payload of every registered pair of ``kinds.json`` (KND-001).

The pairs of :data:`convledger_conformance.ledger.model_faults.NEVER_APPENDED` satisfy their
schemas but are refused on append (TRN-108); checks that append every pair
expect that refusal for them.
"""
