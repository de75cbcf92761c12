"""Checks of chapter CAP: the declaration, refusals of absent capabilities, the ledger core."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.probes import probes
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    NOT_FRESH,
    accepted,
    draft,
    drafts,
    fail,
    fresh_store,
    ledger_bytes,
    refused,
    run_once,
)

StoreCall = Callable[[LedgerStore], object]


def _on_c(call: Callable[[LedgerStore, str], object]) -> StoreCall:
    return lambda store: call(store, "c")


def _absent_operations() -> dict[Capability, tuple[tuple[str, StoreCall], ...]]:
    found: dict[Capability, list[tuple[str, StoreCall]]] = {}
    for capability, label, call in probes():
        found.setdefault(capability, []).append((label, _on_c(call)))
    return {capability: tuple(calls) for capability, calls in found.items()}


ABSENT_OPERATIONS: dict[Capability, tuple[tuple[str, StoreCall], ...]] = _absent_operations()
"""The probes of every optional capability's operations (CAP-002), on conversation ``c``.

Derived from the capability table through :mod:`convledger_conformance.ledger.probes`.
Migration and multi_process are properties of opening and sharing a store,
not operations. The import of a ``runtime`` companion without capability
transitions is refused too (TRN-109, checked in
:mod:`convledger_conformance.runtime.checks_replay`).
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



FRESH_PROBE: tuple[str, str] = ("conformance-fresh-store-probe", "conformance-fresh-store-event")
"""The conversation and eventId the fresh-store check writes (CAP-005)."""



@check("CAP-005")
def check_fresh_store(ctx: CheckContext) -> None:
    """CAP-005: each store the factory makes is empty and shares nothing with the last one.

    The runner runs this check first and alone, and stops the run when it proves
    the stores are not new and empty (:data:`NOT_FRESH`): every later check would
    fail on the shared or leftover data.
    """
    conversation, event = FRESH_PROBE
    with fresh_store(ctx) as first:
        if first.head(conversation) != 0:
            fail("CAP-005", f"{NOT_FRESH} a new store already holds conversation "
                 f"{conversation!r}: the factory returned a store that is not empty")
        first.append(conversation, [draft(event)])
        with fresh_store(ctx) as second:
            found = second.head(conversation)
            if found != 0:
                fail("CAP-005", f"{NOT_FRESH} a second new store sees the event the first "
                     f"one appended (head {found}): the factory's stores share one database")
