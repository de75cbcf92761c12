"""Checks of chapter RPL: the replay gate, as import and bounded reads apply it."""

from __future__ import annotations

from functools import partial

from hypothesis import strategies as st

from convledger.envelope import EventDraft
from convledger.errors import ReplayRefusedError
from convledger.store import LedgerStore
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger.model import draft_wire, read_whole
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    STAMP,
    accepted,
    archive,
    draft,
    fail,
    fresh_store,
    ledger_bytes,
    refused,
    run_once,
    run_property,
    wires,
)


def _unknown(conversation: str, event_id: str, seq: int, *, ignorable: bool) -> dict[str, object]:
    """An envelope of an unregistered pair at ``seq``."""
    wire: dict[str, object] = {
        "schemaVersion": 3, "eventId": event_id, "conversationId": conversation, "seq": seq,
        "kind": gen.UNKNOWN_KIND, "occurredAt": STAMP, "payload": {"opaque": [seq]},
    }
    if ignorable:
        wire["ignorable"] = True
    return wire


def _mixed(conversation: str, size: int, unknown_at: set[int], *, ignorable: bool) -> list[
    dict[str, object]
]:
    """``size`` envelopes, unregistered at the seqs of ``unknown_at``, registered elsewhere."""
    return [
        _unknown(conversation, f"{conversation}-{seq}", seq, ignorable=ignorable)
        if seq in unknown_at
        else draft_wire(draft(f"{conversation}-{seq}"), conversation, seq)
        for seq in range(1, size + 1)
    ]


@check("RPL-001")
def check_registered_pairs_accepted(ctx: CheckContext) -> None:
    """RPL-001: a registered pair is accepted whether or not it is ignorable."""

    def body(store: LedgerStore, batch: list[EventDraft]) -> None:
        flagged = [d for d in batch if d.ignorable] or [draft("flagged", ignorable=True)]
        accepted(partial(store.append, "c", flagged), "RPL-001", "append of ignorable drafts")
        data = archive("d", wires("d", batch))
        with fresh_store(ctx) as target:
            accepted(partial(target.import_conversation, data), "RPL-001",
                     "import of registered events, some ignorable")
            if target.export_conversation("d") != data:
                fail("RPL-001", "registered events did not import as they are")

    run_property(ctx, body, gen.draft_batches().map(lambda b: [
        d for d in b if d.event_id != "flagged"]))


@check("RPL-002")
def check_unknown_ignorable_keeps_its_place(ctx: CheckContext) -> None:
    """RPL-002: an unknown ignorable envelope keeps its eventId and seq; appends follow it."""

    def body(store: LedgerStore, size: int, unknown_at: set[int]) -> None:
        events = _mixed("c", size, {s for s in unknown_at if s <= size}, ignorable=True)
        accepted(partial(store.import_conversation, archive("c", events)), "RPL-002", "import")
        stored = read_whole(store, "c")
        if [(e.seq, e.event_id) for e in stored] != [(w["seq"], w["eventId"]) for w in events]:
            fail("RPL-002", "unknown ignorable envelopes lost their identity or position")
        placed = accepted(partial(store.append, "c", [draft("next")]), "RPL-002", "append")
        if placed[0].seq != size + 1:
            fail("RPL-002", f"an append after {size} imported events landed at {placed[0].seq}")

    run_property(ctx, body, st.integers(1, 6), st.sets(st.integers(1, 6), min_size=1))


@check("RPL-003", "RPL-004")
def check_unknown_refused_at_first(ctx: CheckContext) -> None:
    """RPL-003, RPL-004: the first unknown non-ignorable envelope refuses the import, named."""

    def body(store: LedgerStore, size: int, unknown_at: set[int]) -> None:
        at = {s for s in unknown_at if s <= size} or {size}
        events = _mixed("c/\x00", size, at, ignorable=False)
        error = refused(partial(store.import_conversation, archive("c/\x00", events)),
                        "replay_refused", "RPL-003", "import of unknown non-ignorable events",
                        store=store, touched=["c/\x00"], unchanged="RPL-004")
        first = events[min(at) - 1]
        if not isinstance(error, ReplayRefusedError):
            fail("RPL-003", f"replay_refused raised as {type(error).__name__}, which does not "
                 "name the envelope")
        named = (error.conversation_id, error.seq, error.event_id, error.schema_version,
                 error.event_kind)
        want = (first["conversationId"], first["seq"], first["eventId"], first["schemaVersion"],
                first["kind"])
        if named[1] != want[1]:
            fail("RPL-004", f"the refusal names seq {named[1]}, not the first unknown {want[1]}")
        if named != want:
            fail("RPL-003", f"the refusal names {named!r}, not {want!r}")

    run_property(ctx, body, st.integers(1, 6), st.sets(st.integers(1, 6)))


@check("RPL-005")
def check_reads_return_unknown_envelopes(ctx: CheckContext) -> None:
    """RPL-005: bounded reads return unknown ignorable envelopes; import gates the rest."""

    def body(store: LedgerStore) -> None:
        events = _mixed("c", 6, {1, 3, 6}, ignorable=True)
        accepted(partial(store.import_conversation, archive("c", events)), "RPL-005", "import")
        for limit in (1, 2, 4, 10):
            seen: list[int] = []
            cursor: int | None = 1
            while cursor is not None and len(seen) <= 6:
                page = store.read("c", from_seq=cursor, limit=limit)
                seen.extend(e.seq for e in page.items)
                cursor = page.next_seq
            if seen != [1, 2, 3, 4, 5, 6]:
                fail("RPL-005", f"reads of limit {limit} returned seqs {seen}")
        if len(ledger_bytes(store, "c")) != 6:
            fail("RPL-005", "a read dropped unknown envelopes")
        gated = _mixed("d", 3, {2}, ignorable=False)
        refused(partial(store.import_conversation, archive("d", gated)), "replay_refused",
                "RPL-005", "import of an unknown non-ignorable envelope", store=store,
                touched=["d"])

    run_once(ctx, body)
