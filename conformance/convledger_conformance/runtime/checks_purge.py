"""Checks of chapter TRN, section Purge (TRN-090 .. TRN-096) and the ``purged`` kind (ERR-001).

Purge needs capability ``purge`` only; the parts that need runs (an active
run blocks a purge, a purged conversation refuses transitions) run when the
store declares ``transitions`` as well. The state machine of
:mod:`convledger_conformance.runtime.machine` purges in random programs too.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Final

from hypothesis.stateful import run_state_machine_as_test

from convledger.envelope import EventDraft
from convledger.interface import require
from convledger.runtime import Accept, Acquire, PurgeOutcome, Terminal
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.profiles import scaled
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.checks_transitions import Driver, fence_of
from convledger_conformance.runtime.machine import PURGE_IDS, build_runtime_machine
from convledger_conformance.support import (
    STAMP,
    accepted,
    draft,
    drafts,
    fail,
    fresh_store,
    ledger_bytes,
    refused,
    run_once,
)

PURGE: Final = Capability.PURGE
TRANSITIONS: Final = Capability.TRANSITIONS





def _seed(store: LedgerStore, conversation: str, batch: list[EventDraft],
          ids: tuple[str, ...]) -> None:
    """An append that sets a purge check's scene; its refusal fails the append's id (LED-002)
    beside the purge's, so a broken append is not reported as a broken purge only."""
    accepted(partial(store.append, conversation, batch), ids,
             f"an append of {len(batch)} valid drafts to {conversation!r} before the purge")

@check("TRN-090", "TRN-093", "TRN-094", "LED-002", capability=PURGE, optional=(TRANSITIONS,))
def check_purge_answers_and_reads(ctx: CheckContext) -> None:
    """TRN-090, TRN-093, TRN-094: purged, then already_purged; reads as if never there."""

    def body(given: LedgerStore) -> None:
        store = require(given, PURGE)
        _seed(store, "gone", drafts("gone", 3), ("TRN-090", "LED-002"))
        _seed(store, "kept", drafts("kept", 2), ("TRN-090", "LED-002"))
        kept = ledger_bytes(store, "kept")
        if TRANSITIONS in store.capabilities:
            driver = Driver(require(store, TRANSITIONS), ("TRN-093",))
            run = driver.owned("gone", "r")
            driver.apply("gone", Terminal("r", fence_of(run), "success", {"text": "done"}))
        for conversation, what in (("gone", "a conversation"), ("never", "a new id")):
            answer = accepted(partial(store.purge, conversation), "TRN-090", f"purge of {what}")
            if answer is not PurgeOutcome.PURGED:
                fail("TRN-090", f"purge of {what} answered {answer!r}, not purged")
            again = accepted(partial(store.purge, conversation), "TRN-090",
                             f"second purge of {what}")
            if again is not PurgeOutcome.ALREADY_PURGED:
                fail("TRN-090", f"a second purge of {what} answered {again!r}")
        page = store.read("gone")
        if store.head("gone") != 0 or page.items or page.next_seq is not None:
            fail(("TRN-093", "TRN-094"), "the purged conversation still has events")
        refused(partial(store.export_conversation, "gone"), "not_found", "TRN-094",
                "export of a purged conversation")
        if TRANSITIONS in store.capabilities:
            runs = require(store, TRANSITIONS)
            if runs.load_run("gone", "r") is not None or runs.list_active_runs("gone"):
                fail(("TRN-093", "TRN-094"), "the purged conversation still has runs")
            refused(partial(runs.load_snapshot, "gone"), "not_found", "TRN-094",
                    "load_snapshot of a purged conversation")
        if ledger_bytes(store, "kept") != kept:
            fail("TRN-093", "a purge changed another conversation")

    run_once(ctx, body)


@check("TRN-092", "ERR-001", "LED-002", capability=PURGE)
def check_purged_conversation_refuses_writes(ctx: CheckContext) -> None:
    """TRN-092, ERR-001: append, transition and import of a purged conversation are purged."""

    def body(given: LedgerStore) -> None:
        store = require(given, PURGE)
        _seed(store, "c", drafts("c", 2), ("TRN-092", "LED-002"))
        data = store.export_conversation("c")
        store.purge("c")
        for expected_head in (None, 0):
            refused(partial(store.append, "c", [draft("late")], expected_head=expected_head),
                    "purged", ("TRN-092", "ERR-001"), "append to a purged conversation",
                    store=store, touched=["c"])
        refused(partial(store.import_conversation, data), "purged", ("TRN-092", "ERR-001"),
                "import of a purged conversation", store=store, touched=["c"])
        if TRANSITIONS in store.capabilities:
            accept = Accept("k", "in", "run", "answer", {"text": "late"})
            refused(partial(require(store, TRANSITIONS).transition, "c", accept, event_id="late-t",
                            occurred_at=STAMP), "purged", ("TRN-092", "ERR-001"),
                    "transition of a purged conversation", store=store, touched=["c"])
        refused(partial(store.append, "c", [draft("late-again")]), "purged", "TRN-092",
                "a second append to a purged conversation", store=store, touched=["c"])
        if Capability.PERSISTENCE in store.capabilities:
            reopened = require(store, Capability.PERSISTENCE).reopen()
            try:
                refused(partial(reopened.append, "c", [draft("after-reopen")]), "purged",
                        "TRN-092", "append after reopen", store=reopened, touched=["c"])
            finally:
                reopened.close()

    with fresh_store(ctx) as store:
        body(store)


@check("TRN-092", "TRN-009", capability=PURGE, also=(TRANSITIONS,))
def check_purged_run_named_again(ctx: CheckContext) -> None:
    """TRN-092, TRN-009: a transition naming a run the purged conversation had is purged.

    ``purged`` comes before ``not_found`` (TRN-009), so a transition that a fresh
    state would answer ``not_found`` is refused ``purged`` like one that would apply;
    a store that checks the purge only on the way to applying answered the former
    (found by mutation testing, ``scripts/mutation.py``).
    """

    def body(given: LedgerStore) -> None:
        store = require(given, PURGE)
        driver = Driver(require(store, TRANSITIONS), ("TRN-092",))
        run = driver.owned("c", "r")
        ended = Terminal("r", fence_of(run), "success", {"text": "done"})
        driver.apply("c", ended)
        store.purge("c")
        for transition, what in ((ended, "ending its ended run 'r' again"),
                                 (Acquire("r", "w"), "acquiring its run 'r'")):
            refused(partial(require(store, TRANSITIONS).transition, "c", transition,
                            event_id="late-t", occurred_at=STAMP), "purged",
                    ("TRN-092", "TRN-009"),
                    f"transition of a purged conversation {what} (not_found on a "
                    "conversation that never existed; purged comes first)",
                    store=store, touched=["c"])

    run_once(ctx, body)


@check("TRN-091", capability=PURGE, also=(TRANSITIONS,))
def check_purge_blocked_by_an_active_run(ctx: CheckContext) -> None:
    """TRN-091: a purge with an active run is a conflict and changes nothing.

    An active run needs capability transitions: without it the precondition
    cannot be established, so the check is not run and TRN-091 is
    ``not_applicable`` with that reason (it passed vacuously before).
    """

    def body(given: LedgerStore) -> None:
        store = require(given, PURGE)
        runs = require(store, TRANSITIONS)
        driver = Driver(runs, ("TRN-091",))
        driver.admit("c", "r")
        before = runs.load_snapshot("c")
        refused(partial(store.purge, "c"), "conflict", "TRN-091", "purge with a queued run",
                store=store, touched=["c"])
        if runs.load_snapshot("c") != before:
            fail("TRN-091", "a refused purge changed the records")
        run = driver.acquire("c", "r")
        refused(partial(store.purge, "c"), "conflict", "TRN-091", "purge with a running run",
                store=store, touched=["c"])
        driver.apply("c", Terminal("r", fence_of(run), "success", {"text": "done"}))
        if store.purge("c") is not PurgeOutcome.PURGED:
            fail("TRN-091", "purge after the last run ended did not apply")

    run_once(ctx, body)


@check("TRN-095", "TRN-092", "LED-002", capability=PURGE)
def check_purge_fences_concurrent_writers(ctx: CheckContext) -> None:
    """TRN-095: writes racing a purge on one handle land before it (and go) or are refused.

    A handle opened before the purge (a second connection of a store that
    persists) is the stronger case; stores with several handles add it in their
    own chapter's checks. Here every writer shares the handle that purges.
    """

    def body(given: LedgerStore) -> None:
        store = require(given, PURGE)
        _seed(store, "c", [draft("seed")], ("TRN-095", "LED-002"))
        barrier = threading.Barrier(3)
        crashes: list[BaseException] = []
        refusals: list[str] = []

        def writer(name: str) -> None:
            barrier.wait()
            for n in range(20):
                try:
                    store.append("c", [draft(f"{name}-{n}")])
                except Exception as error:  # judged below
                    refusals.append(getattr(error, "kind", repr(error)))

        def purger() -> None:
            barrier.wait()
            try:
                store.purge("c")
            except BaseException as error:
                crashes.append(error)

        threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(2)]
        threads.append(threading.Thread(target=purger))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if crashes:
            fail("TRN-095", f"the purge failed: {crashes[0]!r}")
        if set(refusals) - {"purged"}:
            fail("TRN-092", f"writes racing a purge were refused as {sorted(set(refusals))}")
        if store.head("c") != 0 or read_whole(store, "c"):
            fail("TRN-095", "an append racing the purge left events behind it")
        if Capability.PERSISTENCE in store.capabilities:
            reopened = require(store, Capability.PERSISTENCE).reopen()
            try:
                if reopened.head("c") != 0:
                    fail("TRN-095", "events of a purged conversation came back on reopen")
            finally:
                reopened.close()

    with fresh_store(ctx) as store:
        body(store)


@check("TRN-096", "LED-002", capability=PURGE)
def check_purged_event_ids_may_return(ctx: CheckContext) -> None:
    """TRN-096: a purged eventId is either accepted again elsewhere or refused as duplicate."""

    def body(given: LedgerStore) -> None:
        store = require(given, PURGE)
        _seed(store, "c", [draft("reused")], ("TRN-096", "LED-002"))
        store.purge("c")
        try:
            placed = store.append("d", [draft("reused")])
        except Exception as error:
            if getattr(error, "kind", None) != "duplicate":
                fail("TRN-096", f"an append of a purged eventId raised {error!r}")
            return
        if [e.event_id for e in read_whole(store, "d")] != ["reused"] or placed[0].seq != 1:
            fail("TRN-096", "a purged eventId accepted again was not stored")

    run_once(ctx, body)


@check(*PURGE_IDS, capability=PURGE, also=(TRANSITIONS,))
def check_runtime_state_machine_with_purge(ctx: CheckContext) -> None:
    """TRN-090 .. TRN-094: random programs that also purge agree with the reference rules.

    A store declaring purge without transitions has no runs to program: the
    machine is not run there, and the ledger-only purge checks above judge
    TRN-090, TRN-092 .. TRN-094 alone (TRN-091, which needs an active run, is
    then ``not_applicable``).
    """
    machine = build_runtime_machine(ctx.factory, purge=True)
    run_state_machine_as_test(machine, settings=scaled(ctx.profile, share=0.5))
