"""What the runtime machine's rules draw and how it judges a store (see ``runtime.machine``).

The drawing constants (conversations, stamps, fence faults, strategies), one
transition :class:`Call`, and the comparisons of the store's bounded reads
and outcomes with the model live here, so the machine module reads as its
rules and its invariant.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NoReturn

import attrs
from hypothesis import strategies as st

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import LedgerError
from convledger.runtime import RuntimeState
from convledger.runtime.store import TransitionStore
from convledger.runtime.transitions import Transition
from convledger_conformance.ledger.model import envelope_wire
from convledger_conformance.registry import CheckFailure
from convledger_conformance.runtime.model import (
    RuntimeModel,
    message_faults,
    outcome_blame,
    run_faults,
    snapshot_json,
)
from convledger_conformance.same_json import canonically_equal

CONVERSATIONS: tuple[str, ...] = ("c", "c\x00\u00e9")
"""The conversations of every program, in code-point order (TRN-083, TRN-085)."""

STAMPS: tuple[str, ...] = (
    "2024-05-01T12:00:00Z",
    "2024-05-01T12:00:00.250+02:00",
    "2024-05-01T10:00:00.25Z",
    "2024-05-02T00:00:00-00:30",
    "2024-05-01 12:00:00",  # not RFC 3339: the call is invalid_input (TRN-005)
)
"""occurredAt texts, drawn by index; records keep the exact text (TRN-019)."""

RUNTIME_MACHINE_IDS: tuple[str, ...] = (
    "TRN-001", "TRN-002", "TRN-003", "TRN-004", "TRN-005", "TRN-006", "TRN-007", "TRN-008",
    "TRN-009", "TRN-010", "TRN-011", "TRN-012", "TRN-013", "TRN-014", "TRN-015", "TRN-016",
    "TRN-017", "TRN-018", "TRN-019", "TRN-020", "TRN-021", "TRN-022", "TRN-023", "TRN-024",
    "TRN-025", "TRN-030", "TRN-031", "TRN-032", "TRN-033", "TRN-034", "TRN-040", "TRN-041",
    "TRN-042", "TRN-043", "TRN-044", "TRN-050", "TRN-051", "TRN-053", "TRN-054", "TRN-055",
    "TRN-060", "TRN-061", "TRN-062", "TRN-063", "TRN-064", "TRN-065", "TRN-066", "TRN-070",
    "TRN-071", "TRN-072", "TRN-073", "TRN-074", "TRN-075", "TRN-080", "TRN-081", "TRN-082",
    "TRN-083", "TRN-084", "TRN-085", "TRN-100", "TRN-101", "TRN-103", "TRN-105", "TRN-106",
    "TRN-107", "TRN-108",
)
"""Every requirement id a failure of the machine can name (without purge)."""
PURGE_IDS: tuple[str, ...] = ("TRN-090", "TRN-091", "TRN-092", "TRN-093", "TRN-094")
"""The ids the purge rules add."""

FENCE_FAULTS = (None, None, None, None, None, "owner", "revision", "token")
"""How a fenced call's fence is spoiled, by draw: mostly not at all (TRN-040)."""

PICK = st.integers(0, 5)
CONV = st.integers(0, len(CONVERSATIONS) - 1)
AT = st.integers(0, 19)  # 19 names the invalid stamp; others valid ones
EVENT = st.integers(0, 19)  # 0 reuses a stored eventId (TRN-008)
BODY = st.sampled_from(["", "x", "héllo", "\x00"])


def envelope_bytes(envelope: Envelope) -> bytes:
    """The canonical bytes of an envelope a store returned (fast encoder; ENV-011)."""
    return canonical.encode(envelope_wire(envelope))


def fail(ids: Iterable[str], message: str) -> NoReturn:
    """Raise the failure of ``ids`` (each named once, in order)."""
    raise CheckFailure(tuple(dict.fromkeys(i for i in ids if i)), message)


@attrs.frozen
class Call:
    """One transition call: where, what, and the identity and time of its event."""

    conversation: str
    transition: Transition
    event_id: str
    occurred_at: str


def copy_model(model: RuntimeModel) -> RuntimeModel:
    copied = RuntimeModel(registry=model.registry)
    copied.states = {c: s.copy() for c, s in model.states.items()}
    copied.ledgers = {c: list(events) for c, events in model.ledgers.items()}
    copied.event_ids = dict(model.event_ids)
    copied.purged = set(model.purged)
    return copied


def snapshot_of_store(store: TransitionStore, conversation: str) -> JsonValue:
    """``load_snapshot`` as JSON, None when it is refused with not_found (TRN-082)."""
    try:
        snapshot = store.load_snapshot(conversation)
    except LedgerError as error:
        if error.kind != "not_found":
            fail(("TRN-082",), f"load_snapshot({conversation!r}) refused as {error.kind!r}")
        return None
    return {
        "head": snapshot.head.to_json(),
        "activeRuns": [run.to_json() for run in snapshot.active_runs],
        "messages": [message.to_json() for message in snapshot.messages],
    }


def compare_reads(
    store: TransitionStore, conversation: str, model: RuntimeState, ids: tuple[str, ...]
) -> None:
    """The bounded reads of ``store`` answer what ``model`` holds (TRN-080 .. TRN-082)."""
    snapshot = snapshot_of_store(store, conversation)
    want = snapshot_json(model)
    if model.head_record is not None:
        for message in store.load_snapshot(conversation).messages:
            for found, why in message_faults(message):
                fail(found, why)
    if not canonically_equal(snapshot, want):
        fail((*ids, "TRN-082", "TRN-010"), f"load_snapshot({conversation!r}) is {snapshot!r}, "
             f"expected {want!r}")
    active = [run.to_json() for run in store.list_active_runs(conversation)]
    if not canonically_equal(active, [r.to_json() for r in model.active_runs()]):
        fail((*ids, "TRN-081"), f"list_active_runs({conversation!r}) is {active!r}")
    for run in model.runs.values():
        loaded = store.load_run(conversation, run.run_id)
        if loaded is None or not canonically_equal(loaded.to_json(), run.to_json()):
            fail((*ids, "TRN-080"), f"load_run({conversation!r}, {run.run_id!r}) is {loaded!r}, "
                 f"expected {run!r}")
        for found, why in run_faults(loaded, model.runs):
            fail(found, why)
    if store.load_run(conversation, "ghost") is not None:
        fail((*ids, "TRN-080"), f"load_run({conversation!r}, 'ghost') found a run")


def outcome_ids(want: JsonValue, have: JsonValue) -> tuple[str, ...]:
    """The ids to blame for an outcome that differs from the model's."""
    assert isinstance(want, dict) and isinstance(have, dict)
    status = want["status"]
    assert isinstance(status, str)
    if have["status"] != status:
        return ("TRN-001", *outcome_blame(status))
    if have["version"] != want["version"]:
        return ("TRN-001", "TRN-003", "TRN-010")
    if have["event"] != want["event"]:
        return ("TRN-002", "TRN-005", "TRN-006", "TRN-041")
    if have["admitted"] != want["admitted"]:
        return ("TRN-021", "TRN-023", "TRN-025")
    return ("TRN-001", "TRN-016", "TRN-019", "TRN-023", "TRN-024", "TRN-033", "TRN-043",
            "TRN-044", "TRN-050", "TRN-054", "TRN-055", "TRN-063", "TRN-065")


def first_difference(want: Sequence[bytes], have: Sequence[bytes]) -> str:
    for seq, (a, b) in enumerate(zip(want, have, strict=False), start=1):
        if a != b:
            return f"at seq {seq}: {b!r}, expected {a!r}"
    return "one ledger is a prefix of the other"
