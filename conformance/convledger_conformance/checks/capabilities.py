"""Checks of chapter CAP: the declaration, refusals of absent capabilities, the ledger core."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from convledger.projections import SUMMARY
from convledger.runtime import Accept
from convledger.store import Capability, LedgerStore
from convledger_conformance.checks._support import (
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
from convledger_conformance.projection_model import extended
from convledger_conformance.registry import CheckContext, check

_ACCEPT = Accept("cap-key", "cap-input", "cap-run", "cap-answer", {"text": "x"})

ABSENT_OPERATIONS: dict[Capability, tuple[tuple[str, Callable[[LedgerStore], object]], ...]] = {
    Capability.PERSISTENCE: (("reopen", lambda store: store.reopen()),),
    Capability.TRANSITIONS: (
        ("transition", lambda store: store.transition(
            "c", _ACCEPT, event_id="cap-event", occurred_at=STAMP)),
        ("load_run", lambda store: store.load_run("c", "cap-run")),
        ("list_active_runs", lambda store: store.list_active_runs("c")),
        ("load_snapshot", lambda store: store.load_snapshot("c")),
        ("scan_recoverable", lambda store: store.scan_recoverable()),
    ),
    Capability.PURGE: (("purge", lambda store: store.purge("c")),),
    Capability.PROJECTIONS: (
        ("catch_up", lambda store: extended(store).catch_up("c", SUMMARY)),
        ("load_checkpoint", lambda store: extended(store).load_checkpoint("c", "n")),
        ("projection_status", lambda store: extended(store).projection_status("c", "n")),
    ),
    Capability.SPILLS: (
        ("put_spill", lambda store: extended(store).put_spill(
            "c", b"x", media_type="text/plain", reference="cap-r",
            operation={"operationId": "op", "authorization": {}},
            event_id="cap-spill", occurred_at=STAMP)),
        ("get_spill", lambda store: extended(store).get_spill(
            "c", "cap-r", authorize=lambda _: True)),
        ("delete_spill", lambda store: extended(store).delete_spill(
            "c", "cap-r", event_id="cap-delete", occurred_at=STAMP)),
        ("export_bundle", lambda store: extended(store).export_bundle("c")),
        ("import_bundle", lambda store: extended(store).import_bundle(b"\xa0")),
    ),
    Capability.SEARCH: (
        ("search", lambda store: extended(store).search("c", "word")),
        ("search with a callback", lambda store: extended(store).search(
            "c", "word", authorize=lambda _: True)),
    ),
}
"""The operations of each optional capability the interface has today (CAP-002).

Migration and multi_process are properties of opening a file, not
operations; the chapters still to come add their operations here as the
interface grows. The import
of a ``runtime`` companion without capability transitions is refused too
(TRN-109, checked in :mod:`convledger_conformance.checks.transitions`).
"""


@check("CAP-001")
def check_declaration_taken_as_given(ctx: CheckContext) -> None:
    """CAP-001: a store declares a set of capabilities, the same every time it is asked."""
    with fresh_store(ctx) as store, fresh_store(ctx) as other:
        declared = store.capabilities
        if not isinstance(declared, (set, frozenset)) or not all(
            isinstance(item, Capability) for item in declared
        ):
            fail("CAP-001", f"capabilities are {declared!r}, not a set of Capability")
        store.append("c", [draft("e")])
        if {store.capabilities, other.capabilities} != {declared}:
            fail("CAP-001", "the declaration changes between calls or stores")
        if frozenset(declared) != ctx.capabilities:
            fail("CAP-001", "the run did not take the store's declaration as given")


@check("CAP-002")
def check_absent_capabilities_refused(ctx: CheckContext) -> None:
    """CAP-002: an operation of an undeclared capability is not_supported and changes nothing."""

    def body(store: LedgerStore) -> None:
        store.append("c", drafts("c", 2))
        seq = 2
        for capability, operations in ABSENT_OPERATIONS.items():
            if capability in store.capabilities:
                continue
            for name, call in operations:
                refused(partial(call, store), "not_supported", "CAP-002",
                        f"{name} without capability {capability.value!r}", store=store,
                        touched=["c"])
                seq += 1
                placed = accepted(partial(store.append, "c", [draft(f"after-{name}")]),
                                  "CAP-002", f"append after a refused {name}")
                if placed[0].seq != seq:
                    fail("CAP-002", f"the refused {name} disturbed the ledger")

    run_once(ctx, body)


@check("CAP-003")
def check_ledger_capability(ctx: CheckContext) -> None:
    """CAP-003: every store declares capability ledger and implements all five operations."""

    def body(store: LedgerStore) -> None:
        if Capability.LEDGER not in store.capabilities:
            fail("CAP-003", "the store does not declare capability 'ledger'")
        placed = accepted(partial(store.append, "c", drafts("c", 3)), "CAP-003", "append")
        page = accepted(partial(store.read, "c", limit=2), "CAP-003", "read")
        head = accepted(partial(store.head, "c"), "CAP-003", "head")
        data = accepted(partial(store.export_conversation, "c"), "CAP-003", "export")
        if len(placed) != 3 or len(page.items) != 2 or page.next_seq != 3 or head != 3:
            fail("CAP-003", "append, read and head do not work together")
        with fresh_store(ctx) as target:
            accepted(partial(target.import_conversation, data), "CAP-003", "import")
            if ledger_bytes(target, "c") != ledger_bytes(store, "c"):
                fail("CAP-003", "an imported export holds other envelopes")

    run_once(ctx, body)

