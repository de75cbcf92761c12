"""One probe per operation of every optional capability (CAP-002), derived from the table.

The capability table is :data:`convledger.capabilities.OPERATIONS`. For each
of its optional operations this module holds the calls that prove the
operation refused when its capability is not declared: :data:`PROBES`, by the
operation's method, one or more ``(label, call)`` where ``call(store,
conversation)`` calls the operation on one conversation of the store. The
CAP-002 check (:mod:`convledger_conformance.ledger.checks_capabilities`) calls every
probe; the ledger state machine calls those of the operations the wire
protocol carries, between its ledger steps, since it runs in process and over
the wire alike. ``tests/test_capability_table.py`` proves every optional
operation of the table has a probe, and no probe names another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from convledger.canonical import JsonValue
from convledger.capabilities import Capability, Operation, optional_operations
from convledger.host.rows import ChildLink
from convledger.interface import EveryOperation, unchecked
from convledger.projections import SUMMARY
from convledger.runtime import Accept
from convledger.store_interface import LedgerStore

Call = Callable[[EveryOperation, str], object]
"""A call of one operation on one conversation of a store."""

_ACCEPT: Final = Accept("machine-key", "machine-input", "machine-run", "machine-answer",
                        {"text": "x"})
_STAMP: Final = "2024-05-01T12:00:00.250+02:00"
_OPERATION: Final[dict[str, JsonValue]] = {"operationId": "machine-operation", "authorization": {}}

PROBES: Final[dict[str, tuple[tuple[str, Call], ...]]] = {
    "reopen": (("reopen", lambda store, c: store.reopen()),),
    "transition": (("transition", lambda store, c: store.transition(
        c, _ACCEPT, event_id="machine/transition", occurred_at=_STAMP)),),
    "load_run": (("load_run", lambda store, c: store.load_run(c, "machine-run")),),
    "list_active_runs": (("list_active_runs", lambda store, c: store.list_active_runs(c)),),
    "load_snapshot": (("load_snapshot", lambda store, c: store.load_snapshot(c)),),
    "scan_recoverable": (("scan_recoverable", lambda store, c: store.scan_recoverable()),),
    "purge": (("purge", lambda store, c: store.purge(c)),),
    "catch_up": (("catch_up", lambda store, c: store.catch_up(c, SUMMARY)),),
    "load_checkpoint": (
        ("load_checkpoint", lambda store, c: store.load_checkpoint(c, SUMMARY.name)),
    ),
    "projection_status": (
        ("projection_status", lambda store, c: store.projection_status(c, SUMMARY.name)),
    ),
    "put_spill": (("put_spill", lambda store, c: store.put_spill(
        c, b"x", media_type="text/plain", reference="machine-spill", operation=_OPERATION,
        event_id="machine/spill", occurred_at=_STAMP)),),
    "get_spill": (("get_spill", lambda store, c: store.get_spill(
        c, "machine-spill", authorize=lambda _: True)),),
    "delete_spill": (("delete_spill", lambda store, c: store.delete_spill(
        c, "machine-spill", event_id="machine/spill-deleted", occurred_at=_STAMP)),),
    "export_bundle": (("export_bundle", lambda store, c: store.export_bundle(c)),),
    "import_bundle": (("import_bundle", lambda store, c: store.import_bundle(b"\xa0")),),
    "search": (
        ("search", lambda store, c: store.search(c, "word")),
        ("search with a callback", lambda store, c: store.search(
            c, "word", authorize=lambda _: True)),
    ),
    "write_fact_rows": (("write_fact_rows", lambda store, c: store.write_fact_rows(
        ChildLink(c, "machine-child", "spawned", 0, {}), [])),),
    "child_links": (("child_links", lambda store, c: store.child_links(c)),),
    "schedules": (("schedules", lambda store, c: store.schedules(c)),),
    "open_handle": (("open_handle", lambda store, c: store.open_handle()),),
    "locator": (("locator", lambda store, c: store.locator()),),
}
"""The probes of every optional operation, by method (CAP-002)."""

Probe = tuple[Capability, str, Callable[[LedgerStore, str], object]]
"""(capability, label, a call of the operation on one conversation of a store)."""


def _probe(call: Call) -> Callable[[LedgerStore, str], object]:
    def probe(store: LedgerStore, conversation: str) -> object:
        # The operation may be undeclared on purpose: that is what is probed.
        return call(unchecked(store), conversation)

    return probe


def probes(*, carried_only: bool = False) -> tuple[Probe, ...]:
    """Every probe in the table's order; ``carried_only``: of operations the wire carries."""
    chosen: list[tuple[Capability, Operation]] = [
        (capability, operation)
        for capability, operation in optional_operations()
        if operation.wire or not carried_only
    ]
    return tuple(
        (capability, label, _probe(call))
        for capability, operation in chosen
        for label, call in PROBES[operation.method]
    )
