"""Checks of chapter TRN, bounded reads: lookups, keyset paging and snapshots (TRN-080 .. TRN-085).

``load_run`` stays in its conversation (TRN-080); ``scan_recoverable`` pages
over many conversations in code-point order (TRN-081, TRN-083 .. TRN-085);
``load_snapshot`` before and after the first transition (TRN-082, TRN-010).
The helpers are those of :mod:`convledger_conformance.runtime.checks_transitions`.
"""

from __future__ import annotations

from functools import partial
from typing import cast

from convledger.interface import require
from convledger.runtime import Accept, Acquire, RecoveryCursor, Terminal
from convledger.runtime.store import TransitionStore
from convledger.store import LedgerStore
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.checks_transitions import TRANSITIONS, Driver, fence_of
from convledger_conformance.spec_values import BOUNDS
from convledger_conformance.support import draft, fail, refused, run_once, untyped

MAX_SCAN_LIMIT = next(b.maximum for b in BOUNDS if b.name == "scanRecoverableLimit")
"""TRN-083's largest ``limit``, from spec/limits.json."""


@check("TRN-080", capability=TRANSITIONS)
def check_load_run_stays_in_its_conversation(ctx: CheckContext) -> None:
    """TRN-080: load_run finds a run only in its own conversation, even with a shared run id."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ("TRN-080",))
        driver.apply("a", Accept("k", "in-a", "shared", "ans-a", {"text": "a"}))
        driver.apply("a", Accept("k2", "in-a2", "only-a", "ans-a2", {"text": "a2"}))
        if store.load_run("b", "only-a") is not None:
            fail("TRN-080", "load_run('b', 'only-a') returned conversation a's run")
        driver.apply("b", Accept("k", "in-b", "shared", "ans-b", {"text": "b"}))
        for conversation in ("a", "b"):
            run = store.load_run(conversation, "shared")
            if run is None or run.conversation_id != conversation or (
                run.assistant_message_id != f"ans-{conversation}"
            ):
                fail("TRN-080", f"load_run({conversation!r}, 'shared') is {run!r}")
        if store.load_run("never", "shared") is not None:
            fail("TRN-080", "load_run of a conversation without runs found a run")
        if store.list_active_runs("never") != ():
            fail("TRN-080", "list_active_runs of a conversation without runs is not empty")

    run_once(ctx, body)


SCAN_CONVERSATIONS = ("z", "a\x00b", "\U0001f600", "Z", "a", "\uffff", "\u00e9", "a\x01")
"""Conversation ids whose code-point order differs from UTF-16 and locale orders (TRN-085)."""


@check("TRN-081", "TRN-083", "TRN-084", "TRN-085", capability=TRANSITIONS)
def check_scan_recoverable_pages_in_code_point_order(ctx: CheckContext) -> None:
    """TRN-083 .. TRN-085: keyset pages of owned runs by code points, then ordinal; bounds."""
    ids = ("TRN-083", "TRN-084", "TRN-085")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ids)
        for conversation in SCAN_CONVERSATIONS:
            first = driver.owned(conversation, "r1")
            driver.apply(conversation, Terminal("r1", fence_of(first), "success", {"t": 1}))
            driver.admit(conversation, "r2")  # ordinal 2, queued: not recoverable yet
            driver.acquire(conversation, "r2")
            driver.admit(conversation, "r3")  # queued behind r2
            active = [run.run_id for run in store.list_active_runs(conversation)]
            if active != ["r2", "r3"]:
                fail("TRN-081", f"active runs of {conversation!r} are {active}, not by ordinal")
        order = sorted(SCAN_CONVERSATIONS, key=lambda c: c.encode("utf-8"))
        want = [(c, 2) for c in order]
        for limit in (1, 2, 3, len(want), len(want) + 1, 1000):
            got: list[tuple[str, int]] = []
            after: RecoveryCursor | None = None
            pages = 0
            while True:
                page = store.scan_recoverable(after=after, limit=limit)
                pages += 1
                if len(page.runs) > limit:
                    fail("TRN-083", f"a page of limit {limit} returned {len(page.runs)} runs")
                got.extend((run.conversation_id, run.ordinal) for run in page.runs)
                more = len(got) < len(want)
                if (page.next is not None) != more:
                    fail("TRN-084", f"limit {limit}: next is {page.next!r} with "
                         f"{len(want) - len(got)} runs to come")
                if page.next is None:
                    break
                if page.next != RecoveryCursor.after(page.runs[-1]):
                    fail("TRN-084", f"next {page.next!r} is not the last returned run")
                after = page.next
                if pages > len(want) + 1:
                    fail("TRN-084", "following the cursor does not end")
            if got != want:
                fail(("TRN-083", "TRN-085"), f"limit {limit}: scanned {got!r}, expected the "
                     f"code-point order {want!r}")
        whole = store.scan_recoverable()
        if [(r.conversation_id, r.ordinal) for r in whole.runs] != want or whole.next is not None:
            fail("TRN-083", "the default limit is not 100")
        middle = store.scan_recoverable(after=RecoveryCursor("a", 5), limit=1000)
        if [(r.conversation_id, r.ordinal) for r in middle.runs] != want[2:]:
            fail("TRN-083", f"after ('a', 5) scanned {middle.runs!r}")
        loose = untyped(store)
        bad_limits: tuple[object, ...] = (0, 1001, -1, True, 1.5, "2", None)
        for bad in bad_limits:
            refused(partial(loose.scan_recoverable, limit=bad), "invalid_input", "TRN-083",
                    f"scan_recoverable(limit={bad!r})")
        bad_cursors: tuple[object, ...] = (
            ("a", 1), RecoveryCursor("", 1), RecoveryCursor("a", cast(int, "1")),
            RecoveryCursor("a", True), "a",
        )
        for cursor in bad_cursors:
            refused(partial(loose.scan_recoverable, after=cursor), "invalid_input", "TRN-083",
                    f"scan_recoverable(after={cursor!r})")
        # the default limit with more than 100 recoverable runs (issue 37: 101 survived)
        for number in range(101 - len(want)):
            driver.owned(f"z-{number:03}", "r")
        page = store.scan_recoverable()
        if len(page.runs) != 100 or page.next is None:
            fail("TRN-083", f"with 101 recoverable runs the default page holds "
                            f"{len(page.runs)} runs, next {page.next!r}; the default limit is 100")
        if ctx.profile != "smoke":  # 1,800 more transitions: about 1.2 s of CPU on a SQLite file
            _full_page_at_the_maximum(store, driver, recoverable=101)

    run_once(ctx, body)


def _full_page_at_the_maximum(store: TransitionStore, driver: Driver, *,
                              recoverable: int) -> None:
    """TRN-084 at the largest limit: with more than 1,000 recoverable runs, a page of limit
    1,000 is full and has ``next``, so a store that asks its storage for at most 1,000 runs
    (where one more decides ``next``) is caught (issue 37, blind round 4). ``recoverable``:
    the recoverable runs the store holds already."""
    for number in range(MAX_SCAN_LIMIT + 1 - recoverable):
        conversation = f"full-page-{number:04d}"
        driver.apply(conversation, Accept("k", "in", "r", "ans", {"text": "x"}))
        driver.apply(conversation, Acquire("r", "owner"))
    first = store.scan_recoverable(limit=MAX_SCAN_LIMIT)
    if len(first.runs) != MAX_SCAN_LIMIT or first.next is None:
        fail("TRN-084", f"{MAX_SCAN_LIMIT + 1} recoverable runs, limit {MAX_SCAN_LIMIT}: "
             f"{len(first.runs)} runs and next {first.next!r}, expected a full page with next")
    rest = store.scan_recoverable(after=first.next, limit=MAX_SCAN_LIMIT)
    if len(rest.runs) != 1 or rest.next is not None:
        fail("TRN-084", f"the page after a full page of {MAX_SCAN_LIMIT} has "
             f"{len(rest.runs)} runs and next {rest.next!r}, expected the last run alone")


@check("TRN-082", "TRN-010", capability=TRANSITIONS)
def check_snapshot_before_and_after_the_first_transition(ctx: CheckContext) -> None:
    """TRN-082: no head is not_found; then head, active runs by ordinal, history by position."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        store.append("c", [draft("plain")])
        refused(partial(store.load_snapshot, "c"), "not_found", "TRN-082",
                "load_snapshot of a conversation with events but no head", store=store,
                touched=["c"])
        driver = Driver(store, ("TRN-082",))
        driver.owned("c", "r1")
        driver.admit("c", "r2")
        snapshot = store.load_snapshot("c")
        if snapshot.head.version != 3 or snapshot.head.conversation_id != "c":
            fail(("TRN-082", "TRN-010"), f"head is {snapshot.head!r} after 3 transitions")
        if [r.run_id for r in snapshot.active_runs] != ["r1", "r2"]:
            fail("TRN-082", f"active runs are {snapshot.active_runs!r}")
        if [(m.message_id, m.position) for m in snapshot.messages] != [
            ("r1-input", 1), ("r1-answer", 2)
        ]:
            fail("TRN-082", f"history is {snapshot.messages!r}")

    run_once(ctx, body)


__all__ = ["SCAN_CONVERSATIONS"]
