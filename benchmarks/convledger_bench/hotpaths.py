"""The hot paths of any store, each against a floor measured in the same run (issue 34).

``convledger-conformance bench`` runs :func:`measure_hot_paths`: a fixed
workload (:class:`Workload`) on a store of the user's factory, in process or
over the wire, interleaved round by round with the same work on a floor, so
that the figure a CI gates on is a ratio that survives a noisy runner.

==================  =============================================  ===========================
figure              store call per round                           needs capability
==================  =============================================  ===========================
``read``            ``read`` of one page at a random seq           ledger
``head``            ``head`` of a conversation                     ledger
``export``          ``export_conversation`` of one conversation    ledger
``search``          one-word ``search`` by a conversation          search
``catch_up``        ``catch_up`` of the built-in summary, from      projections
                    scratch, over one conversation
``spill.get``       ``get_spill`` of a live object (4 KiB)         spills
``append.single``   ``append`` of one fresh draft                  ledger
``append.batch``    ``append`` of ``batch`` fresh drafts           ledger
``spill.put``       ``put_spill`` of a fresh 4 KiB object          spills
``transition``      one runtime transition (accept, acquire,       transitions
                    terminal of one run after another)
``import``          ``import_conversation`` of a fresh archive     ledger
==================  =============================================  ===========================

**Floors** (:data:`FLOORS`). Each figure's ratio is ``floor time / store
time``, the ratio of the two lower quartiles with a paired bootstrap interval
(:mod:`convledger_bench.ratios`; 1.0: as fast as the floor; higher is
better). The floor of a figure is one of

* ``memory``: the reference in-memory store (``convledger.memory``) doing the
  same call on the same ledger, in process: a CPU yardstick;
* ``minimal-sqlite``: the minimal ledger transaction on bare ``sqlite3``
  (:mod:`convledger_bench.minimal`, WAL and ``synchronous=FULL``): a
  durable-write yardstick, for the figures that write (appends, transitions,
  import; ``spill.put`` adds its 4 KiB row to the same transaction) and for
  ``read`` and ``head``;
* ``memory-wire``: the same in-memory store served over the wire protocol
  by ``python -m convledger serve-wire --store memory``, for a store measured
  with ``--command``: its calls cross the same pipes and processes, so the
  scheduling noise of inter-process calls hits both sides;
* ``sqlite-reference``: the reference SQLite store's ``search`` on the same
  ledger (the in-memory store does not search);
* ``hook MODULE:CALLABLE``: the user's own raw floor (:data:`FloorHook`).

``--floor auto`` (the default) takes ``minimal-sqlite`` for the writing
figures of a store that declares ``persistence`` and ``memory`` (over the
wire: ``memory-wire``) for the rest; every ratio names its floor.
"""

from __future__ import annotations

import contextlib
import gc
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from convledger.capabilities import Capability
from convledger.memory import MemoryStore
from convledger.store import LedgerStore
from convledger_bench.hotpath_calls import (
    MAKERS,
    NEEDS,
    Workload,
    fill_ledger,
    fill_minimal,
)
from convledger_bench.measure import interleave
from convledger_bench.minimal import MinimalLedger
from convledger_bench.ratios import RatioEstimate, estimate, quantile

MEMORY = "memory"
MEMORY_WIRE = "memory-wire"
MINIMAL_SQLITE = "minimal-sqlite"
SQLITE_REFERENCE = "sqlite-reference"
FLOORS = {
    MEMORY: "the reference in-memory store, same call, in process (CPU yardstick)",
    MEMORY_WIRE: "the reference in-memory store served over the wire (python -m convledger "
    "serve-wire --store memory), same call: the CPU and IPC yardstick of a --command store",
    MINIMAL_SQLITE: "the minimal ledger transaction on bare sqlite3, WAL + synchronous=FULL "
    "(durable-write yardstick)",
    SQLITE_REFERENCE: "the reference SQLite store, same call (search yardstick)",
}
"""Every built-in floor and what it is."""

WRITES = ("append.single", "append.batch", "spill.put", "transition", "import")
"""The figures that write: their ``auto`` floor is durable for a persistent store."""
FIGURES = ("read", "head", "export", "search", "catch_up", "spill.get", *WRITES)
"""Every figure, in the order a run measures them (reads first, on the ledger as filled)."""

FloorHook = Callable[[str, Workload], "Callable[[int], object] | None"]
"""``--floor MODULE:CALLABLE``: ``hook(figure, workload)`` returns the raw floor of that figure
as ``call(turn)`` (one call per round, ``turn`` counts from 0, so each call can use fresh keys),
or None to leave the figure on its ``auto`` floor."""

__all__ = ["FIGURES", "FLOORS", "FloorHook", "Floors", "HotPath", "HotPathRun", "Workload",
           "measure_hot_paths", "measure_one", "pooled"]


@attrs.frozen
class HotPath:
    """One measured figure: its ratio to its floor with the run's own spread."""

    id: str
    floor: str
    """The floor's name (a key of :data:`FLOORS`, or ``hook MODULE:CALLABLE``)."""
    estimate: RatioEstimate
    store_median: float
    """Seconds per store call (the samples' lower quartile, :mod:`~convledger_bench.ratios`)."""
    floor_median: float
    events: int
    """Events one store call handles."""
    samples: tuple[tuple[float, ...], tuple[float, ...]] = attrs.field(default=((), ()),
                                                                       eq=False, repr=False)
    """The store's and the floor's seconds per call, round by round (kept for :func:`pooled`)."""

    def as_json(self) -> dict[str, Any]:
        """The figure as plain JSON (a baseline's entry)."""
        return {"floor": self.floor, "store_median": self.store_median,
                "floor_median": self.floor_median, "events": self.events,
                **self.estimate.as_json()}


@attrs.frozen
class HotPathRun:
    """Every figure of one run and the figures not measured, with the reason."""

    figures: tuple[HotPath, ...]
    skipped: dict[str, str]
    workload: Workload

class Floors:
    """The floor ledgers of one run, built with the same events as the store's ledger."""

    def __init__(self, workload: Workload, work: Path, hook: FloorHook | None,
                 hook_name: str, memory: Callable[[], LedgerStore] | None = None) -> None:
        self.workload = workload
        self.work = work
        self.hook = hook
        self.hook_name = hook_name
        self.memory_name = MEMORY if memory is None else MEMORY_WIRE
        self.memory = MemoryStore() if memory is None else memory()
        fill_ledger(self.memory, workload)
        self._minimal: MinimalLedger | None = None
        self._sqlite: LedgerStore | None = None

    @property
    def minimal(self) -> MinimalLedger:
        """The minimal SQLite ledger (built on first use)."""
        if self._minimal is None:
            path = self.work / "minimal.sqlite"
            building = MinimalLedger(path, synchronous="OFF")
            fill_minimal(building, self.workload)
            building.close()
            self._minimal = MinimalLedger(path)
        return self._minimal

    @property
    def sqlite(self) -> LedgerStore:
        """The reference SQLite store on the same ledger (built on first use)."""
        if self._sqlite is None:
            from convledger.sqlite import SqliteStore

            self._sqlite = SqliteStore(self.work / "reference.sqlite", synchronous="NORMAL")
            fill_ledger(self._sqlite, self.workload)
        return self._sqlite

    def close(self) -> None:
        """Close every floor ledger."""
        self.memory.close()
        if self._minimal is not None:
            self._minimal.close()
        if self._sqlite is not None:
            self._sqlite.close()


def _choose(figure_id: str, floor: str, persistent: bool) -> str:
    if floor != "auto":
        return floor
    return MINIMAL_SQLITE if persistent and figure_id in WRITES else MEMORY_WIRE


def _calls(
    figure_id: str, store: LedgerStore, floors: Floors, floor: str, count: int
) -> tuple[Callable[[int], object], Callable[[int], object], str, int]:
    """(store call, floor call, floor name, events per call) of one figure, ``count`` turns."""
    workload = floors.workload
    maker = MAKERS[figure_id]
    if floors.hook is not None:
        hooked = floors.hook(figure_id, workload)
        if hooked is not None:
            store_call, events = maker(store, workload, count, None)
            return store_call, hooked, f"hook {floors.hook_name}", events
    if figure_id == "search":
        floor = SQLITE_REFERENCE
    elif floor == MINIMAL_SQLITE and figure_id in ("export", "catch_up", "spill.get"):
        floor = MEMORY_WIRE  # the minimal ledger has no archive, projection or spill read
    if floor in (MEMORY, MEMORY_WIRE):
        floor = floors.memory_name
    store_call, events = maker(store, workload, count, None)
    if floor == MINIMAL_SQLITE:
        floor_call, _ = maker(None, workload, count, floors.minimal)
    elif floor == SQLITE_REFERENCE:
        floor_call, _ = maker(floors.sqlite, workload, count, None)
    else:
        floor_call, _ = maker(floors.memory, workload, count, None)
    return store_call, floor_call, floor, events

def measure_one(
    figure_id: str, store: LedgerStore, floors: Floors, floor: str, persistent: bool
) -> HotPath:
    """One figure: store and floor calls in rotation, ``rounds`` samples each after warm-up."""
    workload = floors.workload
    rounds = workload.rounds_of(figure_id)
    count = rounds + workload.warmup
    store_call, floor_call, floor_name, events = _calls(
        figure_id, store, floors, _choose(figure_id, floor, persistent), count)
    turns = {"store": _Turns(), "floor": _Turns()}
    gc.collect()
    samples = interleave(
        {"store": lambda: store_call(turns["store"].next()),
         "floor": lambda: floor_call(turns["floor"].next())},
        rounds=rounds, warmup=workload.warmup,
    )
    return _figure(figure_id, floor_name, samples["store"], samples["floor"], events)


def _figure(figure_id: str, floor: str, store: Sequence[float], floor_samples: Sequence[float],
            events: int) -> HotPath:
    return HotPath(figure_id, floor, estimate(store, floor_samples), quantile(store),
                   quantile(floor_samples), events, (tuple(store), tuple(floor_samples)))


def pooled(first: HotPath, second: HotPath) -> HotPath:
    """One figure from the rounds of two measurements of it (``--again``): a narrower interval."""
    if (first.id, first.floor) != (second.id, second.floor):
        raise ValueError(f"cannot pool {first.id} on {first.floor} with {second.id} "
                         f"on {second.floor}")
    return _figure(first.id, first.floor, first.samples[0] + second.samples[0],
                   first.samples[1] + second.samples[1], first.events)


class _Turns:
    def __init__(self) -> None:
        self.value = -1

    def next(self) -> int:
        self.value += 1
        return self.value


def measure_hot_paths(
    factory: Callable[[], LedgerStore],
    workload: Workload,
    *,
    floor: str = "auto",
    hook: FloorHook | None = None,
    hook_name: str = "",
    memory: Callable[[], LedgerStore] | None = None,
    only: Sequence[str] | None = None,
    work: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> HotPathRun:
    """Every figure the store declares, on one store of ``factory`` filled with the workload.

    ``memory`` makes the in-memory floor's store (``memory-wire``: a wire client of
    ``serve-wire --store memory``); by default it is a :class:`MemoryStore` in process.
    """
    if floor not in ("auto", *FLOORS):
        raise ValueError(f"unknown floor {floor!r} (auto, {', '.join(FLOORS)})")
    with _workdir(work) as directory:
        floors = Floors(workload, directory, hook, hook_name, memory)
        store = factory()
        try:
            fill_ledger(store, workload)
            declared = store.capabilities
            persistent = Capability.PERSISTENCE in declared
            figures: list[HotPath] = []
            skipped: dict[str, str] = {}
            for figure_id in FIGURES:
                if only is not None and figure_id not in only:
                    continue
                needed = NEEDS.get(figure_id)
                if needed is not None and needed not in declared:
                    skipped[figure_id] = f"the store does not declare {needed.value}"
                    continue
                if progress is not None:
                    progress(figure_id)
                figures.append(measure_one(figure_id, store, floors, floor, persistent))
        finally:
            store.close()
            floors.close()
    return HotPathRun(tuple(figures), skipped, workload)


@contextlib.contextmanager
def _workdir(work: Path | None) -> Iterator[Path]:
    if work is not None:
        yield work
        return
    with tempfile.TemporaryDirectory(prefix="convledger-bench-") as directory:
        yield Path(directory)
