"""Settling an indeterminate append (chapter DUR, DUR-017 .. DUR-020; ERR-013).

ERR-013 is judged where it can be without losing an answer: the refusals
other than ``unavailable`` that settling meets (a genuine ``conflict``, a
genuine ``duplicate``) must be determinate, leaving every head as it was, and
an append is found either whole or not at all.

Engine-neutral: a lost answer cannot be provoked through the store
interface, so the check sets the scenes the procedure meets after one. A
batch acknowledged earlier is settled as if its answer had been lost (it
committed), a batch never sent as if the attempt had failed before its
commit; another writer appends in between, with and without an expected
head, and an eventId is taken by another batch. Each time the store's raw
answer to the batch sent again (DUR-017), the read back (DUR-018, DUR-019)
and the conclusion of the reference procedure
(:func:`convledger.settle.settle_append`, DUR-020) must be the ones the
chapter's table gives, and settling must never store an event twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError, LedgerError
from convledger.settle import Settled, settle_append
from convledger.store import LedgerStore
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import accepted, draft, drafts, fail, refused, run_once

IDS = ("DUR-017", "DUR-018", "DUR-019", "DUR-020")


def _settled(store: LedgerStore, ids: str | Sequence[str], what: str, conversation: str,
             batch: Sequence[EventDraft], expected: int | None, from_seq: int) -> Settled:
    return accepted(partial(settle_append, store, conversation, batch, expected_head=expected,
                            from_seq=from_seq), ids, what)


def _expect(ids: str | Sequence[str], what: str, got: Settled, outcome: str,
            envelopes: Sequence[Envelope] | None) -> None:
    if got.outcome != outcome:
        fail(ids, f"{what}: settled as {got.outcome!r}, expected {outcome!r}")
    if envelopes is not None and tuple(got.envelopes) != tuple(envelopes):
        fail(ids, f"{what}: settled with {got.envelopes!r}, expected the acknowledged"
                  f" {tuple(envelopes)!r}")


def _head(store: LedgerStore, ids: str | Sequence[str], conversation: str, want: int,
          what: str) -> None:
    head = accepted(partial(store.head, conversation), ids, "head")
    if head != want:
        fail(ids, f"{what}: the head is {head}, expected {want} (an event stored twice or lost)")


@check(*IDS, "ERR-013")
def check_settle_indeterminate_appends(ctx: CheckContext) -> None:
    """DUR-017 .. DUR-020: a batch sent again after a lost answer is stored once, and found."""

    def body(store: LedgerStore) -> None:
        plain = drafts("settle-a", 3)
        first = accepted(partial(store.append, "c", plain), "DUR-017", "append of batch a")
        # DUR-017: the committed batch sent again without an expected head is a duplicate ...
        refused(partial(store.append, "c", plain), "duplicate", "DUR-017",
                "batch a sent again without an expected head", store=store, touched=["c"])
        # ... DUR-018, DUR-020: and reads back whole, as acknowledged.
        _expect(("DUR-018", "DUR-020"), "batch a (committed, no expected head)",
                _settled(store, "DUR-020", "settling batch a", "c", plain, None, 1),
                "committed", first)
        other = accepted(partial(store.append, "c", drafts("settle-x", 2)), "DUR-017",
                         "another writer's append")
        guarded = drafts("settle-b", 3)
        second = accepted(partial(store.append, "c", guarded, expected_head=5), "DUR-017",
                          "append of batch b at expected head 5")
        # DUR-017: with its expected head, a committed batch sent again is a conflict at the head.
        error = refused(partial(store.append, "c", guarded, expected_head=5), "conflict",
                        "DUR-017", "batch b sent again with expected head 5", store=store,
                        touched=["c"])
        if not isinstance(error, ConflictError) or error.actual != 8:
            fail("DUR-017", f"batch b sent again: expected conflict carrying head 8, got {error!r}")
        # DUR-019, DUR-020: seqs 6..8 hold it; the read starts at the caller's last seq + 1.
        _expect(("DUR-019", "DUR-020"), "batch b (committed, expected head 5)",
                _settled(store, "DUR-020", "settling batch b", "c", guarded, 5, 6),
                "committed", second)
        # DUR-018: found from any seq at or before the batch, with another writer's events before.
        _expect(("DUR-018", "DUR-020"), "batch a read back from seq 1 past batch x",
                _settled(store, "DUR-020", "settling batch a again", "c", plain, None, 1),
                "committed", first)
        _head(store, IDS, "c", 8, "after settling committed batches")
        # DUR-017, DUR-020: a batch whose attempt never committed is appended by settling.
        lost = drafts("settle-c", 2)
        appended = _settled(store, "DUR-020", "settling batch c (never stored)", "c", lost, None,
                            9)
        _expect(("DUR-017", "DUR-020"), "batch c (not committed)", appended, "appended", None)
        if [e.seq for e in appended.envelopes] != [9, 10]:
            fail("DUR-017", f"batch c appended at {[e.seq for e in appended.envelopes]}, not 9..10")
        # DUR-019: an expected head that another writer moved: a genuine conflict, nothing stored.
        stale = drafts("settle-d", 2)
        try:
            settle_append(store, "c", stale, expected_head=8, from_seq=9)
        except ConflictError as refusal:
            if refusal.actual != 10:
                fail("DUR-019", f"batch d: conflict carries {refusal.actual}, expected 10")
        except LedgerError as refusal:
            fail(("DUR-019", "DUR-020"), f"batch d (stale head, never stored): settling raised"
                                         f" {refusal.kind}, expected conflict")
        else:
            fail(("DUR-019", "DUR-020"), "batch d (stale head, never stored) settled as stored")
        # DUR-018, DUR-020: an eventId another batch took, with other contents: a genuine duplicate.
        taken = [draft(other[0].event_id, "another value")]
        for conversation, batch, what in (("c", taken, "an eventId of batch x, other contents"),
                                          ("d", plain, "batch a settled in another conversation")):
            try:
                settle_append(store, conversation, batch, from_seq=1)
            except LedgerError as refusal:
                if refusal.kind != "duplicate":
                    fail(("DUR-018", "DUR-020"), f"{what}: raised {refusal.kind}, not duplicate")
            else:
                fail(("DUR-018", "DUR-020"), f"{what}: settled as this caller's batch")
        _head(store, (*IDS, "ERR-013"), "c", 10, "after settling and two genuine refusals")
        _head(store, (*IDS, "ERR-013"), "d", 0, "after a genuine duplicate in another conversation")

    run_once(ctx, body)
