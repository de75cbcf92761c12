"""Checks of chapter LED: append, bounded read, head, consistency."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from functools import partial

import attrs
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError, LedgerError
from convledger.interface import require
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger.machine import MACHINE_IDS, build_ledger_machine
from convledger_conformance.ledger.model import (
    LedgerModel,
    ModelPage,
    Refusal,
    envelope_bytes,
    read_whole,
)
from convledger_conformance.profiles import scaled, settings_for
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spec_values import READ_LIMIT
from convledger_conformance.support import (
    accepted,
    draft,
    drafts,
    fail,
    ledger_bytes,
    refused,
    run_once,
    run_property,
    untyped,
)


@check(*MACHINE_IDS)
def check_ledger_state_machine(ctx: CheckContext) -> None:
    """The store agrees with the model over random programs of appends, reads and archives."""
    machine = build_ledger_machine(ctx.factory)
    run_state_machine_as_test(machine, settings=settings_for(ctx.profile))


@check(*MACHINE_IDS, "LED-015", capability=Capability.PERSISTENCE)
def check_ledger_state_machine_with_reopen(ctx: CheckContext) -> None:
    """LED-015: the same programs, reopening the store in between, still agree with the model."""
    machine = build_ledger_machine(ctx.factory, reopen=True)
    run_state_machine_as_test(machine, settings=settings_for(ctx.profile))


@check("LED-001")
def check_append_batch_bounds(ctx: CheckContext) -> None:
    """LED-001: 1 to 10000 drafts are appended; empty, larger or non-sequence batches refused."""

    def body(store: LedgerStore) -> None:
        one, loose = draft("bounds-0"), untyped(store)
        shapes = {name: make(one) for name, make in gen.BATCH_SHAPES.items()}
        shapes["an iterator"] = iter([one])
        for shape, batch in shapes.items():
            refused(partial(loose.append, "c", batch), "invalid_input", "LED-001",
                    f"append of {shape}", store=store, touched=["c"])
        refused(lambda: store.append("c", drafts("over", 10_001)), "invalid_input", "LED-001",
                "append of 10001 drafts", store=store, touched=["c"])
        placed = accepted(lambda: store.append("c", drafts("full", 10_000)), "LED-001",
                          "append of 10000 drafts")
        if [e.seq for e in placed] != list(range(1, 10_001)):
            fail("LED-001", "a batch of 10000 drafts was not placed at seqs 1..10000")

    run_once(ctx, body)


@check("LED-002")
def check_seqs_follow_the_head(ctx: CheckContext) -> None:
    """LED-002: each batch lands at head+1.., in order, so every ledger is exactly 1..n."""

    def body(store: LedgerStore, plan: list[tuple[bool, list[EventDraft]]]) -> None:
        seen: set[str] = set()
        heads = {"left": 0, "right/\x00": 0}
        for to_right, batch in plan:
            batch = [d for d in batch if d.event_id not in seen]
            if not batch:
                continue
            seen.update(d.event_id for d in batch)
            conversation = "right/\x00" if to_right else "left"
            placed = accepted(partial(store.append, conversation, batch), "LED-002", "append")
            want = list(range(heads[conversation] + 1, heads[conversation] + len(batch) + 1))
            if [e.seq for e in placed] != want or [e.event_id for e in placed] != [
                d.event_id for d in batch
            ]:
                fail("LED-002", f"batch placed at {[e.seq for e in placed]}, expected {want}")
            heads[conversation] += len(batch)
        for conversation, head in heads.items():
            stored = read_whole(store, conversation)
            if [e.seq for e in stored] != list(range(1, head + 1)):
                fail("LED-002", f"{conversation!r} holds seqs {[e.seq for e in stored]}")

    run_property(ctx, body, st.lists(st.tuples(st.booleans(), gen.draft_batches()), max_size=6))


@check("LED-003")
def check_event_ids_unique_in_store(ctx: CheckContext) -> None:
    """LED-003: an eventId stored in any conversation, or repeated in a batch, is a duplicate."""

    def body(store: LedgerStore, first: EventDraft, second: EventDraft, other: str) -> None:
        accepted(lambda: store.append("home", [first]), "LED-003", "first append")
        elsewhere = attrs.evolve(second, event_id=first.event_id)
        for conversation in ("home", other):
            refused(partial(store.append, conversation, [elsewhere]), "duplicate", "LED-003",
                    f"append of a stored eventId to {conversation!r}", store=store,
                    touched=["home", other])
        twins = [second, attrs.evolve(first, event_id=second.event_id)]
        if second.event_id != first.event_id:
            refused(lambda: store.append(other, twins), "duplicate", "LED-003",
                    "append of one eventId twice in a batch", store=store, touched=[other])

    run_property(ctx, body, gen.valid_drafts(), gen.valid_drafts(), gen.identifiers())


@check("LED-004", "ERR-004")
def check_refused_batch_stores_nothing(ctx: CheckContext) -> None:
    """LED-004, ERR-004: a refused batch stores no draft, consumes no seq and keeps no eventId."""

    def body(store: LedgerStore, good: list[EventDraft], bad: gen.InvalidDraft,
             where: int) -> None:
        accepted(partial(store.append, "c", [draft("before")]), "LED-004", "first append")
        fresh = [d for d in good if d.event_id not in ("before", "after")]
        refusals: list[tuple[str, list[object], int | None, str]] = [
            ("invalid_input", [*fresh[:where], bad.draft, *fresh[where:]], None, bad.why),
            ("duplicate", [*fresh[:where], draft("before"), *fresh[where:]], None,
             "a stored eventId"),
            ("conflict", list(fresh), 0, "a stale expected head"),
        ]
        for kind, batch, head, why in refusals:
            if batch:
                refused(partial(untyped(store).append, "c", batch, expected_head=head), kind,
                        ("LED-004", "ERR-004"), f"append of a batch with {why}", store=store,
                        touched=["c"])
        again = accepted(partial(store.append, "c", [draft("after")]), ("LED-004", "ERR-004"),
                         "append after refused batches")
        if again[0].seq != 2:
            fail(("LED-004", "ERR-004"), f"after refused batches an append landed at "
                 f"{again[0].seq}, not 2")
        if fresh:
            placed = accepted(partial(store.append, "d", fresh), ("LED-004", "ERR-004"),
                              "append of the refused batches' valid drafts")
            if [e.seq for e in placed] != list(range(1, len(fresh) + 1)):
                fail(("LED-004", "ERR-004"), "the drafts of refused batches left seqs behind")

    run_property(ctx, body, gen.draft_batches(max_size=3), gen.invalid_drafts(), st.integers(0, 3))


@check("LED-005", "ERR-005")
def check_expected_head(ctx: CheckContext) -> None:
    """LED-005, ERR-005: append only at the expected head; else conflict carrying the head."""

    def body(store: LedgerStore, head: int, wrong: int) -> None:
        if head:
            accepted(lambda: store.append("c", drafts("pre", head)), "LED-005", "append")
        if wrong != head:
            error = refused(lambda: store.append("c", [draft("x")], expected_head=wrong),
                            "conflict", "LED-005", f"expected head {wrong} at head {head}",
                            store=store, touched=["c"])
            if not isinstance(error, ConflictError) or error.actual != head:
                fail("ERR-005", f"conflict carries {getattr(error, 'actual', None)!r}, "
                     f"not the head {head}")
        for invalid in (-1, True, 1.0, "0"):
            refused(partial(untyped(store).append, "c", [draft("x")], expected_head=invalid),
                    "invalid_input", "LED-005", f"expected head {invalid!r}", store=store,
                    touched=["c"])
        placed = accepted(lambda: store.append("c", [draft("x")], expected_head=head),
                          "LED-005", "append at the expected head")
        if placed[0].seq != head + 1:
            fail("LED-005", f"append at expected head {head} placed at {placed[0].seq}")

    run_property(ctx, body, st.integers(0, 4), st.integers(0, 6))


@check("LED-007")
def check_read_defaults(ctx: CheckContext) -> None:
    """LED-007: fromSeq defaults to 1, toSeq to no bound, limit to 1000; toSeq is inclusive."""

    size = READ_LIMIT  # spec/limits.json, never the store's own constant

    def body(store: LedgerStore) -> None:
        store.append("c", drafts("d", size + 1))
        page = store.read("c")
        if [e.seq for e in page.items] != list(range(1, size + 1)) or page.next_seq != size + 1:
            fail("LED-007", f"read() returned {len(page.items)} events, nextSeq {page.next_seq}")
        tail = store.read("c", from_seq=2)
        if len(tail.items) != size or tail.items[-1].seq != size + 1 or tail.next_seq is not None:
            fail("LED-007", "read(fromSeq=2) did not run to the head without an upper bound")
        head = store.read("c", to_seq=3)
        if [e.seq for e in head.items] != [1, 2, 3] or head.next_seq is not None:
            fail("LED-007", f"read(toSeq=3) returned {[e.seq for e in head.items]}")

    run_once(ctx, body)


EDGE_WINDOWS: tuple[dict[str, object], ...] = (
    {"from_seq": 1, "to_seq": 1},
    {"from_seq": 2, "to_seq": 2, "limit": 1},
    {"from_seq": 14, "to_seq": 14},
    {"to_seq": 1, "limit": 1},
)
"""Windows of one seq (toSeq = fromSeq, toSeq at its minimum 1) at the first, a middle and
the last position, read besides the drawn ones: a store refusing ``to_seq == from_seq`` or
``to_seq = 1`` survived the drawn windows at smoke (found by mutation testing,
``scripts/mutation.py``)."""


@check("LED-008", "LED-009", "LED-011")
def check_read_windows(ctx: CheckContext) -> None:
    """LED-008, LED-009, LED-011: a read returns the model's page and nextSeq for any window.

    Besides the drawn windows every example reads :data:`EDGE_WINDOWS`.
    """

    def body(store: LedgerStore, size: int, windows: list[dict[str, object]]) -> None:
        model = LedgerModel()
        if size:
            batch = drafts("w", size)
            store.append("c", batch)
            expected = model.expect_append("c", batch)
            assert not isinstance(expected, Refusal)
            model.commit("c", expected)
        for window in [*EDGE_WINDOWS, *windows]:
            for conversation in ("c", "never"):
                want = model.expect_read(conversation, **window)
                assert isinstance(want, ModelPage)
                page = accepted(partial(untyped(store).read, conversation, **window),
                                ("LED-008", "LED-011"), f"read {window!r}")
                empty = ("LED-011",) if not want.items else ()
                broken: list[str] = []
                if tuple(envelope_bytes(e) for e in page.items) != want.items:
                    broken += ["LED-008", *empty]
                if page.next_seq != want.next_seq or not _pages_once(store, conversation,
                                                                      window, model):
                    broken += ["LED-009", *empty]
                if broken:
                    fail(broken, f"read {window!r} of {size} events returned seqs "
                         f"{[e.seq for e in page.items]} and nextSeq {page.next_seq!r}, "
                         f"expected {len(want.items)} events and {want.next_seq!r}")

    run_property(ctx, body, st.integers(0, 14), st.lists(gen.read_windows(valid_only=True),
                                                         min_size=1, max_size=6))


def _pages_once(
    store: LedgerStore, conversation: str, window: dict[str, object], model: LedgerModel
) -> bool:
    """LED-009: following nextSeq from ``window`` yields the whole window exactly once."""
    whole = model.expect_read(conversation, **{**window, "limit": 10_000})
    assert isinstance(whole, ModelPage)
    seen: list[bytes] = []
    cursor = window.get("from_seq", 1)
    for _ in range(len(whole.items) + 1):
        page = untyped(store).read(conversation, **{**window, "from_seq": cursor})
        seen.extend(envelope_bytes(e) for e in page.items)
        cursor = page.next_seq
        if cursor is None:
            break
    return tuple(seen) == whole.items


@check("LED-010")
def check_read_parameters_refused(ctx: CheckContext) -> None:
    """LED-010: a limit outside 1..10000, a seq below 1, or toSeq < fromSeq is invalid_input."""

    def body(store: LedgerStore) -> None:
        store.append("c", drafts("r", 3))
        for window in (*gen.READ_WINDOW_INVALID, {"from_seq": 2, "to_seq": 1},
                       {"limit": 10**30}, {"from_seq": "x", "limit": 1}):
            refused(partial(untyped(store).read, "c", **window), "invalid_input", "LED-010",
                    f"read {window!r}", store=store, touched=["c"])

    run_once(ctx, body)


@check("LED-012")
def check_head(ctx: CheckContext) -> None:
    """LED-012: head is 0 without events and the last seq after appends, refusals and imports."""

    def body(store: LedgerStore, sizes: list[int]) -> None:
        if store.head("nothing") != 0:
            fail("LED-012", "head of a conversation without events is not 0")
        total = 0
        for number, size in enumerate(sizes):
            total += len(store.append("c", drafts(f"h{number}", size)))
            with contextlib.suppress(LedgerError):  # a duplicate; head must follow the ledger
                total += len(store.append("c", [draft(f"h{number}-1")]))
            if store.head("c") != total or len(read_whole(store, "c")) != total:
                fail("LED-012", f"head is {store.head('c')} with {total} stored events")

    run_property(ctx, body, st.lists(st.integers(1, 4), max_size=4))


@check("LED-013")
def check_concurrent_appends(ctx: CheckContext) -> None:
    """LED-013: concurrent appends, with and without expected heads, skip and repeat no seq."""

    def body(store: LedgerStore, threads: int, rounds: int, size: int) -> None:
        errors: list[BaseException] = []
        placed: list[tuple[int, ...]] = []
        lock = threading.Lock()
        barrier = threading.Barrier(threads)

        def work(number: int) -> None:
            try:
                barrier.wait()
                for r in range(rounds):
                    batch = drafts(f"t{number}-{r}", size)
                    if r % 2:
                        result = _append_with_retry(store, batch)
                    else:
                        result = store.append("shared", batch)
                    with lock:
                        placed.append(tuple(e.seq for e in result))
            except BaseException as error:  # reported on the main thread
                errors.append(error)

        workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if errors:
            fail("LED-013", f"a concurrent append failed: {errors[0]!r}")
        total = threads * rounds * size
        if sorted(seq for batch in placed for seq in batch) != list(range(1, total + 1)):
            fail("LED-013", "concurrent appends skipped or repeated a seq")
        if any(list(b) != list(range(b[0], b[0] + size)) for b in placed):
            fail("LED-013", "a concurrent batch was interleaved with another")
        stored = read_whole(store, "shared")
        if [e.seq for e in stored] != list(range(1, total + 1)) or store.head("shared") != total:
            fail("LED-013", "the ledger after concurrent appends is not 1..n")

    run_property(ctx, body, st.integers(2, 4), st.integers(1, 6), st.integers(1, 3), share=0.2)


APPEND_ATTEMPTS = 1000
"""Compare-and-append attempts of one thread before the check gives up on the store."""


def _append_with_retry(store: LedgerStore, batch: list[EventDraft]) -> tuple[Envelope, ...]:
    """Compare-and-append at the head until no other thread got there first (LED-005).

    Bounded: a store whose ``head`` never matches what ``append`` expects fails
    the check instead of hanging it.
    """
    for _ in range(APPEND_ATTEMPTS):
        try:
            return store.append("shared", batch, expected_head=store.head("shared"))
        except ConflictError:
            continue
    fail("LED-013", f"{APPEND_ATTEMPTS} appends at the reported head all conflicted")


@check("LED-014")
def check_caller_values_stay_outside(ctx: CheckContext) -> None:
    """LED-014: mutating drafts, returned envelopes or read results never changes the ledger."""

    def body(store: LedgerStore, value: JsonValue) -> None:
        mine = draft("m", {"list": [1], "nested": {"value": value}})
        placed = store.append("c", [mine])
        before = ledger_bytes(store, "c")
        payloads = [mine.payload, placed[0].payload, store.read("c").items[0].payload]
        for payload in payloads:
            try:
                assert isinstance(payload, dict)
                payload["value"]["list"].append("vandal")
                payload["value"]["nested"]["value"] = "vandal"
                payload["vandal"] = True
            except (TypeError, AssertionError, KeyError):
                continue  # an immutable or differently built value cannot be changed
        if ledger_bytes(store, "c") != before:
            fail("LED-014", "a value changed by the caller after an append or read reached "
                 "the ledger")

    run_property(ctx, body, gen.json_values())


@check("LED-015", capability=Capability.PERSISTENCE)
def check_reopen_keeps_everything(ctx: CheckContext) -> None:
    """LED-015: after reopen the ledgers, heads and exports are the same, and appends go on."""

    def reopen_keeps_everything(batch: list[EventDraft]) -> None:
        store = ctx.factory()
        try:
            store.append("c/\x00", batch)
            before = (store.head("c/\x00"), ledger_bytes(store, "c/\x00"),
                      store.export_conversation("c/\x00"))
            store = accepted(require(store, Capability.PERSISTENCE).reopen, "LED-015", "reopen")
            after = (store.head("c/\x00"), ledger_bytes(store, "c/\x00"),
                     store.export_conversation("c/\x00"))
            if after != before:
                fail("LED-015", "the ledger differs after reopen")
            more = store.append("c/\x00", [draft("after-reopen")])
            if more[0].seq != len(batch) + 1:
                fail("LED-015", "an append after reopen did not continue at the head")
        finally:
            store.close()

    test = given(gen.draft_batches().filter(_without("after-reopen")))(reopen_keeps_everything)
    scaled(ctx.profile, share=0.5)(test)()


def _without(event_id: str) -> Callable[[list[EventDraft]], bool]:
    return lambda batch: all(d.event_id != event_id for d in batch)
