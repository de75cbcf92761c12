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
time``, the ratio of the two medians with a paired bootstrap interval
(:mod:`convledger_bench.ratios`; 1.0: as fast as the floor; higher is
better). The floor of a figure is one of

* ``memory``: the reference in-memory store (``convledger.memory``) doing the
  same call on the same ledger, in process: a CPU yardstick;
* ``minimal-sqlite``: the minimal ledger transaction on bare ``sqlite3``
  (:mod:`convledger_bench.minimal`, WAL and ``synchronous=FULL``): a
  durable-write yardstick, for the figures that write (appends, transitions,
  import; ``spill.put`` adds its 4 KiB row to the same transaction) and for
  ``read`` and ``head``;
* ``sqlite-reference``: the reference SQLite store's ``search`` on the same
  ledger (the in-memory store does not search);
* ``hook MODULE:CALLABLE``: the user's own raw floor (:data:`FloorHook`).

``--floor auto`` (the default) takes ``minimal-sqlite`` for the writing
figures of a store that declares ``persistence`` and ``memory`` for the
rest; every ratio names its floor.
"""

from __future__ import annotations

import contextlib
import gc
import random
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from convledger.canonical import JsonValue
from convledger.capabilities import Capability
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.store import LedgerStore
from convledger_bench.measure import interleave
from convledger_bench.minimal import HEAD as MINIMAL_HEAD
from convledger_bench.minimal import INSERT_EVENT as MINIMAL_INSERT
from convledger_bench.minimal import UPSERT_HEAD as MINIMAL_UPSERT_HEAD
from convledger_bench.minimal import MinimalLedger, event_row
from convledger_bench.ratios import RatioEstimate, estimate
from convledger_bench.workloads import draft, plan_transitions

MEMORY = "memory"
MINIMAL_SQLITE = "minimal-sqlite"
SQLITE_REFERENCE = "sqlite-reference"
FLOORS = {
    MEMORY: "the reference in-memory store, same call, in process (CPU yardstick)",
    MINIMAL_SQLITE: "the minimal ledger transaction on bare sqlite3, WAL + synchronous=FULL "
    "(durable-write yardstick)",
    SQLITE_REFERENCE: "the reference SQLite store, same call (search yardstick)",
}
"""Every built-in floor and what it is."""

WRITES = ("append.single", "append.batch", "spill.put", "transition", "import")
"""The figures that write: their ``auto`` floor is durable for a persistent store."""
FIGURES = ("read", "head", "export", "search", "catch_up", "spill.get", *WRITES)
"""Every figure, in the order a run measures them (reads first, on the ledger as filled)."""

FloorHook = Callable[[str, "Workload"], "Callable[[int], object] | None"]
"""``--floor MODULE:CALLABLE``: ``hook(figure, workload)`` returns the raw floor of that figure
as ``call(turn)`` (one call per round, ``turn`` counts from 0, so each call can use fresh keys),
or None to leave the figure on its ``auto`` floor."""

SEARCH_WORDS = ("assertion", "archive", "escaped", "encoder", "suite", "failing", "writer")
SPILL_BYTES = bytes(range(256)) * 16
OCCURRED_AT = "2026-05-09T07:35:25.123456Z"


@attrs.frozen
class Workload:
    """The fixed workload of a run: a baseline is only compared with a run of the same one."""

    conversations: int = 4
    per_conversation: int = 500
    rounds: int = 100
    batch: int = 50
    page: int = 100
    warmup: int = 2

    @classmethod
    def named(cls, name: str) -> Workload:
        """``default`` or ``small`` (a short one, for tests)."""
        if name == "default":
            return cls()
        if name == "small":
            return cls(conversations=2, per_conversation=100, rounds=15, batch=10, page=20)
        raise ValueError(f"unknown workload {name!r} (default, small)")

    @property
    def events(self) -> int:
        """Events in the ledger before the first figure."""
        return self.conversations * self.per_conversation

    def conversation(self, number: int) -> str:
        """The ``number``-th conversation of the ledger (numbers wrap around)."""
        return f"bench-{number % self.conversations:06d}"

    def rounds_of(self, figure_id: str) -> int:
        """Rounds of a figure: half (at least 15) for those that handle a whole conversation."""
        return max(15, self.rounds // 2) if figure_id in ("import", "catch_up", "export") \
            else self.rounds

    def as_json(self) -> dict[str, int]:
        """The workload as plain JSON (kept in a baseline)."""
        return attrs.asdict(self)


@attrs.frozen
class HotPath:
    """One measured figure: its ratio to its floor with the run's own spread."""

    id: str
    floor: str
    """The floor's name (a key of :data:`FLOORS`, or ``hook MODULE:CALLABLE``)."""
    estimate: RatioEstimate
    store_median: float
    """Seconds per store call."""
    floor_median: float
    events: int
    """Events one store call handles."""

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


def fill_ledger(store: LedgerStore, workload: Workload) -> None:
    """The ledger of the workload, through ``append`` in turns of 10, as writers would fill it."""
    index = 0
    for start in range(0, workload.per_conversation, 10):
        take = min(10, workload.per_conversation - start)
        for number in range(workload.conversations):
            store.append(workload.conversation(number),
                         [draft(index + offset) for offset in range(take)])
            index += take


def _fill_minimal(ledger: MinimalLedger, workload: Workload) -> None:
    index = 0
    for start in range(0, workload.per_conversation, 10):
        take = min(10, workload.per_conversation - start)
        for number in range(workload.conversations):
            ledger.append(workload.conversation(number),
                          [event_row(index + offset) for offset in range(take)])
            index += take


class Floors:
    """The floor ledgers of one run, built with the same events as the store's ledger."""

    def __init__(self, workload: Workload, work: Path, hook: FloorHook | None,
                 hook_name: str) -> None:
        self.workload = workload
        self.work = work
        self.hook = hook
        self.hook_name = hook_name
        self.memory = MemoryStore()
        fill_ledger(self.memory, workload)
        self._minimal: MinimalLedger | None = None
        self._sqlite: LedgerStore | None = None

    @property
    def minimal(self) -> MinimalLedger:
        """The minimal SQLite ledger (built on first use)."""
        if self._minimal is None:
            path = self.work / "minimal.sqlite"
            building = MinimalLedger(path, synchronous="OFF")
            _fill_minimal(building, self.workload)
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
    return MINIMAL_SQLITE if persistent and figure_id in WRITES else MEMORY


def _calls(
    figure_id: str, store: LedgerStore, floors: Floors, floor: str, count: int
) -> tuple[Callable[[int], object], Callable[[int], object], str, int]:
    """(store call, floor call, floor name, events per call) of one figure, ``count`` turns."""
    workload = floors.workload
    if floors.hook is not None:
        hooked = floors.hook(figure_id, workload)
        if hooked is not None:
            store_call, _, _, events = _calls(figure_id, store, floors, MEMORY, count)
            return store_call, hooked, f"hook {floors.hook_name}", events
    if figure_id == "search":
        floor = SQLITE_REFERENCE
    elif floor == MINIMAL_SQLITE and figure_id in ("export", "catch_up", "spill.get"):
        floor = MEMORY  # the minimal ledger has no archive, projection or spill read
    maker = _MAKERS[figure_id]
    store_call, events = maker(store, workload, count, None)
    if floor == MINIMAL_SQLITE:
        floor_call, _ = maker(None, workload, count, floors.minimal)
    elif floor == SQLITE_REFERENCE:
        floor_call, _ = maker(floors.sqlite, workload, count, None)
    else:
        floor_call, _ = maker(floors.memory, workload, count, None)
    return store_call, floor_call, floor, events


Maker = Callable[[LedgerStore | None, Workload, int, MinimalLedger | None],
                 tuple[Callable[[int], object], int]]


def _read(store: LedgerStore | None, workload: Workload, count: int,
          minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    rng = random.Random(7)
    page = workload.page
    windows = [(workload.conversation(turn), rng.randrange(1, workload.per_conversation - page + 2))
               for turn in range(count)]
    if minimal is not None:
        return (lambda turn: minimal.read(*windows[turn], page)), page
    assert store is not None

    def read(turn: int) -> None:
        conversation_id, start = windows[turn]
        assert len(store.read(conversation_id, from_seq=start, limit=page).items) == page

    return read, page


def _head(store: LedgerStore | None, workload: Workload, count: int,
          minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    if minimal is not None:
        return (lambda turn: minimal.head(workload.conversation(turn))), 1
    assert store is not None
    return (lambda turn: store.head(workload.conversation(turn))), 1


def _export(store: LedgerStore | None, workload: Workload, count: int,
            minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    assert store is not None
    return (lambda turn: store.export_conversation(workload.conversation(turn))), \
        workload.per_conversation


def _search(store: LedgerStore | None, workload: Workload, count: int,
            minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    assert store is not None
    searcher = require(store, Capability.SEARCH)
    return (lambda turn: searcher.search(workload.conversation(turn),
                                         SEARCH_WORDS[turn % len(SEARCH_WORDS)], limit=20)), 1


def _catch_up(store: LedgerStore | None, workload: Workload, count: int,
              minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    assert store is not None
    projections = require(store, Capability.PROJECTIONS)
    from convledger.projections.builtins import SUMMARY

    conversation_id = workload.conversation(0)
    definitions = [attrs.evolve(SUMMARY, name=f"bench.summary.{turn}") for turn in range(count)]
    return (lambda turn: projections.catch_up(conversation_id, definitions[turn],
                                              max_events=100_000)), workload.per_conversation


def _grant(descriptor: object) -> bool:
    return True


_OPERATION: dict[str, JsonValue] = {"operationId": "bench", "authorization": {"grant": "bench"}}


def _spill_get(store: LedgerStore | None, workload: Workload, count: int,
               minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    assert store is not None
    spills = require(store, Capability.SPILLS)
    for number in range(workload.conversations):
        spills.put_spill(workload.conversation(number), SPILL_BYTES,
                         media_type="application/octet-stream", operation=dict(_OPERATION),
                         reference=f"bench-get-{number}", event_id=f"bench-spill-get-{number}",
                         occurred_at=OCCURRED_AT)
    return (lambda turn: spills.get_spill(
        workload.conversation(turn), f"bench-get-{turn % workload.conversations}",
        authorize=_grant)), 1


MINIMAL_SPILLS = (
    "CREATE TABLE IF NOT EXISTS bench_spills (conversation_id TEXT NOT NULL, reference TEXT NOT "
    "NULL, seq INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (conversation_id, reference))"
)


def _spill_put(store: LedgerStore | None, workload: Workload, count: int,
               minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    if minimal is not None:  # one transaction: the spill/created event, its head and its bytes
        connection = minimal.connection
        connection.execute(MINIMAL_SPILLS)
        rows = [event_row(9 * 10**7 + turn) for turn in range(count)]

        def put(turn: int) -> None:
            conversation_id = workload.conversation(turn)
            connection.execute("BEGIN IMMEDIATE")
            found = connection.execute(MINIMAL_HEAD, (conversation_id,)).fetchone()
            head = (0 if found is None else int(found[0])) + 1
            connection.execute(MINIMAL_INSERT, (conversation_id, head, *rows[turn]))
            connection.execute(MINIMAL_UPSERT_HEAD, (conversation_id, head))
            connection.execute("INSERT INTO bench_spills VALUES (?, ?, ?, ?)",
                               (conversation_id, f"bench-put-{turn}", head, SPILL_BYTES))
            connection.execute("COMMIT")

        return put, 1
    assert store is not None
    spills = require(store, Capability.SPILLS)
    return (lambda turn: spills.put_spill(
        workload.conversation(turn), SPILL_BYTES, media_type="application/octet-stream",
        operation=dict(_OPERATION), reference=f"bench-put-{turn}",
        event_id=f"bench-spill-put-{turn}", occurred_at=OCCURRED_AT)), 1


def _appends(batch: Callable[[Workload], int], base: int) -> Maker:
    def make(store: LedgerStore | None, workload: Workload, count: int,
             minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
        size = batch(workload)
        first = base * 10**7
        if minimal is not None:
            rows = [[event_row(first + turn * size + offset) for offset in range(size)]
                    for turn in range(count)]
            return (lambda turn: minimal.append(workload.conversation(turn), rows[turn])), size
        assert store is not None
        drafts = [[draft(first + turn * size + offset) for offset in range(size)]
                  for turn in range(count)]
        return (lambda turn: store.append(workload.conversation(turn), drafts[turn])), size

    return make


def _transition(store: LedgerStore | None, workload: Workload, count: int,
                minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    planned = plan_transitions(count, base=7 * 10**6)
    if minimal is not None:
        from convledger_bench.minimal import minimal_transition_operations

        operations = minimal_transition_operations(count, base=7 * 10**6)
        return (lambda turn: operations[turn](minimal)), 1
    assert store is not None
    runtime = require(store, Capability.TRANSITIONS)
    return (lambda turn: runtime.transition(
        planned[turn].conversation_id, planned[turn].step, event_id=planned[turn].event_id,
        occurred_at=OCCURRED_AT)), 1


def _import(store: LedgerStore | None, workload: Workload, count: int,
            minimal: MinimalLedger | None) -> tuple[Callable[[int], object], int]:
    size = workload.per_conversation
    first = 8 * 10**7
    names = [f"bench-imported-{turn:06d}" for turn in range(count)]
    if minimal is not None:
        rows = [[event_row(first + turn * size + offset) for offset in range(size)]
                for turn in range(count)]
        return (lambda turn: minimal.import_conversation(names[turn], rows[turn])), size
    assert store is not None
    source = MemoryStore()
    archives = []
    for turn, name in enumerate(names):
        for start in range(0, size, 100):
            source.append(name, [draft(first + turn * size + offset)
                                 for offset in range(start, min(size, start + 100))])
        archives.append(source.export_conversation(name))
    source.close()
    return (lambda turn: store.import_conversation(archives[turn])), size


_MAKERS: dict[str, Maker] = {
    "read": _read,
    "head": _head,
    "export": _export,
    "search": _search,
    "catch_up": _catch_up,
    "spill.get": _spill_get,
    "append.single": _appends(lambda workload: 1, 1),
    "append.batch": _appends(lambda workload: workload.batch, 2),
    "spill.put": _spill_put,
    "transition": _transition,
    "import": _import,
}
_NEEDS = {"search": Capability.SEARCH, "catch_up": Capability.PROJECTIONS,
          "spill.get": Capability.SPILLS, "spill.put": Capability.SPILLS,
          "transition": Capability.TRANSITIONS}


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
    return HotPath(figure_id, floor_name, estimate(samples["store"], samples["floor"]),
                   sorted(samples["store"])[len(samples["store"]) // 2],
                   sorted(samples["floor"])[len(samples["floor"]) // 2], events)


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
    only: Sequence[str] | None = None,
    work: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> HotPathRun:
    """Every figure the store declares, on one store of ``factory`` filled with the workload."""
    if floor not in ("auto", *FLOORS):
        raise ValueError(f"unknown floor {floor!r} (auto, {', '.join(FLOORS)})")
    with _workdir(work) as directory:
        floors = Floors(workload, directory, hook, hook_name)
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
                needed = _NEEDS.get(figure_id)
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
