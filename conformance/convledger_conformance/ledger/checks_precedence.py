"""Checks of the order of refusals and of the values an outsider had to guess (issue 16).

Precedence (ERR-007, ERR-010, ERR-011): each call here is wrong in two ways
at once, and the kind of the earlier step of the spec's table must win. The
answer of an import (ARC-017), a draft's ``ignorable: false`` (ENV-012,
ENV-010) and integer members given as floats (CAN-017) complete them. Every
check runs in process and, through the suite's wire client, over the wire.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.interface import require
from convledger.store import LedgerStore
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    STAMP,
    accepted,
    archive,
    document,
    draft,
    fail,
    ledger_bytes,
    refused,
    run_once,
    untyped,
    wires,
)

PURGE = Capability.PURGE


@check("ERR-010", "ERR-007", optional=(PURGE,))
def check_append_precedence(ctx: CheckContext) -> None:
    """ERR-010: an append wrong in two ways is refused with the kind of the earlier step."""

    def body(store: LedgerStore) -> None:
        store.append("c", [draft("stored")])
        loose = untyped(store)
        cases: list[tuple[str, Any, str]] = [
            ("a bad expected head and an eventId twice in the batch",
             partial(loose.append, "c", [draft("x"), draft("x")], expected_head="1"),
             "invalid_input"),
            ("a runtime kind and an eventId twice in the batch",
             partial(store.append, "c", [draft("y", kind="runtime/transition",
                                               payload={"type": "accept"}), draft("y")]),
             "invalid_input"),
            ("an unregistered kind and a stored eventId",
             partial(store.append, "c", [draft("stored", kind="x/unknown", payload={})]),
             "invalid_input"),
            ("an eventId twice in the batch and a stale expected head",
             partial(store.append, "c", [draft("z"), draft("z")], expected_head=7),
             "duplicate"),
            ("a stale expected head and a stored eventId",
             partial(store.append, "c", [draft("stored")], expected_head=7), "conflict"),
        ]
        for what, call, kind in cases:
            refused(call, kind, "ERR-010", what, store=store, touched=["c"])
        if PURGE in store.capabilities:
            purging = require(store, Capability.PURGE)
            store.append("p", [draft("p-1")])
            purging.purge("p")
            for what, call, kind in (
                ("a purged conversation and a stale expected head",
                 partial(store.append, "p", [draft("p-2")], expected_head=7), "purged"),
                ("a purged conversation and a stored eventId",
                 partial(store.append, "p", [draft("stored")]), "purged"),
                ("an eventId twice in the batch of a purged conversation",
                 partial(store.append, "p", [draft("p-3"), draft("p-3")]), "duplicate"),
            ):
                refused(call, kind, ("ERR-010", "ERR-007"), what, store=store, touched=["p"])

    run_once(ctx, body)


@check("ERR-011", optional=(PURGE,))
def check_import_precedence(ctx: CheckContext) -> None:
    """ERR-011: an import wrong in two ways is refused with the kind of the earlier step."""

    def body(store: LedgerStore) -> None:
        batch = [draft("i-1", 1), draft("i-2", 2)]
        good = archive("c", wires("c", batch))
        store.append("c", [draft("i-1")])  # occupies c and takes eventId i-1
        later = {**document("c", wires("c", batch)), "formatVersion": 2}
        out_of_order = wires("c", batch)
        out_of_order[1] = {**out_of_order[1], "seq": 5}
        unknown = wires("d", [draft("d-1", kind="x/unknown", payload={}), draft("d-2")])
        unknown[1] = {**unknown[1], "seq": 9}
        cases: list[tuple[str, bytes, str]] = [
            ("another formatVersion in bytes that are not canonical",
             canonical.encode(later) + b" ", "not_supported"),
            ("another formatVersion into an occupied conversation",
             canonical.encode(later), "not_supported"),
            # step 1 before step 2: what a strict decoder refuses (CAN-012, CAN-013) is not one
            # JSON text, so its formatVersion is never read (issue 33: a lax decoder passed)
            ("a repeated member in an archive of another formatVersion",
             b'{"companions":{},' + canonical.encode(later)[1:], "invalid_input"),
            ("a lone surrogate escape in an archive of another formatVersion",
             canonical.encode(later).replace(b'"value":1', b'"value":"\\ud800"'),
             "invalid_input"),
            ("the integer 2**53+1 in an archive of another formatVersion",
             canonical.encode(later).replace(b'"value":1', b'"value":9007199254740993'),
             "invalid_input"),
            ("broken seqs into an occupied conversation with a stored eventId",
             archive("c", out_of_order), "invalid_input"),
            ("an unregistered event before a broken seq", archive("d", unknown),
             "replay_refused"),
            ("an occupied conversation and a stored eventId", good, "conflict"),
        ]
        for what, data, kind in cases:
            refused(partial(store.import_conversation, data), kind, "ERR-011", what,
                    store=store, touched=["c", "d"])
        if PURGE in store.capabilities:
            require(store, Capability.PURGE).purge("c")
            refused(partial(store.import_conversation, good), "purged", "ERR-011",
                    "a purged conversation whose archive holds a stored eventId",
                    store=store, touched=["c"])

    run_once(ctx, body)


@check("ARC-017")
def check_import_answer(ctx: CheckContext) -> None:
    """ARC-017: an import answers the conversationId, the count of its events and the head."""

    def body(store: LedgerStore) -> None:
        events = wires("c", [draft("a-1", 1), draft("a-2", 2), draft("a-3", 3)])
        events[1] = {**events[1], "kind": "x/unknown", "ignorable": True}
        report = accepted(partial(store.import_conversation, archive("c", events)), "ARC-017",
                          "an import with an ignorable event")
        got = (report.conversation_id, report.events, report.head_seq)
        if got != ("c", 3, 3) or isinstance(report.events, bool):
            fail("ARC-017", f"an import of 3 events answered {got!r}, not ('c', 3, 3)")

    run_once(ctx, body)


@check("ENV-012", "ENV-010")
def check_ignorable_false_in_drafts_only(ctx: CheckContext) -> None:
    """ENV-012, ENV-010: ``false`` is allowed in a draft, stored as absent, refused in envelopes;
    ``true`` is stored, read and exported as true."""

    def body(store: LedgerStore) -> None:
        (placed,) = accepted(partial(store.append, "c", [draft("f-1", ignorable=False)]),
                             "ENV-012", "a draft with ignorable false")
        (read,) = read_whole(store, "c")
        for envelope, what in ((placed, "the appended envelope"), (read, "the read envelope")):
            if envelope.ignorable is not False or b'"ignorable"' in envelope.canonical_bytes():
                fail("ENV-012", f"{what} of a draft with ignorable false carries the member")
        if b'"ignorable"' in store.export_conversation("c"):
            fail(("ENV-012", "ENV-010"), "the export of a non-ignorable event carries ignorable")
        # and true is kept: read back and exported as true (issue 37: a store reading its
        # ignorable column wrong survived every check at smoke)
        (kept,) = accepted(partial(store.append, "t", [draft("t-1", ignorable=True)]),
                           "ENV-012", "a draft with ignorable true")
        (again,) = read_whole(store, "t")
        for envelope, what in ((kept, "the appended envelope"), (again, "the read envelope")):
            if envelope.ignorable is not True:
                fail("ENV-012", f"{what} of a draft with ignorable true: expected ignorable "
                                f"true, got {envelope.ignorable!r}")
        if b'"ignorable":true' not in store.export_conversation("t"):
            fail(("ENV-012", "ENV-010"), "the export of an ignorable event lacks ignorable: true")
        not_booleans: tuple[Any, ...] = ("yes", None, 0, 1)
        for n, value in enumerate(not_booleans):
            refused(partial(untyped(store).append, "c", [draft(f"f-bad{n}", ignorable=value)]),
                    "invalid_input", "ENV-012", f"a draft with ignorable {value!r}",
                    store=store, touched=["c"])
        events = wires("d", [draft("d-1")])
        refused(partial(store.import_conversation,
                        archive("d", [{**events[0], "ignorable": False}])),
                "invalid_input", "ENV-010", "an archived envelope with ignorable false",
                store=store, touched=["d"])

    run_once(ctx, body)


INTEGRAL_FLOATS: tuple[Any, ...] = (1.0, 1e0, 0.0)


@check("CAN-017")
def check_integral_floats(ctx: CheckContext) -> None:
    """CAN-017: an integer member given as 1.0 or 1e0 is refused; in a payload it is 1."""

    def body(store: LedgerStore) -> None:
        loose = untyped(store)
        store.append("c", [draft("n-0")])
        for n, number in enumerate(INTEGRAL_FLOATS):
            calls: dict[str, Any] = {
                "schemaVersion": partial(loose.append, "c",
                                         [draft(f"n-s{n}", schema_version=number)]),
                "expectedHead": partial(loose.append, "c", [draft(f"n-h{n}")],
                                        expected_head=number),
                "fromSeq": partial(loose.read, "c", from_seq=number),
                "toSeq": partial(loose.read, "c", to_seq=number),
                "limit": partial(loose.read, "c", limit=number),
            }
            for member, call in calls.items():
                if number == 0.0 and member == "expectedHead":
                    continue  # 0.0 is also the wrong head; 1.0 and 1e0 judge it
                refused(call, "invalid_input", "CAN-017", f"{member} {number!r} (a float)",
                        store=store, touched=["c"])
        before = ledger_bytes(store, "c")
        placed = accepted(partial(store.append, "p", [draft("n-p", 1.0), draft("n-q", 1e0)]),
                          "CAN-017", "a payload with the integral floats 1.0 and 1e0")
        expected = [draft("n-p", 1), draft("n-q", 1)]
        if [e.canonical_bytes() for e in placed] != [
            e.canonical_bytes() for e in _placed(expected, "p")
        ]:
            fail("CAN-017", "a payload's 1.0 or 1e0 is not stored as the integer 1")
        wire = wires("a", [draft("a-1")])[0]
        for text in (b"1.0", b"1e0"):
            data = archive("a", [wire]).replace(b'"schemaVersion":1', b'"schemaVersion":' + text)
            refused(partial(store.import_conversation, data), "invalid_input", "CAN-017",
                    f"an archive whose schemaVersion is {text.decode()}", store=store,
                    touched=["a"])
        if ledger_bytes(store, "c") != before:
            fail("CAN-017", "a refused call changed the ledger")

    run_once(ctx, body)


def _placed(batch: list[Any], conversation_id: str) -> list[Any]:
    from convledger.envelope import Envelope

    return [Envelope.from_draft(item, conversation_id, seq)
            for seq, item in enumerate(batch, start=1)]


OPERATION: dict[str, JsonValue] = {"operationId": "op", "authorization": {}}


@check("ERR-007", capability=Capability.SPILLS, optional=(PURGE,))
def check_spill_precedence(ctx: CheckContext) -> None:
    """ERR-007: spill calls wrong in two ways answer the earlier step of the general table."""

    def body(given: LedgerStore) -> None:
        store = require(given, Capability.SPILLS)
        store.append("c", [draft("stored")])
        store.put_spill("c", b"abc", media_type="text/plain", operation=OPERATION,
                        reference="live", event_id="s-1", occurred_at=STAMP)

        def deny(_: object) -> bool:
            return False

        def put(conversation: str, reference: str, media: str, event_id: str) -> Any:
            return partial(store.put_spill, conversation, b"x", media_type=media,
                           operation=OPERATION, reference=reference, event_id=event_id,
                           occurred_at=STAMP)

        cases: list[tuple[str, Any, str]] = [
            ("get_spill of an unknown reference with a denying callback",
             partial(store.get_spill, "c", "nope", authorize=deny), "not_found"),
            ("get_spill of an empty reference with a denying callback",
             partial(store.get_spill, "c", "", authorize=deny), "invalid_input"),
            ("put_spill with an empty media type on a live reference",
             put("c", "live", "", "s-2"), "invalid_input"),
            ("delete_spill of an unknown reference with a stored eventId",
             partial(store.delete_spill, "c", "nope", event_id="stored", occurred_at=STAMP),
             "not_found"),
            ("delete_spill with an unknown reason of an unknown reference",
             partial(untyped(store).delete_spill, "c", "nope", reason="lost", event_id="s-3",
                     occurred_at=STAMP), "invalid_input"),
            # an invalid conversationId (ENV-005) comes before the lookup that finds nothing
            # (found by mutation testing: spills/store.py's delete_spill)
            ("delete_spill in an empty conversationId",
             partial(store.delete_spill, "", "live", event_id="s-6", occurred_at=STAMP),
             "invalid_input"),
        ]
        if PURGE in store.capabilities:
            store.append("p", [draft("p-1")])
            require(store, Capability.PURGE).purge("p")
            cases += [
                ("put_spill with an empty media type into a purged conversation",
                 put("p", "r", "", "s-4"), "invalid_input"),
                ("put_spill with a stored eventId into a purged conversation",
                 put("p", "r", "text/plain", "stored"), "purged"),
                ("delete_spill of an unknown reference of a purged conversation",
                 partial(store.delete_spill, "p", "nope", event_id="s-5", occurred_at=STAMP),
                 "purged"),
            ]
        for what, call, kind in cases:
            refused(call, kind, "ERR-007", what, store=store, touched=["c", "p"])

    run_once(ctx, body)


@check("ERR-007", capability=Capability.SEARCH)
def check_search_precedence(ctx: CheckContext) -> None:
    """ERR-007: a search with a bad limit and a denying callback is invalid_input."""

    def body(given: LedgerStore) -> None:
        store = require(given, Capability.SEARCH)
        store.append("other", [draft("o-1", "findable words")])
        refused(partial(store.search, "me", "findable", limit=0, authorize=lambda _: False),
                "invalid_input", "ERR-007", "a search with limit 0 and a denying callback")

    run_once(ctx, body)


@check("LED-020", optional=(PURGE,))
def check_conversation_ids_refused(ctx: CheckContext) -> None:
    """LED-020: every ledger operation refuses a conversationId that is not a non-empty string."""

    def body(store: LedgerStore) -> None:
        loose = untyped(store)
        store.append("c", [draft("l-0")])
        bads: tuple[Any, ...] = ("", 5, None, "\ud800")
        for n, bad in enumerate(bads):
            calls: dict[str, Any] = {
                "append": partial(loose.append, bad, [draft(f"l-{n}")]),
                "read": partial(loose.read, bad),
                "head": partial(loose.head, bad),
                "exportConversation": partial(loose.export_conversation, bad),
            }
            if PURGE in store.capabilities:
                calls["purge"] = partial(untyped(require(store, Capability.PURGE)).purge, bad)
            for name, call in calls.items():
                refused(call, "invalid_input", "LED-020", f"{name} of conversationId {bad!r}",
                        store=store, touched=["c"])

    run_once(ctx, body)
