"""Checks of chapter PRJ: unknown kinds, failing folds and the built-in projections.

Unknown kinds in a fold (PRJ-030 .. PRJ-032, RPL-005); a failing fold stores
nothing (PRJ-003, PRJ-032, PRJ-033); the built-in projections (PRJ-050 ..
PRJ-052). Every expected state is folded by the check itself
(:mod:`convledger_conformance.projections.model`), never taken from the store.
"""

from __future__ import annotations

from functools import partial

from convledger import canonical
from convledger.interface import require
from convledger.projections import STATE_SLOTS, SUMMARY
from convledger.projections.named import FAILURES, failing
from convledger.store import LedgerStore
from convledger_conformance.projections.checks import PRJ, _same_state
from convledger_conformance.projections.model import counting
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import draft, drafts, fail, refused, run_once

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
