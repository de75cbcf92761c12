"""One protocol per capability, and :func:`require`, the one typed narrowing (``capabilities.md``).

=====================  =======================  ======================================
capability             protocol                 abstract base (its hooks only)
=====================  =======================  ======================================
``ledger``             :class:`LedgerStore`     ``convledger.store_base.StoreBase``
``persistence``        :class:`PersistentStore` none: implement ``reopen``
``transitions``        :class:`TransitionStore` ``runtime.store.TransitionsBase``
``purge``              :class:`PurgeStore`      ``runtime.store.PurgeBase``
``projections``        :class:`ProjectionStore` ``projections.store.ProjectionsBase``
``spills``             :class:`SpillStore`      ``spills.store.SpillsBase``
``search``             :class:`SearchStore`     ``search.store.SearchBase``
``fact_rows``          :class:`FactRowStore`    ``host.store.FactRowsBase``
``multi_process``      :class:`MultiProcessStore` none: implement ``open_handle``, ``locator``
``migration``          no operations            (opening SQLite files, chapter SQL)
=====================  =======================  ======================================

Every protocol extends :class:`LedgerStore` (CAP-003), so the narrowed store
still appends, reads and exports. :func:`require` checks the declaration
(CAP-001: taken as given, never detected) and narrows the type; it refuses an
undeclared capability the way the store itself must (CAP-002).
"""

from __future__ import annotations

from typing import Literal, Protocol, cast, overload

from convledger.capabilities import Capability, not_supported
from convledger.handles import MultiProcessStore
from convledger.host.store import FactRowStore
from convledger.projections.store import ProjectionStore
from convledger.runtime.store import PurgeStore, TransitionStore
from convledger.search.store import SearchStore
from convledger.spills.store import SpillStore
from convledger.store_interface import LedgerStore, PersistentStore

PROTOCOLS: dict[Capability, object] = {
    Capability.LEDGER: LedgerStore,
    Capability.PERSISTENCE: PersistentStore,
    Capability.TRANSITIONS: TransitionStore,
    Capability.PURGE: PurgeStore,
    Capability.PROJECTIONS: ProjectionStore,
    Capability.SPILLS: SpillStore,
    Capability.SEARCH: SearchStore,
    Capability.FACT_ROWS: FactRowStore,
    Capability.MULTI_PROCESS: MultiProcessStore,
}
"""The protocol of each capability that has operations."""


@overload
def require(store: LedgerStore, capability: Literal[Capability.PERSISTENCE]) -> PersistentStore:
    ...


@overload
def require(store: LedgerStore, capability: Literal[Capability.TRANSITIONS]) -> TransitionStore:
    ...


@overload
def require(store: LedgerStore, capability: Literal[Capability.PURGE]) -> PurgeStore: ...


@overload
def require(store: LedgerStore, capability: Literal[Capability.PROJECTIONS]) -> ProjectionStore:
    ...


@overload
def require(store: LedgerStore, capability: Literal[Capability.SPILLS]) -> SpillStore: ...


@overload
def require(store: LedgerStore, capability: Literal[Capability.SEARCH]) -> SearchStore: ...


@overload
def require(store: LedgerStore, capability: Literal[Capability.FACT_ROWS]) -> FactRowStore: ...


@overload
def require(
    store: LedgerStore, capability: Literal[Capability.MULTI_PROCESS]
) -> MultiProcessStore: ...


@overload
def require(store: LedgerStore, capability: Capability) -> LedgerStore: ...


def require(store: LedgerStore, capability: Capability) -> LedgerStore:
    """The store as the protocol of ``capability``; not_supported unless it declares it.

    The declaration is the store's own (CAP-001); a store that does not
    declare ``capability`` is refused here with kind ``not_supported``
    (CAP-002), so code past this call may use every operation of the protocol.
    """
    if capability not in store.capabilities:
        raise not_supported(capability, f"capability {capability.value}")
    return store


class EveryOperation(
    ProjectionStore,
    SpillStore,
    PersistentStore,
    TransitionStore,
    PurgeStore,
    SearchStore,
    FactRowStore,
    MultiProcessStore,
    Protocol,
):
    """Every operation of the capability table, whichever the store declares.

    Not for implementers: a store implements the protocols of what it
    declares. This is the type of a client that forwards every operation (the
    suite's wire client) and of the CAP-002 probes, which call operations a
    store does not declare to prove they are refused.
    """


def unchecked(store: LedgerStore) -> EveryOperation:
    """The store typed with every operation, WITHOUT checking its declaration.

    Only for calls that must reach an undeclared operation: the CAP-002
    probes, which prove that such an operation is refused.
    """
    return cast(EveryOperation, store)
