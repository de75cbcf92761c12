"""The whole run: every figure against a store factory and the raw-SQLite floor, here and now."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from convledger.capabilities import Capability
from convledger.store import LedgerStore
from convledger_bench.figures import (
    append_figure,
    canonical_figure,
    catch_up_figure,
    export_figure,
    import_figure,
    memory_append_figure,
    read_figure,
    scaling_figure,
    transition_figure,
)
from convledger_bench.floor import Floor
from convledger_bench.measure import Figure, Plan
from convledger_bench.report import BenchReport, machine
from convledger_bench.search import (
    SEARCH_MODES,
    SearchFloor,
    search_figure,
    search_rounds,
    search_scaling_figure,
    searchable,
)
from convledger_bench.workloads import APPENDS, READ_PAGES, copy_ledger, fill, reference_file


def run_bench(
    factory: Callable[[], LedgerStore],
    *,
    quick: bool,
    sizes: Sequence[int] | None = None,
    work: Path | None = None,
    ledger: Callable[[int], LedgerStore] | None = None,
) -> BenchReport:
    """Measure every figure against ``factory``'s stores and the raw-SQLite floor, here and now.

    ``factory()`` must give an empty store; it is filled through ``append``
    to each ledger size (quick: 1e3 and 2e4 events; full: 1e3 and 1e5), unless
    ``ledger(size)`` gives such a filled store directly. The floor runs on the
    reference SQLite ledger of the same size, built in ``work`` (a temporary
    directory by default).
    """
    plan = Plan.of(quick=quick, sizes=sizes or ((1000, 20_000) if quick else (1000, 100_000)))
    with contextlib.ExitStack() as stack:
        if work is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="convledger-")))
        stores: dict[int, LedgerStore] = {}
        for size in plan.sizes:
            if ledger is not None:
                store = ledger(size)
            else:
                store = factory()
                fill(store, size)
            stack.callback(store.close)
            stores[size] = store
        small = plan.sizes[0]
        store = stores[small]
        figures: list[Figure] = []
        skipped: dict[str, str] = {}
        searchers = {size: searchable(stores[size]) for size in plan.sizes}
        for size in plan.sizes:  # reads, search, export, catch-up first, on the ledgers as filled
            search_floor = SearchFloor(copy_ledger(reference_file(work, size),
                                                   work / f"read-floor-{size}.sqlite"))
            stack.callback(search_floor.close)
            for page in READ_PAGES:
                figures.append(read_figure(stores[size], search_floor.raw, size, page,
                                           plan.read_rounds))
            searcher = searchers[size]
            if searcher is not None:
                figures.extend(search_figure(searcher, search_floor, size, mode,
                                             search_rounds(plan, mode)) for mode in SEARCH_MODES)
        if len(plan.sizes) > 1:
            figures.append(scaling_figure(stores[small], stores[plan.sizes[-1]],
                                          (small, plan.sizes[-1]), plan.read_rounds))
            low, high = searchers[small], searchers[plan.sizes[-1]]
            if low is not None and high is not None:
                figures.extend(search_scaling_figure(low, high, (small, plan.sizes[-1]), mode,
                                                     search_rounds(plan, mode))
                               for mode in SEARCH_MODES)
        if searchers[small] is None:
            skipped["search"] = "the store does not declare search"
        figures.append(export_figure(store, plan.export_rounds))
        caught_up = catch_up_figure(store, plan.export_rounds, figure_id="projection.catch_up")
        if caught_up is None:
            skipped["projection.catch_up"] = "the store does not declare projections"
        else:
            figures.append(caught_up)
        floor = Floor(reference_file(work, small), work)
        stack.callback(floor.close)
        if Capability.TRANSITIONS in store.capabilities:
            figures.append(transition_figure(store, floor, small, plan.append_rounds, base=0))
        else:
            skipped["append.transition"] = "the store does not declare transitions"
        for number, name in enumerate(APPENDS):
            rounds = plan.append_rounds if name == "single" else plan.batch_rounds
            figures.append(append_figure(store, floor, small, name, rounds,
                                         base=(number + 1) * 10**8))
        figures.append(import_figure(store, floor, plan.export_rounds, base=5 * 10**8))
        encoded = canonical_figure(plan.read_rounds)
        if encoded is not None:
            figures.append(encoded)
        figures.extend(memory_append_figure(name, plan.append_rounds)
                       for name in ("single", "batch100"))
        return BenchReport(tuple(figures), machine(), skipped)
    raise AssertionError("unreachable")  # pragma: no cover
