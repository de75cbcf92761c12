"""Transition events at every position: first, at a page boundary, last (issue 20).

The fold of TRN-100 runs over every ``runtime/transition`` event of a ledger in
seq order; an import checks the archive's ``runtime`` companion against it
(TRN-104). A fold that stops one event short, or starts its second page one
late, agrees with the companion as long as the events it misses are not
transitions, which is what the other checks build. Here transitions stand at
seq 1 (the first event), at seqs 1000 and 1001 (both sides of a page of 1000,
LED-007's default and a likely page size) and at the last seq; the archive must
import unchanged, and one whose companion lacks only the effect of the last
transition (or of the one at 1001) must be refused with ``integrity``. Every
expected answer is computed here from the exporting store's own archive.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Final

from convledger import canonical
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.runtime import Operation, Terminal
from convledger.runtime.companion import COMPANION
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.checks_positions import with_companions
from convledger_conformance.ledger.model import archive_bytes, read_whole
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.checks_transitions import TRANSITIONS, Driver, fence_of
from convledger_conformance.support import (
    STAMP,
    accepted,
    draft,
    expect_same_bytes,
    fail,
    fresh_store,
    ledger_bytes,
    refused,
    run_once,
)

IDS: Final = ("TRN-100", "TRN-101", "TRN-104", "TRN-106")
BASELINE_IDS: Final = ("TRN-100", "TRN-101", "TRN-103", "TRN-104", "TRN-106")
PURGE_IDS: Final = ("TRN-093", "TRN-094")
PAGE_EDGE: Final = 1000
"""The transition events stand at seq 1, at PAGE_EDGE and PAGE_EDGE + 1, and last."""


def _filler(store: LedgerStore, conversation: str, upto: int) -> None:
    """Ordinary events until the head is ``upto``."""
    head = store.head(conversation)
    if upto > head:
        store.append(conversation, [draft(f"{conversation}-fill-{seq}", seq)
                                    for seq in range(head + 1, upto + 1)])


def _swap_companion(events_from: bytes, companion_from: bytes) -> bytes:
    """The archive ``events_from`` with the ``runtime`` companion of ``companion_from``."""
    document: dict[str, Any] = json.loads(events_from)
    document["companions"] = json.loads(companion_from)["companions"]
    return canonical.encode(document)



def _imports_as_it_was(
    ctx: CheckContext, given: LedgerStore, conversation_id: str, data: bytes, where: str
) -> None:
    """TRN-100, TRN-104, TRN-106, TRN-101: ``data`` imports into a fresh store, re-exports
    byte for byte and gives the snapshot ``given`` holds."""
    with fresh_store(ctx) as target:
        accepted(partial(target.import_conversation, data), ("TRN-100", "TRN-104"),
                 f"import of {where}")
        expect_same_bytes("TRN-106", f"the re-export of {where}", expected=data,
                          got=target.export_conversation(conversation_id))
        mine, theirs = (require(s, TRANSITIONS).load_snapshot(conversation_id)
                        for s in (given, target))
        if mine != theirs:
            fail("TRN-101", f"after the import of {where} the snapshot differs: "
                            f"expected {mine!r:.300}, got {theirs!r:.300}")

@check(*IDS, capability=TRANSITIONS)
def check_transitions_at_every_position(ctx: CheckContext) -> None:
    """TRN-100, TRN-101, TRN-104: transitions first, at a page edge and last fold on import."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, IDS)
        driver.admit("tp", "r1")  # seq 1: the first event is a transition
        seqs = [given.head("tp")]
        _filler(given, "tp", PAGE_EDGE - 1)
        run = driver.acquire("tp", "r1")  # seq 1000: the last of a page
        seqs.append(given.head("tp"))
        before_edge = given.export_conversation("tp")  # every transition but the next
        driver.admit("tp", "r2")  # seq 1001: the first of the next page
        seqs.append(given.head("tp"))
        _filler(given, "tp", PAGE_EDGE + 20)
        before_last = given.export_conversation("tp")
        driver.apply("tp", Terminal("r1", fence_of(run), "success", {"text": "done"}))
        head = given.head("tp")
        seqs.append(head)
        data = given.export_conversation("tp")
        inner = ", ".join(map(str, seqs[:-1]))
        where = f"an archive of {head} events with transitions at seqs {inner} and {head}"
        _imports_as_it_was(ctx, given, "tp", data, where)
        for missing, events, companion in ((head, data, before_last),
                                           (seqs[2], before_last, before_edge)):
            stale = _swap_companion(events, companion)
            with fresh_store(ctx) as target:
                refused(partial(target.import_conversation, stale), "integrity", "TRN-104",
                        f"import of {where}, up to seq {json.loads(events)['events'][-1]['seq']}"
                        f", whose runtime companion lacks only the effect of the transition "
                        f"at seq {missing}", store=target, touched=["tp"])

    run_once(ctx, body)


@check(*PURGE_IDS, capability=Capability.PURGE)
def check_purge_at_every_position(ctx: CheckContext) -> None:
    """TRN-093, TRN-094: a purge removes every event, the first, both sides of a page, the last."""

    def body(store: LedgerStore) -> None:
        purge = require(store, Capability.PURGE)
        _filler(store, "gone", PAGE_EDGE + 1)
        _filler(store, "kept", PAGE_EDGE + 1)
        kept = ledger_bytes(store, "kept")
        accepted(partial(purge.purge, "gone"), PURGE_IDS, f"purge of {PAGE_EDGE + 1} events")
        where = f"after the purge of a conversation of {PAGE_EDGE + 1} events"
        if store.head("gone") != 0:
            fail("TRN-094", f"{where}: expected head 0, got {store.head('gone')}")
        for seq in (1, PAGE_EDGE, PAGE_EDGE + 1):
            page = store.read("gone", from_seq=seq, limit=1)
            if page.items or page.next_seq is not None:
                fail("TRN-094", f"{where}: read from seq {seq} (limit 1): expected an empty "
                                f"page, got seqs {[e.seq for e in page.items]} next "
                                f"{page.next_seq}")
        left = read_whole(store, "gone")
        if left:
            fail("TRN-094", f"{where}: expected no events, got {len(left)} (seqs "
                            f"{left[0].seq} .. {left[-1].seq})")
        refused(partial(store.export_conversation, "gone"), "not_found", "TRN-094",
                f"export {where}")
        if ledger_bytes(store, "kept") != kept:
            fail("TRN-093", f"the purge of {PAGE_EDGE + 1} events changed another conversation")

    run_once(ctx, body)


def _baseline_archive(conversation: str) -> tuple[bytes, dict[str, Any], object]:
    """An archive whose only event is a ``runtime/baseline`` at seq 1, its records and snapshot.

    The records are those a reference store reaches with one owned and one queued run, as a
    migration from version 1 would carry them; the expected snapshot is that store's own.
    """
    source = MemoryStore()
    try:
        driver = Driver(source, BASELINE_IDS)
        driver.owned(conversation, "r1")
        driver.admit(conversation, "r2")
        records = json.loads(source.export_conversation(conversation))["companions"][COMPANION]
        snapshot = source.load_snapshot(conversation)
    finally:
        source.close()
    events = [{"schemaVersion": 1, "eventId": f"{conversation}-baseline",
               "conversationId": conversation, "seq": 1, "kind": "runtime/baseline",
               "occurredAt": STAMP, "payload": {"migratedAt": STAMP, **records}}]
    document = {"format": "convledger.archive", "formatVersion": 1,
                "conversationId": conversation, "events": events,
                "companions": {COMPANION: records}}
    return canonical.encode(document), document, snapshot


def _late_baseline(document: dict[str, Any], seq: int, plain: list[bytes]) -> bytes:
    """``document``'s baseline at ``seq`` in place of the ordinary event there of ``plain``."""
    events = list(plain)
    events[seq - 1] = canonical.encode({**document["events"][0], "seq": seq})
    return with_companions(archive_bytes(document["conversationId"], events),
                           document["companions"])


@check(*BASELINE_IDS, capability=TRANSITIONS)
def check_baselines_at_every_position(ctx: CheckContext) -> None:
    """TRN-100 .. TRN-106: a baseline alone, a baseline before page-edge transitions, late ones."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        alone, document, expected = _baseline_archive("bl")
        where = "an archive whose only event, first and last, is a runtime/baseline at seq 1"
        accepted(partial(store.import_conversation, alone), ("TRN-100", "TRN-104"),
                 f"import of {where}")
        expect_same_bytes(("TRN-103", "TRN-106"), f"the re-export of {where}", expected=alone,
                          got=given.export_conversation("bl"))
        if store.load_snapshot("bl") != expected:
            fail("TRN-101", f"after the import of {where} the snapshot differs: expected "
                            f"{expected!r:.300}, got {store.load_snapshot('bl')!r:.300}")
        driver = Driver(store, BASELINE_IDS)
        _filler(given, "bl", PAGE_EDGE - 1)
        run = store.load_run("bl", "r1")
        assert run is not None  # the snapshot above holds it
        run = driver.apply("bl", Operation("r1", fence_of(run), {"tool": "edge"}))  # seq 1000
        driver.admit("bl", "r3")  # seq 1001
        _filler(given, "bl", PAGE_EDGE + 20)
        assert run is not None
        driver.apply("bl", Terminal("r1", fence_of(run), "success", {"text": "done"}))
        head = given.head("bl")
        data = given.export_conversation("bl")
        where = (f"an archive of {head} events: a runtime/baseline at seq 1, transitions at "
                 f"seqs {PAGE_EDGE}, {PAGE_EDGE + 1} and {head}")
        _imports_as_it_was(ctx, given, "bl", data, where)
        length = PAGE_EDGE + 1
        plain = [canonical.encode({
            "schemaVersion": 1, "eventId": f"bl-plain-{n}", "conversationId": "bl", "seq": n,
            "kind": "state/set", "occurredAt": STAMP,
            "payload": {"name": "slot", "version": 1, "value": n, "actor": "conformance"}})
            for n in range(1, length + 1)]
        for seq in (PAGE_EDGE, PAGE_EDGE + 1):  # the last of the first page; of the ledger
            late = _late_baseline(document, seq, plain)
            with fresh_store(ctx) as target:
                refused(partial(target.import_conversation, late), "integrity", "TRN-100",
                        f"import of an archive of {length} events whose runtime/baseline is at "
                        f"seq {seq}, not 1 (its companion the baseline's records)",
                        store=target, touched=["bl"])

    run_once(ctx, body)
