"""Checks of chapter PRJ: definitions, honest checkpoints and versions (PRJ-001 .. PRJ-020).

Every expected state is folded by the check itself from the events it reads
(:mod:`convledger_conformance.projections.model`), never taken from the store.
The rest of the chapter is checked in
:mod:`~convledger_conformance.projections.checks_folds` (unknown kinds, failing
folds, built-in projections) and
:mod:`~convledger_conformance.projections.checks_archives` (archives, purge,
and the state machine of :mod:`convledger_conformance.projections.machine`,
which runs the same invariants over random programs).
"""

from __future__ import annotations

import contextlib
import threading
import time
from functools import partial
from typing import Final

import attrs
from hypothesis import strategies as st

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.errors import LedgerError
from convledger.interface import require
from convledger.projections import ProjectionDefinition
from convledger.projections.store import ProjectionStore
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.handles_support import second_handles
from convledger_conformance.projections.model import counting, expected_state, ledger, loose
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spec_values import CATCH_UP_MAX_EVENTS
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


DEFAULT_MAX_EVENTS: Final = CATCH_UP_MAX_EVENTS
"""PRJ-011's default ``maxEvents``, from ``spec/limits.json``, never from the reference."""


@check("PRJ-011", capability=PRJ)
def check_catch_up_default_bound(ctx: CheckContext) -> None:
    """PRJ-011: without maxEvents a catch-up folds 10 000 events; a bound past a page holds.

    Found by mutation testing (``scripts/mutation.py``, ``projections/fold.py``): no check
    caught up more than 10 000 events without a bound, and none bounded a catch-up between
    two pages of the store's reads, so a default of 10 001 or a last page read to its full
    size went unseen.
    """

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        definition = counting()
        store.append("c", drafts("c", DEFAULT_MAX_EVENTS))
        store.append("c", drafts("more", 1))
        first = accepted(partial(s.catch_up, "c", definition), "PRJ-011",
                         "catch_up of 10 001 events without maxEvents")
        if first.upto_seq != DEFAULT_MAX_EVENTS:
            fail("PRJ-011", f"catch_up without maxEvents reached uptoSeq {first.upto_seq}, "
                            f"not {DEFAULT_MAX_EVENTS}")
        if s.catch_up("c", definition).upto_seq != DEFAULT_MAX_EVENTS + 1:
            fail("PRJ-011", "the second catch_up without maxEvents did not reach the head")
        store.append("p", drafts("p", 2_500))
        bounded = s.catch_up("p", definition, max_events=1_500)
        if bounded.upto_seq != 1_500:
            fail("PRJ-011", f"catch_up(max_events=1500) of 2500 events reached uptoSeq "
                            f"{bounded.upto_seq}")
        _same_state(s, "p", definition, "PRJ-011", "after a catch-up bounded inside a page")

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


HOLD_SECONDS = 1.0
"""How long the held catch-up waits, at most, for the other one to finish once the other has
started to fold (a store may let both fold and still make the other's write wait)."""
REACH_FACTOR = 20
REACH_FLOOR = 0.2
"""The other catch-up gets :data:`REACH_FACTOR` times as long as the held one took from its
start to its fold (same store, same machine, same load), at least :data:`REACH_FLOOR` seconds
and at most :data:`HOLD_SECONDS`, to reach its own first fold. A store that keeps it from
folding that long serializes the two (the memory store's lock, SQLite's ``BEGIN IMMEDIATE``),
so the held one is released then: the other could only wait."""
JOIN_SECONDS = 30.0
"""How long each catch-up may take after the release (bounded: a store must fail, not hang)."""


@check("PRJ-011", "PRJ-013", capability=PRJ)
def check_held_catch_up_never_regresses(ctx: CheckContext) -> None:
    """PRJ-011, PRJ-013: a catch-up held between its read and its write never moves uptoSeq back.

    The fold is the suite's, so it forces the interleaving instead of waiting for
    it: the fold of a ``max_events=1`` catch-up blocks on its first event while a
    second catch-up (on a second handle when the store declares ``multi_process``)
    folds all ten; then it is released. The race is forced whenever the store lets
    the second catch-up call the fold within the reach window (:data:`REACH_FACTOR`):
    the first is then held until the second ends (or :data:`HOLD_SECONDS`). A store
    that serializes the two keeps the second from folding (the memory store does): it
    is tried while the first is held, and the first is released at the window's end.
    The verdict is on the checkpoint stored at the end.
    """
    ids = ("PRJ-011", "PRJ-013")
    plain_definition = counting()
    held = threading.Event()
    release = threading.Event()
    progress = threading.Event()  # the second catch-up folded or ended
    reached: list[float] = []  # when the held catch-up reached its fold

    def fold(state: JsonValue, envelope: Envelope) -> JsonValue:
        # the first fold of the check is the held catch-up's (the second starts after it);
        # not told by thread: over the wire the client calls the fold from its own thread
        if not held.is_set():
            reached.append(time.monotonic())
            held.set()
            release.wait(JOIN_SECONDS)
        else:
            progress.set()  # the first is held: this fold is the second catch-up's
        return plain_definition.fold(state, envelope)

    definition = attrs.evolve(plain_definition, fold=fold)
    with fresh_store(ctx) as store, contextlib.ExitStack() as stack:
        s = require(store, PRJ)
        other = s
        if Capability.MULTI_PROCESS in store.capabilities:
            (handle,) = stack.enter_context(second_handles(store, 1, ids))
            other = require(handle, PRJ)
        store.append("c", drafts("held", 10))
        answers: dict[str, int] = {}
        crashes: list[BaseException] = []

        def catch_up(on: ProjectionStore, name: str, bound: int) -> None:
            # unheld (the fold was never called), the second catch-up folds by name
            used = definition if name == "held" or held.is_set() else plain_definition
            try:
                answers[name] = on.catch_up("c", used, max_events=bound).upto_seq
            except LedgerError as error:
                unnamed = error.kind == "invalid_input" and not held.is_set()  # WIR-018
                if error.kind != "conflict" and not unnamed:  # conflict: PRJ-013's refusal
                    crashes.append(error)
            except BaseException as error:
                crashes.append(error)
            finally:
                if name == "second":
                    progress.set()

        first = threading.Thread(target=catch_up, args=(s, "held", 1), name="held", daemon=True)
        second = threading.Thread(target=catch_up, args=(other, "second", 10), daemon=True)
        started = time.monotonic()
        first.start()
        try:
            # A store that folds with its own copy of the definition (over the wire folds
            # travel by name, WIR-018) never calls this fold: the race is then not forced,
            # and only the verdict below is checked.
            deadline = time.monotonic() + JOIN_SECONDS
            while not held.wait(0.05) and first.is_alive() and time.monotonic() < deadline:
                pass
            if not held.is_set() and first.is_alive():
                fail("PRJ-011", "catch_up(max_events=1) of 10 events did not end in"
                                f" {JOIN_SECONDS:.0f} s and never called the fold")
            window = HOLD_SECONDS
            if reached:
                window = min(HOLD_SECONDS, max(REACH_FLOOR, REACH_FACTOR * (reached[0] - started)))
            second.start()
            if progress.wait(window):  # a serializing store keeps it waiting: that is fine
                second.join(HOLD_SECONDS)  # it folds: held until it ends
        finally:
            release.set()
        for thread in (first, second):
            thread.join(JOIN_SECONDS)
            if thread.is_alive():
                fail(ids, f"a catch-up did not finish {JOIN_SECONDS:.0f} s after the release")
        if crashes:
            fail(ids, f"a held or concurrent catch-up failed: {crashes[0]!r}")
        stored = s.load_checkpoint("c", definition.name)
        actual = 0 if stored is None else stored.upto_seq
        highest = max(answers.values(), default=0)
        if actual < highest:
            fail(ids, f"catch_up(max_events=1), held between its read and its write while"
                      f" another catch_up(max_events=10) stored uptoSeq {highest}: expected the"
                      f" stored uptoSeq to stay {highest}, actual {actual}")
        _same_state(s, "c", plain_definition, ids, "after the held catch-up")
