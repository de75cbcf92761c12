"""MemoryStore's transitions: atomicity under faults, refusals that write nothing, and purge.

TRN-004: a fault raised after ANY staged write of ANY transition type leaves
the ledger, the export bytes and every read exactly as they were. Refusals
and non-applied outcomes write nothing. Purge follows TRN-090 .. TRN-096.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conftest import draft, memory_state
from convledger.envelope import EventDraft
from convledger.errors import (
    ConflictError,
    DuplicateError,
    InvalidInputError,
    LedgerError,
    NotFoundError,
    PurgedError,
)
from convledger.memory import MemoryStore
from convledger.runtime import (
    Accept,
    Acquire,
    Checkpoint,
    Compact,
    Fence,
    Interrupt,
    Operation,
    PurgeOutcome,
    Recover,
    RecoveryCursor,
    Status,
    Terminal,
    Transition,
)
from test_runtime_rules import AT, Driver

Step = Callable[[Driver], Transition]
RUN_IDS = tuple(f"r{n}" for n in range(1, 9))


def _accept(n: int) -> Step:
    return lambda d: Accept(f"k{n}", f"in{n}", f"r{n}", f"a{n}", {"text": f"input {n}"})


def _checkpoint(run_id: str) -> Step:
    return lambda d: Checkpoint(run_id, d.fence(run_id), {"id": run_id, "status": "s",
                                                          "parts": [{"t": run_id}]})


def _recover(run_id: str, action: str) -> Step:
    return lambda d: Recover(run_id, d.run(run_id).revision, action, {"replaySafe": True})


def _terminal(run_id: str, reason: str, *absorb: str) -> Step:
    policy = "p" if reason == "policy_stop" else None
    return lambda d: Terminal(run_id, d.fence(run_id), reason, {"answer": run_id},
                              policy=policy, absorb_run_ids=absorb)


RICH: list[Step] = [
    _accept(1),
    _accept(2),  # coalesced into r1
    lambda d: Acquire("r1", "w1"),
    _accept(3),  # a new run while r1 runs
    _checkpoint("r1"),
    lambda d: Operation("r1", d.fence("r1"), {"name": "tool", "args": {"q": 1}}),
    lambda d: Interrupt("r1"),
    _terminal("r1", "success", "r3"),  # absorbs r3
    _accept(4),
    lambda d: Acquire("r4", "w1"),
    _checkpoint("r4"),
    _recover("r4", "requeue"),
    lambda d: Acquire("r4", "w2"),
    _recover("r4", "abandon"),
    _accept(5),
    lambda d: Interrupt("r5"),  # a queued run ends at once
    _accept(6),
    lambda d: Acquire("r6", "w1"),
    _terminal("r6", "policy_stop"),
    lambda d: Compact(d.version(), "in1", "a1", "sum1", {"text": "summary"}),
    _accept(7),
    lambda d: Acquire("r7", "w3"),
    _checkpoint("r7"),  # left running with a draft
]
"""Every transition type, coalescing, absorption, requeue, abandon, compaction, a live draft."""


def play(d: Driver, steps: list[Step]) -> None:
    """Apply each step; every one must apply."""
    for step in steps:
        outcome = d(step(d))
        assert outcome.status is Status.APPLIED, (step, outcome)


def observe(store: MemoryStore, conversations: tuple[str, ...] = ("c1", "c2")) -> Any:
    """Everything a caller can see, plus the ledger and eventIds the store holds."""
    seen: list[Any] = [memory_state(store)]
    for conversation in conversations:
        try:
            exported: bytes | None = store.export_conversation(conversation)
        except NotFoundError:
            exported = None
        try:
            snapshot: Any = store.load_snapshot(conversation)
        except NotFoundError:
            snapshot = None
        seen.append((
            exported,
            store.head(conversation),
            [e.canonical_bytes() for e in store.read(conversation).items],
            snapshot,
            store.list_active_runs(conversation),
            [store.load_run(conversation, run_id) for run_id in RUN_IDS],
        ))
    seen.append(scan_all(store))
    return seen


def scan_all(store: MemoryStore) -> list[Any]:
    """Every recoverable run, following the cursor one run at a time."""
    runs: list[Any] = []
    cursor: RecoveryCursor | None = None
    while True:
        page = store.scan_recoverable(after=cursor, limit=1)
        runs.extend(page.runs)
        if page.next is None:
            return runs
        cursor = page.next


class Fault(Exception):
    """The failure the probe injects."""


class Probe:
    """A fault probe that records labels and raises at its ``armed``-th call."""

    def __init__(self) -> None:
        self.labels: list[str] = []
        self.armed: int | None = None

    def __call__(self, label: str) -> None:
        self.labels.append(label)
        if self.armed is not None and len(self.labels) == self.armed:
            raise Fault(label)


def store_with(probe: Probe) -> tuple[MemoryStore, Driver]:
    """A store with ``probe`` and a second conversation holding a running run."""
    store = MemoryStore(fault_probe=probe)
    other = Driver(store, "c2")
    play(other, [_accept(8), lambda d: Acquire("r8", "w8")])
    store.append("c1", [draft("plain-1")])  # a plain event before the runtime ones
    return store, Driver(store, "c1")


def labels_of_each_step() -> list[list[str]]:
    """The probe labels each RICH step passes, in order."""
    probe = Probe()
    _, d = store_with(probe)
    found = []
    for step in RICH:
        probe.labels = []
        play(d, [step])
        found.append(list(probe.labels))
    return found


LABELS = labels_of_each_step()
CASES = [(i, j) for i, labels in enumerate(LABELS) for j in range(1, len(labels) + 1)]


def test_probe_sees_every_kind_of_write() -> None:
    """TRN-002/TRN-004: the rich scenario stages head, run, admission, message and event writes."""
    every = {label for labels in LABELS for label in labels}
    assert every == {"head", "run", "admission", "message", "event"}
    assert all(labels[0] == "head" and labels[-1] == "event" for labels in LABELS)


def test_rich_scenario_covers_every_transition_type() -> None:
    """The fault scenario applies all eight transition types."""
    d = Driver()
    seen = set()
    for step in RICH:
        transition = step(d)
        seen.add(transition.type)
        d(transition)
    assert seen == {"accept", "acquire", "checkpoint", "operation", "interrupt", "recover",
                    "terminal", "compact"}


@pytest.mark.parametrize(("step", "call"), CASES, ids=[f"{i}-{LABELS[i][j - 1]}{j}"
                                                        for i, j in CASES])
def test_fault_after_any_write_leaves_everything_unchanged(step: int, call: int) -> None:
    """TRN-004/TRN-066: a fault after any staged write of a transition leaves no trace."""
    probe = Probe()
    store, d = store_with(probe)
    play(d, RICH[:step])
    before = observe(store)
    transition = RICH[step](d)
    probe.labels, probe.armed = [], call
    with pytest.raises(Fault):
        d(transition)
    assert observe(store) == before
    probe.armed = None  # the failed call's event id was not kept: the same id applies now
    assert d(transition, event_id=f"c1-e{d.count}").status is Status.APPLIED
    assert observe(store) != before


# -- refusals and outcomes that write nothing (TRN-004) ---------------------------------------


def refusals(d: Driver) -> list[tuple[Transition, str, type[LedgerError] | Status]]:
    """Calls on the finished RICH scenario that must not apply, with their answer."""
    fence = d.fence("r7")
    stale = Fence(fence.owner, fence.revision - 1, fence.fencing_token)
    return [
        (Accept("k1", "x", "y", "z", {}), "", Status.DUPLICATE),
        (Accept("k9", "in1", "r9", "a9", {}), "", InvalidInputError),
        (Accept("k9", "i9", "r9", "a9", {}), "c2-e1", DuplicateError),
        (Acquire("r7", "w9"), "", Status.CONFLICT),
        (Acquire("nope", "w9"), "", Status.NOT_FOUND),
        (Operation("r7", stale, {}), "", Status.CONFLICT),
        (Terminal("r7", fence, "success", {}, absorb_run_ids=("r9",)), "", Status.NOT_FOUND),
        (Terminal("r7", fence, "abandoned", {}), "", InvalidInputError),
        (Interrupt("r1"), "", Status.CONFLICT),
        (Recover("r7", 0, "abandon", {}), "", Status.CONFLICT),
        (Recover("r7", fence.revision, "requeue", {}), "", InvalidInputError),
        (Compact(1, "sum1", "sum1", "s2", {}), "", Status.CONFLICT),
        (Compact(d.version(), "sum1", "a7", "s2", {}), "", InvalidInputError),
        (Compact(d.version(), "sum1", "sum1", "in7", {}), "", InvalidInputError),
    ]


def test_refusals_and_unapplied_outcomes_write_nothing() -> None:
    """TRN-004/TRN-008: duplicate, conflict, not_found and every error leave all unchanged."""
    store, d = store_with(Probe())
    play(d, RICH)
    for transition, event_id, answer in refusals(d):
        before = observe(store)
        if isinstance(answer, Status):
            outcome = d(transition, event_id=event_id or None)
            assert (outcome.status, outcome.event) == (answer, None)
            assert outcome.version == store.load_snapshot("c1").head.version
        else:
            with pytest.raises(answer):
                d(transition, event_id=event_id or None)
        assert observe(store) == before, transition


@pytest.mark.parametrize("kind", ["runtime/transition", "runtime/baseline"])
def test_append_of_runtime_kinds_is_refused(kind: str) -> None:
    """TRN-108: append refuses runtime/transition and runtime/baseline drafts, writing nothing."""
    store, d = store_with(Probe())
    play(d, RICH[:3])
    recorded = store.read("c1").items[-1].payload
    payload = recorded if kind == "runtime/transition" else {
        "head": {}, "runs": [], "admissions": [], "messages": [], "migratedAt": AT}
    before = observe(store)
    with pytest.raises(InvalidInputError) as raised:
        store.append("c1", [EventDraft(event_id="x1", kind=kind, occurred_at=AT,
                                       payload=payload)])
    assert raised.value.requirement == "TRN-108"
    with pytest.raises(InvalidInputError):
        store.append("fresh", [draft("ok"), EventDraft(event_id="x2", kind=kind,
                                                       occurred_at=AT, payload=payload)])
    assert observe(store) == before and store.head("fresh") == 0


# -- purge (TRN-090 .. TRN-096) ----------------------------------------------------------------


def finished() -> tuple[MemoryStore, Driver]:
    """The RICH scenario with r7 ended, so c1 has no active run; c2 keeps a running run."""
    store, d = store_with(Probe())
    play(d, [*RICH, _terminal("r7", "success")])
    assert store.list_active_runs("c1") == ()
    return store, d


def test_purge_is_refused_while_a_run_is_active() -> None:
    """TRN-091: purge with an active run is a conflict and changes nothing."""
    store, d = store_with(Probe())
    play(d, RICH)
    before = observe(store)
    with pytest.raises(ConflictError):
        store.purge("c1")
    with pytest.raises(ConflictError):
        store.purge("c2")
    assert observe(store) == before
    store.transition("c1", Accept("k9", "i9", "r9", "a9", {}), event_id="later", occurred_at=AT)


def test_purge_answers_purged_then_already_purged() -> None:
    """TRN-090: purged the first time, already_purged after; other conversations untouched."""
    store, _ = finished()
    other = observe(store, ("c2",))
    assert store.purge("c1") is PurgeOutcome.PURGED
    assert store.purge("c1") is PurgeOutcome.ALREADY_PURGED
    assert observe(store, ("c2",))[1:] == other[1:]


def test_purge_of_never_existing_conversation_leaves_a_tombstone() -> None:
    """TRN-090/TRN-092: purging an unknown conversation answers purged and refuses it after."""
    store = MemoryStore()
    assert store.purge("ghost") is PurgeOutcome.PURGED
    assert store.purge("ghost") is PurgeOutcome.ALREADY_PURGED
    with pytest.raises(PurgedError):
        store.append("ghost", [draft("g1")])
    with pytest.raises(PurgedError):
        store.transition("ghost", Accept("k", "i", "r", "a", {}), event_id="g2", occurred_at=AT)


def test_reads_after_purge_answer_as_for_a_conversation_that_never_existed() -> None:
    """TRN-093/TRN-094: head 0, empty read, no run, no active runs, export/snapshot not_found."""
    store, _ = finished()
    store.purge("c1")
    assert store.head("c1") == 0
    assert store.read("c1").items == ()
    assert all(store.load_run("c1", run_id) is None for run_id in RUN_IDS)
    assert store.list_active_runs("c1") == ()
    assert all(run.conversation_id != "c1" for run in scan_all(store))
    assert [run.run_id for run in scan_all(store)] == ["r8"]
    with pytest.raises(NotFoundError):
        store.export_conversation("c1")
    with pytest.raises(NotFoundError):
        store.load_snapshot("c1")
    assert observe(store, ("c1",))[1] == observe(MemoryStore(), ("c1",))[1]


def test_writes_after_purge_are_refused_purged_forever() -> None:
    """TRN-092: append, every transition type and import of a purged conversation are purged."""
    store, d = finished()
    archive = store.export_conversation("c1")
    store.purge("c1")
    before = observe(store)
    with pytest.raises(PurgedError) as raised:
        store.append("c1", [draft("late")])
    assert raised.value.kind == "purged"
    for transition in (Accept("k1", "in1", "r1", "a1", {}), Acquire("r1", "w"),
                       Interrupt("r1"), Recover("r1", 1, "abandon", {}),
                       Operation("r1", Fence("w", 1, 1), {}),
                       Terminal("r1", Fence("w", 1, 1), "success", {}),
                       Compact(1, "a", "b", "c", {})):
        with pytest.raises(PurgedError):
            d(transition)
    with pytest.raises(PurgedError):
        store.import_conversation(archive)
    assert observe(store) == before
    assert store.purge("c1") is PurgeOutcome.ALREADY_PURGED


def test_invalid_call_on_purged_conversation_is_invalid_input_first() -> None:
    """TRN-009: invalid_input for the call alone comes before purged."""
    store, d = finished()
    store.purge("c1")
    with pytest.raises(InvalidInputError):
        d(Accept("", "i", "r", "a", {}))
    with pytest.raises(InvalidInputError):
        store.transition("c1", Acquire("r1", "w"), event_id="x", occurred_at="not a time")


def test_purged_event_ids_may_be_used_again() -> None:
    """TRN-096: eventIds of purged events are no longer stored and may be accepted again."""
    store, _ = finished()
    store.purge("c1")
    store.append("c3", [draft("plain-1")])
    again = Driver(store, "c3")
    assert again(Accept("k", "i", "r", "a", {}), event_id="c1-e1").status is Status.APPLIED
