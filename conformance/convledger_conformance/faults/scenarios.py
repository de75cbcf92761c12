"""The write operations a fault sweep fails, and the sweep (FLT-004, FLT-005).

A :class:`Scenario` prepares its scene under a *tag* (every conversation and
eventId it uses carries it, so one store holds the scenes of all the sweep's
rounds side by side) and returns the conversations it touches and the one
write operation to fail. :func:`sweep` runs the operation once under a
:class:`~.plans.CountingPlan` to enumerate its write points (N of them), then
for n in 1..N prepares a new scene, fails the n-th point once (with fault
``FAULTS[n % 3]``, or with each of the three under ``thorough``), and
judges: a refusal of the fault's kind (FLT-003) that
left every conversation of every round as it was (FLT-004), then the same
call, without a plan, succeeding with the effect of the counting run
(FLT-005). A store may instead absorb the fault by running its transaction
again; then the call's effect must be the counting run's (FLT-004).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.interface import require
from convledger.runtime.transitions import Accept, Acquire, Fence, Terminal
from convledger.store import Capability, LedgerStore
from convledger_conformance.differences import first_difference
from convledger_conformance.faults.digest import PROJECTION, digest
from convledger_conformance.faults.plans import (
    KINDS,
    CountingPlan,
    FailingPlan,
    FaultInjectable,
    rounds,
)
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.support import STAMP, draft, fail

Operation = Callable[[], object]
Source = Callable[[], LedgerStore]
"""The second store of a sweep, made from the factory on first call: where the scenes of
imports are built (an archive of another store)."""
Prepare = Callable[[LedgerStore, Source, str], tuple[tuple[str, ...], Operation]]
"""``(store, source, tag)`` -> (conversations touched, the operation)."""

IDS = ("FLT-002", "FLT-003", "FLT-004", "FLT-005")
ALLOW = lambda _operation: True  # noqa: E731 -- the spill callbacks: every access granted
OPERATION: dict[str, JsonValue] = {"operationId": "op-faults", "authorization": {"user": "u-1"}}


@attrs.frozen
class Scenario:
    """One write operation of one chapter: its name, the capabilities it needs, its scene."""

    name: str
    needs: tuple[Capability, ...]
    prepare: Prepare = attrs.field(eq=False, repr=False)


@attrs.frozen
class Sweep:
    """What a sweep did: the points of the operation and how each injected one ended."""

    scenario: str
    points: int
    refused: int
    absorbed: int


def _batch(store: LedgerStore, _: Source, tag: str) -> tuple[tuple[str, ...], Operation]:
    cid = f"batch-{tag}"
    store.append(cid, [draft(f"{tag}-a1"), draft(f"{tag}-a2")])
    batch = [draft(f"{tag}-b{n}", n) for n in range(1, 4)]
    return (cid,), lambda: store.append(cid, batch, expected_head=2)


def _accept(tag: str) -> Accept:
    return Accept(f"k-{tag}", f"in-{tag}", f"r-{tag}", f"am-{tag}", {"text": f"hello {tag}"})


def _accepted(store: LedgerStore, cid: str, tag: str, acquire: bool = False) -> Fence | None:
    runs = require(store, Capability.TRANSITIONS)
    runs.transition(cid, _accept(tag), event_id=f"{tag}-accept", occurred_at=STAMP)
    if not acquire:
        return None
    runs.transition(cid, Acquire(f"r-{tag}", "w-1"), event_id=f"{tag}-acquire",
                    occurred_at=STAMP)
    run = runs.load_run(cid, f"r-{tag}")
    assert run is not None, "the acquired run is not stored"
    return Fence(run.owner or "", run.revision, run.fencing_token)


def _import(store: LedgerStore, other: Source, tag: str) -> tuple[tuple[str, ...], Operation]:
    cid = f"import-{tag}"
    source = other()
    source.append(cid, [draft(f"{tag}-i{n}", n) for n in range(1, 4)])
    if Capability.TRANSITIONS in source.capabilities:
        _accepted(source, cid, tag, acquire=True)  # the runtime companion travels too
    archive = source.export_conversation(cid)
    return (cid,), lambda: store.import_conversation(archive)


def _transition(step: str) -> Prepare:
    def prepare(store: LedgerStore, _: Source, tag: str) -> tuple[tuple[str, ...], Operation]:
        cid = f"{step}-{tag}"
        runs = require(store, Capability.TRANSITIONS)
        store.append(cid, [draft(f"{tag}-t1")])
        if step == "accept":
            return (cid,), lambda: runs.transition(cid, _accept(tag), event_id=f"{tag}-accept",
                                                   occurred_at=STAMP)
        fence = _accepted(store, cid, tag, acquire=step == "terminal")
        if step == "acquire":
            return (cid,), lambda: runs.transition(cid, Acquire(f"r-{tag}", "w-1"),
                                                   event_id=f"{tag}-acquire", occurred_at=STAMP)
        assert fence is not None
        terminal = Terminal(f"r-{tag}", fence, "success", {"text": f"done {tag}"})
        return (cid,), lambda: runs.transition(cid, terminal, event_id=f"{tag}-end",
                                               occurred_at=STAMP)

    return prepare


def _purge(store: LedgerStore, _: Source, tag: str) -> tuple[tuple[str, ...], Operation]:
    cid = f"purge-{tag}"
    store.append(cid, [draft(f"{tag}-p1"), draft(f"{tag}-p2")])
    if Capability.TRANSITIONS in store.capabilities:  # runtime rows to delete, no active run
        fence = _accepted(store, cid, tag, acquire=True)
        assert fence is not None
        require(store, Capability.TRANSITIONS).transition(
            cid, Terminal(f"r-{tag}", fence, "success", {"text": "done"}),
            event_id=f"{tag}-end", occurred_at=STAMP)
    return (cid,), lambda: require(store, Capability.PURGE).purge(cid)


def _put_spill(store: LedgerStore, _: Source, tag: str) -> tuple[tuple[str, ...], Operation]:
    cid = f"spill-{tag}"
    store.append(cid, [draft(f"{tag}-s0")])
    spills = require(store, Capability.SPILLS)
    return (cid,), lambda: spills.put_spill(
        cid, b"spilled \x00 bytes", media_type="application/octet-stream", operation=OPERATION,
        reference=f"ref-{tag}", event_id=f"{tag}-put", occurred_at=STAMP)


def _delete_spill(store: LedgerStore, source: Source, tag: str) -> tuple[
    tuple[str, ...], Operation
]:
    touched, put = _put_spill(store, source, tag)
    put()
    spills = require(store, Capability.SPILLS)
    return touched, lambda: spills.delete_spill(touched[0], f"ref-{tag}", event_id=f"{tag}-del",
                                                occurred_at=STAMP)


def _import_bundle(store: LedgerStore, other: Source, tag: str) -> tuple[
    tuple[str, ...], Operation
]:
    source = other()
    touched, put = _put_spill(source, other, tag)
    put()
    bundle = require(source, Capability.SPILLS).export_bundle(touched[0])
    return touched, lambda: require(store, Capability.SPILLS).import_bundle(bundle)


def _catch_up(store: LedgerStore, _: Source, tag: str) -> tuple[tuple[str, ...], Operation]:
    cid = f"fold-{tag}"
    store.append(cid, [draft(f"{tag}-f{n}", n) for n in range(1, 6)])
    folds = require(store, Capability.PROJECTIONS)
    return (cid,), lambda: folds.catch_up(cid, PROJECTION)


T, P, S = Capability.TRANSITIONS, Capability.PURGE, Capability.SPILLS
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("batch", (), _batch),
    Scenario("import", (), _import),
    Scenario("accept", (T,), _transition("accept")),
    Scenario("acquire", (T,), _transition("acquire")),
    Scenario("terminal", (T,), _transition("terminal")),
    Scenario("purge", (P,), _purge),
    Scenario("put_spill", (S,), _put_spill),
    Scenario("delete_spill", (S,), _delete_spill),
    Scenario("import_bundle", (S,), _import_bundle),
    Scenario("catch_up", (Capability.PROJECTIONS,), _catch_up),
)
"""Every write operation the sweeps fail, in the order of the chapters."""


def injectable(store: LedgerStore) -> FaultInjectable:
    """FLT-001: the store's seam, or the failure that it offers none."""
    if not isinstance(store, FaultInjectable):
        fail("FLT-001", f"{type(store).__name__} declares multi_process in process but offers "
                        "no fault seam (inject(plan))")
    return store


def _state(
    store: LedgerStore, touched: Sequence[str], earlier: Sequence[str]
) -> tuple[object, ...]:
    """The digest of this round's conversations, and the head and events of the earlier ones.

    The earlier rounds' conversations are read less deeply (every round would
    otherwise read every earlier one whole): their heads and events, which a
    write that strays into them changes.
    """
    return digest(store, touched), tuple(
        (cid, store.head(cid), len(read_whole(store, cid))) for cid in earlier)


def _normal(state: Sequence[object], tag: str) -> str:
    """A digest with its round's tag blanked, to compare rounds with each other."""
    return repr(state).replace(tag, "#")


def sweep(
    store: LedgerStore, source: Source, scenario: Scenario, profile: str = "ci"
) -> Sweep:
    """Fail each write point of ``scenario`` once; fail FLT-002 .. FLT-005 on what goes wrong."""
    seam = injectable(store)
    what = scenario.name
    touched, operation = scenario.prepare(store, source, "q0000z")
    counting = CountingPlan()
    seam.inject(counting)
    try:
        operation()
    finally:
        seam.inject(None)
    points = len(counting.points)
    if not points:
        fail("FLT-002", f"{what}: the store asked the plan about no write point")
    expected = _normal(digest(store, touched), "q0000z")
    seen = list(touched)
    refused = absorbed = 0
    for number, (n, fault) in enumerate(rounds(points, profile), start=1):
        tag = f"q{number:04d}z"
        touched, operation = scenario.prepare(store, source, tag)
        earlier = tuple(seen)
        seen += touched
        before = _state(store, touched, earlier)
        plan = FailingPlan(n, fault)
        seam.inject(plan)
        try:
            operation()
        except LedgerError as error:
            if error.kind != KINDS[fault]:
                fail("FLT-003", f"{what}: {fault.value} at point {n} ({plan.failed}) refused "
                                f"as {error.kind!r}, expected {KINDS[fault]!r}")
            outcome = "refused"
        except Exception as error:
            fail("FLT-003", f"{what}: {fault.value} at point {n} ({plan.failed}) raised "
                            f"{error!r}, expected a refusal of kind {KINDS[fault]!r}")
        else:
            outcome = "absorbed"
        finally:
            seam.inject(None)
        if plan.failed is None:
            fail("FLT-002", f"{what}: round {n} reached {len(plan.points)} write points, the "
                            f"counting run {points}: the injected point was never reached")
        if outcome == "refused":
            refused += 1
            changed = first_difference(before, _state(store, touched, earlier))
            if changed is not None:
                fail("FLT-004", f"{what}: {fault.value} at point {n} of {points} "
                                f"({plan.failed.kind}: {plan.failed.statement[:60]!r}) was "
                                f"refused but left the store changed at {changed}")
            try:
                operation()
            except LedgerError as error:
                fail("FLT-005", f"{what}: the retry after {fault.value} at point {n} was "
                                f"refused: {error!r}")
        else:
            absorbed += 1
        state = _normal(digest(store, touched), tag)
        if state != expected:
            ids = "FLT-005" if outcome == "refused" else "FLT-004"
            fail(ids, f"{what}: after {fault.value} at point {n} and the "
                      f"{'retry' if outcome == 'refused' else 'absorbing store'}, the state "
                      f"differs from that of one run without a fault: "
                      f"{first_difference(expected, state)}")
    return Sweep(what, points, refused, absorbed)
