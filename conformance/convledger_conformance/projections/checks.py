"""Checks of chapter PRJ: definitions, honest checkpoints, versions, unknown kinds, archives.

Every expected state is folded by the check itself from the events it reads
(:mod:`convledger_conformance.projections.model`), never taken from the store.
The state machine of :mod:`convledger_conformance.projections.machine` runs the
same invariants over random programs.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Final

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from convledger import canonical
from convledger.envelope import Envelope, EventDraft
from convledger.errors import LedgerError
from convledger.interface import require
from convledger.projections import STATE_SLOTS, SUMMARY, ProjectionDefinition
from convledger.projections.named import FAILURES, failing
from convledger.projections.store import ProjectionStore
from convledger.store import Capability, LedgerStore
from convledger_conformance.profiles import scaled
from convledger_conformance.projections.machine import build_projection_machine
from convledger_conformance.projections.model import (
    counting,
    expected_state,
    ledger,
    loose,
)
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    accepted,
    draft,
    drafts,
    fail,
    fresh_store,
    refused,
    run_once,
    run_property,
)

PRJ: Final = Capability.PROJECTIONS


def _same_state(store: ProjectionStore, cid: str, definition: ProjectionDefinition,
                ids: str | tuple[str, ...], what: str) -> int:
    """Fail ``ids`` unless the stored checkpoint is the model's fold; return its uptoSeq."""
    stored = store.load_checkpoint(cid, definition.name)
    events = ledger(store, cid)
    head = events[-1].seq if events else 0
    if stored is None:
        if head == 0:
            return 0
        fail(ids, f"{what}: no checkpoint stored")
    if stored.upto_seq > head:
        fail(ids, f"{what}: uptoSeq {stored.upto_seq} is beyond the head {head}")
    if stored.version != definition.version:
        fail(ids, f"{what}: stored version {stored.version}, defined {definition.version}")
    want = expected_state(definition, events, stored.upto_seq, store)
    if canonical.encode(stored.state) != want:
        fail(ids, f"{what}: the state is not the fold of events 1..{stored.upto_seq}")
    return stored.upto_seq


def _bad_definitions() -> list[tuple[str, object]]:
    good = counting()
    broken: list[tuple[str, object]] = [("a dict", {"name": "x"}), ("None", None)]
    for field, value in (("name", ""), ("version", 0), ("version", True),
                         ("state_schema", {"type": 3}), ("state_schema", "object"),
                         ("initial_state", {"count": "no", "seqs": []}),
                         ("initial_state", {1, 2}), ("fold", 3), ("kinds", {("k", 1)})):
        clone = attrs.evolve(good)
        object.__setattr__(clone, field, value)  # bypasses the constructor's own checks
        broken.append((f"{field}={value!r}", clone))
    return broken


@check("PRJ-001", "PRJ-002", "ERR-004", capability=PRJ)
def check_malformed_definitions_refused(ctx: CheckContext) -> None:
    """PRJ-001, PRJ-002: a malformed definition is invalid_input and changes nothing."""

    def body(given: LedgerStore) -> None:
        store = require(given, PRJ)
        store.append("c", drafts("c", 3))
        for what, definition in _bad_definitions():
            refused(partial(store.catch_up, "c", loose(definition)),
                    "invalid_input", ("PRJ-001", "PRJ-002"), f"catch_up with {what}",
                    store=store, touched=["c"], unchanged="ERR-004")
            if store.load_checkpoint("c", "conformance.count") is not None:
                fail("ERR-004", f"catch_up with {what} stored a checkpoint")
        for bad_name in ("", 7, "x" * 201):
            refused(partial(store.load_checkpoint, "c", loose(bad_name)),
                    "invalid_input", "PRJ-001", f"load_checkpoint of name {bad_name!r}")
        try:
            ProjectionDefinition("", 1, {}, {}, lambda s, e: s)
        except LedgerError as error:
            if error.kind != "invalid_input":
                fail("PRJ-001", f"an empty name is refused as {error.kind!r}")
        else:
            fail("PRJ-001", "a definition with an empty name was constructed")

    run_once(ctx, body)


@check("PRJ-010", "PRJ-011", "PRJ-014", "PRJ-015", capability=PRJ)
def check_partial_catch_up_reports_lag(ctx: CheckContext) -> None:
    """PRJ-010, PRJ-011, PRJ-014, PRJ-015: bounded catch-up, honest status, nothing at head 0."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        definition = counting()
        empty = accepted(partial(s.catch_up, "none", definition), "PRJ-015", "catch_up of none")
        if empty.upto_seq != 0 or s.load_checkpoint("none", definition.name) is not None:
            fail("PRJ-015", "a catch-up of an empty conversation stored a checkpoint")
        status = s.projection_status("none", definition.name)
        if (status.upto_seq, status.head, status.version) != (0, 0, None):
            fail("PRJ-014", f"status of nothing is {status!r}")
        store.append("c", drafts("c", 25))
        for bad in (0, -1, True, "5", 1_000_001):
            refused(partial(s.catch_up, "c", definition, max_events=loose(bad)),
                    "invalid_input", "PRJ-011", f"max_events={bad!r}", store=store, touched=["c"])
        first = s.catch_up("c", definition, max_events=10)
        if first.upto_seq != 10:
            fail("PRJ-011", f"catch_up(max_events=10) reached uptoSeq {first.upto_seq}")
        _same_state(s, "c", definition, "PRJ-010", "after a partial catch-up")
        status = s.projection_status("c", definition.name)
        if (status.upto_seq, status.head, status.version) != (10, 25, 1):
            fail("PRJ-014", f"a lagging projection reports {status!r}, not (10, 25, 1)")
        last = s.catch_up("c", definition)
        if last.upto_seq != 25 or _same_state(s, "c", definition, "PRJ-011", "caught up") != 25:
            fail("PRJ-011", "catch_up did not reach the head")
        again = s.catch_up("c", definition)
        if again.upto_seq != 25 or canonical.encode(again.state) != canonical.encode(last.state):
            fail("PRJ-015", "a catch-up at the head changed the checkpoint")

    run_once(ctx, body)


@check("PRJ-012", "PRJ-013", capability=PRJ)
def check_checkpoint_never_ahead_never_back(ctx: CheckContext) -> None:
    """PRJ-012, PRJ-013: over random appends and catch-ups, uptoSeq <= head, monotone, exact."""

    def body(given: LedgerStore, steps: list[tuple[int, int]]) -> None:
        store = require(given, PRJ)
        definition = counting()
        last = 0
        for number, (appended, bound) in enumerate(steps):
            if appended:
                store.append("c", drafts(f"e{number}", appended))
            store.catch_up("c", definition, max_events=bound)
            upto = _same_state(store, "c", definition, ("PRJ-012", "PRJ-013"), f"step {number}")
            if upto < last:
                fail("PRJ-012", f"uptoSeq moved back from {last} to {upto}")
            last = upto

    steps = st.lists(st.tuples(st.integers(0, 4), st.integers(1, 5)), min_size=1, max_size=8)
    run_property(ctx, body, steps, share=0.3)


@check("PRJ-013", capability=PRJ)
def check_concurrent_catch_ups_never_regress(ctx: CheckContext) -> None:
    """PRJ-013: catch-ups in several threads, racing appends, never store an older checkpoint."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        definition = counting()
        store.append("c", drafts("seed", 5))
        barrier = threading.Barrier(5)
        crashes: list[BaseException] = []
        seen: list[int] = []
        done = threading.Event()

        def catcher(bound: int) -> None:
            barrier.wait()
            try:
                for _ in range(25):
                    s.catch_up("c", definition, max_events=bound)
            except BaseException as error:
                crashes.append(error)

        def appender() -> None:
            barrier.wait()
            for n in range(40):
                store.append("c", [draft(f"race-{n}")])

        def watcher() -> None:
            barrier.wait()
            while not done.is_set():
                stored = s.load_checkpoint("c", definition.name)
                seen.append(0 if stored is None else stored.upto_seq)

        # different bounds, so that a late writer of a shorter fold would move it back
        catchers = [threading.Thread(target=catcher, args=(bound,)) for bound in (1, 2, 5)]
        others = [threading.Thread(target=appender), threading.Thread(target=watcher)]
        for thread in catchers + others:
            thread.start()
        for thread in catchers:
            thread.join()
        done.set()
        for thread in others:
            thread.join()
        if crashes:
            fail("PRJ-013", f"a concurrent catch-up failed: {crashes[0]!r}")
        if seen != sorted(seen):
            fail("PRJ-013", f"a reader saw uptoSeq move backwards: {seen}")
        _same_state(s, "c", definition, "PRJ-013", "after the race")
        head = store.head("c")
        for _ in range(CATCH_UP_ROUNDS):  # bounded: a store must fail this check, not hang it
            if s.catch_up("c", definition).upto_seq >= head:
                break
        else:
            fail("PRJ-013", f"{CATCH_UP_ROUNDS} catch-ups did not reach the head {head}")
        _same_state(s, "c", definition, "PRJ-013", "after the last catch-up")

    with fresh_store(ctx) as store:
        body(store)


CATCH_UP_ROUNDS = 10
"""Catch-ups of the default bound (10,000 events) that must reach a head of 45 events."""


@check("PRJ-020", capability=PRJ)
def check_version_bump_refolds(ctx: CheckContext) -> None:
    """PRJ-020: a new version folds again from seq 1 and equals a fresh fold."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("c", drafts("c", 12))
        s.catch_up("c", counting(version=1))
        bumped = counting(version=2)
        partial_refold = s.catch_up("c", bumped, max_events=4)
        if partial_refold.upto_seq != 4 or partial_refold.version != 2:
            fail("PRJ-020", f"a bounded refold stored {partial_refold!r}, not uptoSeq 4 v2")
        _same_state(s, "c", bumped, "PRJ-020", "after a bounded refold")
        s.catch_up("c", bumped)
        _same_state(s, "c", bumped, "PRJ-020", "after the refold")
        with fresh_store(ctx) as other:
            other.append("c", [_redraft(e) for e in ledger(store, "c")])
            fresh = require(other, PRJ).catch_up("c", bumped)
            stored = s.load_checkpoint("c", bumped.name)
            assert stored is not None
            if canonical.encode(fresh.state) != canonical.encode(stored.state):
                fail("PRJ-020", "the refold differs from a fresh fold of the same events")
        s.catch_up("c", counting(version=1))
        _same_state(s, "c", counting(version=1), "PRJ-020", "after going back to v1")

    run_once(ctx, body)


def _redraft(envelope: Envelope) -> EventDraft:
    return EventDraft(
        event_id=envelope.event_id, kind=envelope.kind, occurred_at=envelope.occurred_at,
        payload=envelope.payload, schema_version=envelope.schema_version,
        ignorable=envelope.ignorable,
    )


_SLOTS_ONLY = frozenset({("state/set", 1)})


@check("PRJ-030", "PRJ-031", "PRJ-032", "RPL-005", capability=PRJ)
def check_unknown_kinds_in_a_fold(ctx: CheckContext) -> None:
    """PRJ-030 .. PRJ-032: ignorable unknowns are skipped; others refuse, checkpoint unchanged."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        definition = counting(kinds=_SLOTS_ONLY)
        probe = {"result": "available", "required": [], "missing": []}
        store.append("c", drafts("c", 2))
        store.append("c", [draft("skip", kind="sandbox/probed", payload=probe, ignorable=True)])
        store.append("c", [draft("c-3", 3)])
        reached = s.catch_up("c", definition)
        if reached.upto_seq != 4:
            fail("PRJ-030", f"an ignorable unknown event stopped catch-up at {reached.upto_seq}")
        _same_state(s, "c", definition, "PRJ-030", "after skipping an ignorable event")
        if canonical.decode(canonical.encode(reached.state)) != {"count": 3, "seqs": [1, 2, 4]}:
            fail("PRJ-030", f"the fold did not skip exactly the ignorable event: {reached.state}")
        store.append("c", [draft("stop", kind="sandbox/probed", payload=probe)])
        store.append("c", drafts("late", 2))
        error = refused(partial(s.catch_up, "c", definition), "replay_refused",
                        ("PRJ-031", "RPL-005"), "catch-up over a non-ignorable unknown event")
        if (getattr(error, "seq", None), getattr(error, "event_kind", None),
                getattr(error, "schema_version", None)) != (5, "sandbox/probed", 1):
            fail("PRJ-031", f"the refusal does not name seq 5, its kind and version: {error!r}")
        stored = s.load_checkpoint("c", definition.name)
        if stored is None or stored.upto_seq != 4:
            fail(("PRJ-031", "PRJ-032"), f"a refused catch-up moved the checkpoint: {stored!r}")
        everything = s.catch_up("c", counting(name="all"))
        if everything.upto_seq != 7:
            fail("PRJ-030", "a fold of every registered pair did not fold every event")

    run_once(ctx, body)


@check("PRJ-003", "PRJ-033", "PRJ-032", capability=PRJ)
def check_failing_folds_store_nothing(ctx: CheckContext) -> None:
    """PRJ-003, PRJ-032, PRJ-033: a fold that fails stores nothing; in-place folds stay private."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        for kind in FAILURES:
            definition = failing(kind)
            store.append(kind, drafts(kind, 2))
            s.catch_up(kind, definition)
            store.append(kind, [draft(f"next-{kind}")])
            before = s.load_checkpoint(kind, definition.name)
            refused(partial(s.catch_up, kind, definition), "invalid_input", "PRJ-033",
                    f"a fold that {kind}", store=store, touched=[kind])
            after = s.load_checkpoint(kind, definition.name)
            if before != after or (before and after and canonical.encode(before.state)
                                   != canonical.encode(after.state)):
                fail("PRJ-032", f"a failing fold ({kind}) changed the checkpoint")
        store.append("c", drafts("c", 2))
        slots = s.catch_up("c", STATE_SLOTS)
        if STATE_SLOTS.initial_state != {}:
            fail("PRJ-003", "an in-place fold changed the definition's initial state")
        assert isinstance(slots.state, dict)
        slots.state["injected"] = {"value": 1, "version": 1, "actor": "x", "seq": 1}
        again = s.load_checkpoint("c", STATE_SLOTS.name)
        if again is None or "injected" in (again.state or {}):  # type: ignore[operator]
            fail("PRJ-003", "a returned state shares objects with the stored checkpoint")

    run_once(ctx, body)


@check("PRJ-050", "PRJ-051", "PRJ-052", capability=PRJ)
def check_built_in_projections(ctx: CheckContext) -> None:
    """PRJ-050 .. PRJ-052: the summary and the state slots, by their exact states."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        first = "2024-05-01T10:00:00Z"
        store.append("c", [draft("a", 1, occurred_at=first), draft("b", 2),
                           draft("c", payload={"name": "other", "version": 3, "value": [1],
                                                "actor": "me"}),
                           draft("d", 4, occurred_at="2024-05-01T23:00:00.5+02:00")])
        store.append("c", [draft("e", kind="retry/started", payload={"attempt": 2},
                                 occurred_at="2024-05-02T00:00:00Z")])
        summary = s.catch_up("c", SUMMARY).state
        want_summary = {"events": 5, "byKind": {"state/set": 4, "retry/started": 1},
                        "firstOccurredAt": first, "lastOccurredAt": "2024-05-02T00:00:00Z",
                        "head": 5}
        if canonical.encode(summary) != canonical.encode(want_summary):
            fail(("PRJ-050", "PRJ-051"), f"the summary is {summary!r}")
        slots = s.catch_up("c", STATE_SLOTS).state
        want_slots = {"slot": {"value": 4, "version": 1, "actor": "conformance", "seq": 4},
                      "other": {"value": [1], "version": 3, "actor": "me", "seq": 3}}
        if canonical.encode(slots) != canonical.encode(want_slots):
            fail(("PRJ-050", "PRJ-052"), f"the state slots are {slots!r}")

    run_once(ctx, body)


@check("PRJ-040", "PRJ-044", capability=PRJ)
def check_checkpoints_travel_in_archives(ctx: CheckContext) -> None:
    """PRJ-040, PRJ-044: checkpoints in the companion, by name; re-import gives the same bytes."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("c", drafts("c", 6))
        plain = store.export_conversation("c")
        if b'"projections"' in plain:
            fail("PRJ-040", "an archive without checkpoints carries a projections companion")
        s.catch_up("c", counting(name="zeta"), max_events=4)
        s.catch_up("c", SUMMARY)
        data = store.export_conversation("c")
        document = canonical.decode(data)
        assert isinstance(document, dict)
        companions = document["companions"]
        assert isinstance(companions, dict)
        names = [item["name"] for item in companions.get("projections", [])]
        if names != ["convledger.summary", "zeta"]:
            fail("PRJ-040", f"the projections companion lists {names!r}")
        with fresh_store(ctx) as target:
            t = require(target, PRJ)
            accepted(partial(t.import_conversation, data, projections=[counting(name="zeta")]),
                     "PRJ-044", "import of checkpoints")
            if target.export_conversation("c") != data:
                fail("PRJ-044", "re-export of imported checkpoints gives other bytes")
            stored = t.load_checkpoint("c", "zeta")
            if stored is None or stored.upto_seq != 4:
                fail("PRJ-044", f"the imported checkpoint is {stored!r}")

    run_once(ctx, body)


def _tampered(data: bytes, change: object) -> bytes:
    document = canonical.decode(data)
    assert isinstance(document, dict) and callable(change)
    change(document["companions"])
    return canonical.encode(document)


@check("PRJ-041", "PRJ-042", "PRJ-043", capability=PRJ)
def check_checkpoint_imports_checked(ctx: CheckContext) -> None:
    """PRJ-041 .. PRJ-043: shapes, seqs beyond the ledger, states that lie, unknown definitions."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("c", drafts("c", 5))
        s.catch_up("c", counting(name="b"), max_events=3)
        s.catch_up("c", SUMMARY)
        data = store.export_conversation("c")
        mine = [counting(name="b")]

        def item(companions: dict[str, list[dict[str, object]]], index: int) -> dict[str, object]:
            return companions["projections"][index]

        cases: list[tuple[str, str, str, object]] = [
            ("PRJ-042", "integrity", "uptoSeq beyond the ledger",
             lambda c: item(c, 1).update(uptoSeq=6)),
            ("PRJ-042", "integrity", "a summary that lies",
             lambda c: item(c, 0)["state"].update(events=9)),  # type: ignore[attr-defined]
            ("PRJ-042", "integrity", "a custom state that lies",
             lambda c: item(c, 1).update(state={"count": 3, "seqs": [1, 2, 4]})),
            ("PRJ-043", "invalid_input", "an unknown version",
             lambda c: item(c, 1).update(version=2)),
            ("PRJ-041", "invalid_input", "names out of order",
             lambda c: c["projections"].reverse()),
            ("PRJ-041", "invalid_input", "an extra member",
             lambda c: item(c, 0).update(extra=1)),
            ("PRJ-041", "invalid_input", "an empty companion",
             lambda c: c["projections"].clear()),
        ]
        with fresh_store(ctx) as target:
            t = require(target, PRJ)
            for requirement, kind, what, change in cases:
                refused(partial(t.import_conversation, _tampered(data, change), projections=mine),
                        kind, requirement, what, store=target, touched=["c"])
            refused(partial(t.import_conversation, data), "invalid_input", "PRJ-043",
                    "import without the custom definition", store=target, touched=["c"])
            if target.head("c") != 0 or t.load_checkpoint("c", "b") is not None:
                fail("PRJ-042", "a refused import left something behind")

    run_once(ctx, body)


@check("PRJ-016", "SPL-032", capability=PRJ, also=(Capability.PURGE, Capability.SPILLS))
def check_purge_takes_checkpoints_and_spills(ctx: CheckContext) -> None:
    """PRJ-016, SPL-032: a purge deletes checkpoints and spills; catch-up is then purged."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        spills = require(store, Capability.SPILLS)
        store.append("c", drafts("c", 3))
        s.catch_up("c", SUMMARY)
        spills.put_spill("c", b"x", media_type="text/plain", reference="r",
                    operation={"operationId": "op", "authorization": {}},
                    event_id="spill", occurred_at="2024-01-01T00:00:00Z")
        require(store, Capability.PURGE).purge("c")
        if s.load_checkpoint("c", SUMMARY.name) is not None:
            fail("PRJ-016", "a purged conversation keeps its checkpoint")
        refused(partial(spills.get_spill, "c", "r", authorize=lambda _: True), "not_found",
                "SPL-032", "get_spill after a purge")
        refused(partial(s.catch_up, "c", SUMMARY), "purged", "PRJ-016", "catch_up after purge")
        if s.load_checkpoint("c", SUMMARY.name) is not None:
            fail("PRJ-016", "a refused catch-up of a purged conversation stored a checkpoint")

    run_once(ctx, body)


@check("PRJ-012", "PRJ-013", "PRJ-020", "PRJ-014", capability=PRJ)
def check_projection_machine(ctx: CheckContext) -> None:
    """PRJ-012 .. PRJ-020: random programs keep every checkpoint exact, bounded and monotone."""
    machine = build_projection_machine(ctx.factory)
    run_state_machine_as_test(machine, settings=scaled(ctx.profile, share=0.5))
