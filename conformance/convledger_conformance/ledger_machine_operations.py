"""The operations of the optional capabilities, as the ledger machine calls them (CAP-002).

Between its ledger steps the machine calls every operation of a capability the
store does not declare; each must be refused as ``not_supported`` and change
nothing (CAP-002, ERR-004).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, cast

from convledger.canonical import JsonValue
from convledger.projections import SUMMARY
from convledger.runtime import Accept
from convledger.store import Capability, ExtendedStore, LedgerStore

_ACCEPT: Final = Accept("machine-key", "machine-input", "machine-run", "machine-answer",
                        {"text": "x"})
_STAMP: Final = "2024-05-01T12:00:00.250+02:00"
_OPERATION: Final[dict[str, JsonValue]] = {"operationId": "machine-operation", "authorization": {}}

OptionalOperation = tuple[Capability, str, Callable[[LedgerStore, str], object]]
"""(capability, operation name, a call of it on one conversation of a store)."""


def _extended(store: LedgerStore) -> ExtendedStore:
    return cast(ExtendedStore, store)


OPTIONAL_OPERATIONS: Final[tuple[OptionalOperation, ...]] = (
    (Capability.PERSISTENCE, "reopen", lambda store, c: store.reopen()),
    (Capability.TRANSITIONS, "transition", lambda store, c: store.transition(
        c, _ACCEPT, event_id="machine/transition", occurred_at=_STAMP)),
    (Capability.TRANSITIONS, "load_run", lambda store, c: store.load_run(c, "machine-run")),
    (Capability.TRANSITIONS, "list_active_runs", lambda store, c: store.list_active_runs(c)),
    (Capability.TRANSITIONS, "load_snapshot", lambda store, c: store.load_snapshot(c)),
    (Capability.TRANSITIONS, "scan_recoverable", lambda store, c: store.scan_recoverable()),
    (Capability.PURGE, "purge", lambda store, c: store.purge(c)),
    (Capability.PROJECTIONS, "catch_up", lambda store, c: _extended(store).catch_up(c, SUMMARY)),
    (Capability.PROJECTIONS, "load_checkpoint",
     lambda store, c: _extended(store).load_checkpoint(c, SUMMARY.name)),
    (Capability.PROJECTIONS, "projection_status",
     lambda store, c: _extended(store).projection_status(c, SUMMARY.name)),
    (Capability.SPILLS, "put_spill", lambda store, c: _extended(store).put_spill(
        c, b"x", media_type="text/plain", reference="machine-spill", operation=_OPERATION,
        event_id="machine/spill", occurred_at=_STAMP)),
    (Capability.SPILLS, "get_spill", lambda store, c: _extended(store).get_spill(
        c, "machine-spill", authorize=lambda _: True)),
    (Capability.SPILLS, "delete_spill", lambda store, c: _extended(store).delete_spill(
        c, "machine-spill", event_id="machine/spill-deleted", occurred_at=_STAMP)),
    (Capability.SPILLS, "export_bundle", lambda store, c: _extended(store).export_bundle(c)),
    (Capability.SPILLS, "import_bundle", lambda store, c: _extended(store).import_bundle(b"\xa0")),
    (Capability.SEARCH, "search", lambda store, c: _extended(store).search(c, "word")),
    (Capability.SEARCH, "search with a callback", lambda store, c: _extended(store).search(
        c, "word", authorize=lambda _: True)),
)
"""Every operation of an optional capability, called on one of the machine's conversations.

A store must refuse each operation of a capability it does not declare with
``not_supported`` and change nothing (CAP-002, ERR-004), whatever the
conversation holds; the machine calls them between its ledger steps.
"""
