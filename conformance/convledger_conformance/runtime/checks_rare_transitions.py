"""Checks of chapter TRN: transitions the state machine reaches rarely (TRN-004 .. TRN-065).

Coalescing, placement and absorption (TRN-023, TRN-024, TRN-032, TRN-034,
TRN-065); a checkpoint records the summary only (TRN-041, TRN-043, TRN-102);
stale fences are conflicts that change nothing (TRN-040, TRN-053, TRN-060,
TRN-004); idempotency keys answer forever (TRN-020, TRN-021). The helpers are
those of :mod:`convledger_conformance.runtime.checks_transitions`.
"""

from __future__ import annotations

import hashlib
from functools import partial

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.interface import require
from convledger.runtime import (
    Accept,
    Checkpoint,
    Fence,
    Interrupt,
    Operation,
    Recover,
    Terminal,
    Transition,
)
from convledger.store import LedgerStore
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.checks_transitions import TRANSITIONS, Driver, fence_of
from convledger_conformance.support import STAMP, accepted, fail, ledger_bytes, run_once


@check("TRN-023", "TRN-024", "TRN-032", "TRN-034", "TRN-064", "TRN-065", capability=TRANSITIONS)
def check_coalescing_placement_and_absorption(ctx: CheckContext) -> None:
    """TRN-023, TRN-032, TRN-065: a burst joins one run; later runs are absorbed, never placed.

    TRN-064: a run that ended cannot be absorbed later (a conflict that writes nothing; the
    mutation run of issue 37 found no check reaching this conflict at smoke).
    """
    ids = ("TRN-023", "TRN-024", "TRN-032", "TRN-034", "TRN-065")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ids)
        driver.admit("c", "r1", text="one")
        driver.apply("c", Accept("k2", "in-2", "unused-run", "unused-answer", {"text": "two"}))
        run = store.load_run("c", "r1")
        if run is None or run.input_ids != ("r1-input", "in-2") or run.revision != 1:
            fail("TRN-023", f"a second input before the acquire did not coalesce: {run!r}")
        if store.load_run("c", "unused-run") is not None:
            fail("TRN-023", "the proposed run of a coalesced input was created")
        acquired = driver.acquire("c", "r1")
        driver.admit("c", "r2")
        driver.apply("c", Accept("k3", "in-3", "r3", "r3-answer", {"text": "three"}))
        queued = store.load_run("c", "r2")
        if queued is None or queued.input_ids != ("r2-input", "in-3"):
            fail("TRN-024", f"inputs after the acquire go to one new run: {queued!r}")
        history = [(m.message_id, m.position) for m in store.load_snapshot("c").messages]
        if history != [("r1-input", 1), ("in-2", 2), ("r1-answer", 3)]:
            fail(("TRN-032", "TRN-034"), f"history after the first acquire is {history}")
        driver.apply("c", Terminal("r1", fence_of(acquired), "success", {"text": "both"},
                                   absorb_run_ids=("r2",)))
        absorbed = store.load_run("c", "r2")
        if absorbed is None or absorbed.state.value != "superseded" or (
            absorbed.reason, absorbed.absorbed_into_run_id) != ("absorbed", "r1"):
            fail("TRN-065", f"the absorbed run is {absorbed!r}")
        statuses = [(m.message_id, m.status.value) for m in store.load_snapshot("c").messages]
        if statuses != [("r1-input", "final"), ("in-2", "final"), ("r1-answer", "final")]:
            fail("TRN-065", f"absorption placed or changed messages: {statuses}")
        late = driver.owned("c", "r4")
        head = store.head("c")
        outcome = accepted(partial(store.transition, "c", Terminal(
            "r4", fence_of(late), "success", {"text": "late"}, absorb_run_ids=("r1",)),
            event_id=driver.event_id(), occurred_at=STAMP), "TRN-064", "absorbing an ended run")
        if outcome.status.value != "conflict" or store.head("c") != head:
            fail(("TRN-064", "TRN-004"), f"a terminal absorbing the ended run r1 answered "
                 f"{outcome!r} (expected conflict, nothing written)")

    run_once(ctx, body)


@check("TRN-041", "TRN-043", "TRN-102", capability=TRANSITIONS)
def check_checkpoint_records_the_summary_only(ctx: CheckContext) -> None:
    """TRN-041: the ledger holds the draft's hash, parts and bytes; the message holds the draft."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ("TRN-041", "TRN-043"))
        run = driver.owned("c", "r")
        body_draft: dict[str, JsonValue] = {"id": "d", "status": "partial",
                                            "parts": [{"text": "é\x00\U0001f600"}, 1.5]}
        driver.apply("c", Checkpoint("r", fence_of(run), body_draft))
        encoded = canonical.encode(body_draft)
        want = {"id": "d", "status": "partial", "sha256": hashlib.sha256(encoded).hexdigest(),
                "parts": 2, "bytes": len(encoded)}
        event = read_whole(store, "c")[-1]
        payload = event.payload
        assert isinstance(payload, dict)
        recorded = payload["input"]
        assert isinstance(recorded, dict)
        if recorded.get("draft") != want:
            fail("TRN-041", f"the recorded draft is {recorded.get('draft')!r}, expected {want!r}")
        if "é\x00\U0001f600" in canonical.encode(payload).decode():
            fail("TRN-041", "the draft's content is in the ledger")
        answer = store.load_snapshot("c").messages[-1]
        if answer.status.value != "draft" or answer.content != body_draft or (
            answer.draft is None or answer.draft.to_json() != want
        ):
            fail(("TRN-043", "TRN-102"), f"the drafted answer is {answer!r}")

    run_once(ctx, body)


@check("TRN-040", "TRN-060", "TRN-053", "TRN-004", capability=TRANSITIONS)
def check_stale_fences_are_conflicts(ctx: CheckContext) -> None:
    """TRN-040, TRN-060: a stale owner, revision or token is a conflict that writes nothing."""
    ids = ("TRN-040", "TRN-060")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ids)
        run = driver.owned("c", "r")
        fence = fence_of(run)
        stale = (
            Fence(fence.owner + "-other", fence.revision, fence.fencing_token),
            Fence(fence.owner, fence.revision + 1, fence.fencing_token),
            Fence(fence.owner, fence.revision - 1, fence.fencing_token),
            Fence(fence.owner, fence.revision, fence.fencing_token + 1),
        )
        calls: list[Transition] = []
        for spoiled in stale:
            calls += [
                Checkpoint("r", spoiled, {"id": "d", "status": "s", "parts": []}),
                Operation("r", spoiled, {"tool": "t"}),
                Terminal("r", spoiled, "success", {"text": "late"}),
            ]
        calls.append(Recover("r", run.revision + 1, "abandon", {}))
        for transition in calls:
            before = (ledger_bytes(store, "c"), store.load_snapshot("c"))
            outcome = accepted(partial(store.transition, "c", transition,
                                       event_id=driver.event_id(), occurred_at=STAMP),
                               ids, f"{transition!r}")
            if outcome.status.value != "conflict" or outcome.version != before[1].head.version:
                fail(("TRN-040", "TRN-060", "TRN-053"), f"{transition!r} answered {outcome!r}, "
                     "expected a conflict at the current version")
            if (ledger_bytes(store, "c"), store.load_snapshot("c")) != before:
                fail("TRN-004", f"the conflicting {transition!r} changed something")
        driver.apply("c", Recover("r", run.revision, "requeue", {"replaySafe": True}))
        again = driver.acquire("c", "r", owner="w2")
        late = Terminal("r", fence, "success", {"text": "from the first owner"})
        outcome = store.transition("c", late, event_id=driver.event_id(), occurred_at=STAMP)
        if outcome.status.value != "conflict":
            fail(("TRN-040", "TRN-060"), f"the first owner ended a run it lost: {outcome!r}")
        driver.apply("c", Terminal("r", fence_of(again), "success", {"text": "done"}))

    run_once(ctx, body)


@check("TRN-020", "TRN-021", capability=TRANSITIONS)
def check_idempotency_keys_answer_forever(ctx: CheckContext) -> None:
    """TRN-021: a key answers duplicate with its first ids after its run ended or was absorbed."""
    ids = ("TRN-020", "TRN-021")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ids)
        first = driver.owned("c", "r1")
        driver.admit("c", "r2")
        driver.apply("c", Terminal("r1", fence_of(first), "success", {"text": "both"},
                                   absorb_run_ids=("r2",)))
        driver.admit("c", "r3")
        driver.apply("c", Interrupt("r3"))
        for name in ("r1", "r2", "r3"):
            head = store.head("c")
            again = Accept(f"{name}-key", "other-input", "other-run", "other-answer",
                           {"text": "retry"})
            outcome = accepted(partial(store.transition, "c", again,
                                       event_id=driver.event_id(), occurred_at=STAMP),
                               ids, f"retry of {name}-key")
            got = outcome.admitted
            if outcome.status.value != "duplicate" or got is None or (
                got.input_id, got.run_id, got.assistant_message_id
            ) != (f"{name}-input", name, f"{name}-answer"):
                fail("TRN-021", f"a retry of {name}-key after its run ended answered "
                     f"{outcome!r}")
            if store.head("c") != head:
                fail("TRN-021", "a duplicate accept appended an event")

    run_once(ctx, body)
