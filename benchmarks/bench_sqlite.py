"""The SQLite reference store against bare ``sqlite3`` on the same schema, in one run (issue 8).

Every figure is measured by ``convledger_bench`` (the same code an
implementer runs with ``--bench``), with pytest-benchmark driving the rounds:
one round runs the store call and its floor in rotation, the figure's own
medians, ratio and spreads go into ``benchmark.extra_info`` (``figure``,
``ratio``, ``store_median``, ``floor_median``, ``rate``, ``store_spread``,
``floor_spread``), where ``benchmarks/gate.py`` reads them from
``--benchmark-json``. pytest-benchmark's own columns time the whole round
(store + floor) and are not the figure.

Search figures run on the reader store of each size against a
:class:`~convledger_bench.SearchFloor` on another pristine copy
(the reference store records each search's FTS5 statements, bare ``sqlite3``
replays them), and only when the store declares capability ``search``.

Ledgers: ``bench.build_reference_file`` at each ``--bench-sizes`` size (1000
events per conversation, filled in interleaved turns of 10), cached on disk
under ``--bench-cache`` with ``raw_sqlite.cached_file``. Reads run on a
pristine copy per size; writes run on another copy per size, next to a
:class:`~convledger_bench.Floor` (a recording copy and a bare
copy), so store and floor always write into identical files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import convledger_bench as bench
from conftest import ledger_sizes
from convledger.capabilities import Capability
from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger_bench import minimal, peers
from raw_sqlite import cached_file

CACHE_FORMAT = "v2"
"""Change when ``bench.build_reference_file`` writes something else (the file names also carry
``bench.workload_key``: the hash of the workload, schema and row code and of the builder)."""
SCALE = 1_000_000
"""The large ledger of the full gate's scale figures (issue 18)."""
BUILDERS: dict[str, tuple[Callable[[Path, int], None], str]] = {
    "ledger": (bench.build_reference_file, ""),
    "minimal": (minimal.build_minimal_file, minimal.__file__),
    "eventsourcing": (peers.build_eventsourcing_file, peers.__file__),
    "langgraph": (peers.build_langgraph_file, peers.__file__),
}
"""Each cached ledger kind: its builder and the module whose source keys its cache."""


@attrs.define
class SqliteBench:
    """The session's ledgers, stores and floors, by size."""

    plan: bench.Plan
    work: Path
    cache: Path
    references: dict[int, Path] = attrs.Factory(dict)
    readers: dict[int, SqliteStore] = attrs.Factory(dict)
    writers: dict[int, tuple[SqliteStore, bench.Floor]] = attrs.Factory(dict)
    searchers: dict[int, bench.SearchFloor] = attrs.Factory(dict)
    besides: dict[int, bench.Beside] = attrs.Factory(dict)
    bases: Iterator[int] = attrs.Factory(lambda: iter(range(10**8, 10**12, 10**7)))

    def cached(self, kind: str, size: int) -> Path:
        """The cached ledger of ``size`` events of one kind (``BUILDERS``), built once."""
        build, module = BUILDERS[kind]
        key = bench.workload_key(*([module] if module else []))
        return cached_file(self.cache, f"{kind}-{CACHE_FORMAT}-{key}-{size}.sqlite",
                           lambda path: build(path, size))

    def reference(self, size: int) -> Path:
        """The cached reference ledger of ``size`` events."""
        if size not in self.references:
            self.references[size] = self.cached("ledger", size)
        return self.references[size]

    def beside(self, size: int) -> bench.Beside:
        """The minimal floor and the peers (when installed) on copies of their ledgers."""
        if size not in self.besides:
            directory = self.work / f"beside-{size}"
            directory.mkdir()
            paths: dict[str, Path | None] = {}
            for kind in ("minimal", "eventsourcing", "langgraph"):
                if kind != "minimal" and bench.peers_missing():
                    paths[kind] = None
                    continue
                paths[kind] = bench.copy_ledger(self.cached(kind, size),
                                                directory / f"{kind}.sqlite")
            self.besides[size] = bench.Beside.open(paths["minimal"], paths["eventsourcing"],
                                                   paths["langgraph"])
        return self.besides[size]

    def reader(self, size: int) -> SqliteStore:
        """A store on a pristine copy of the reference ledger (reads, export)."""
        if size not in self.readers:
            copy = bench.copy_ledger(self.reference(size), self.work / f"read-{size}.sqlite")
            self.readers[size] = SqliteStore(copy)
        return self.readers[size]

    def writer(self, size: int) -> tuple[SqliteStore, bench.Floor]:
        """A store on a copy of the reference ledger, and the floor beside it."""
        if size not in self.writers:
            directory = self.work / f"write-{size}"
            directory.mkdir()
            copy = bench.copy_ledger(self.reference(size), directory / "store.sqlite")
            self.writers[size] = (SqliteStore(copy), bench.Floor(self.reference(size), directory))
        return self.writers[size]

    def scale_store(self) -> SqliteStore:
        """A store on a copy of the cached 1e6-event ledger (reads of its first 1000 seqs and
        appends after them share it)."""
        if SCALE not in self.readers:
            copy = bench.copy_ledger(self.reference(SCALE), self.work / f"scale-{SCALE}.sqlite")
            self.readers[SCALE] = SqliteStore(copy)
        return self.readers[SCALE]

    def search_floor(self, size: int) -> bench.SearchFloor:
        """A recording reference store and a bare connection on another pristine copy."""
        if size not in self.searchers:
            copy = bench.copy_ledger(self.reference(size), self.work / f"search-{size}.sqlite")
            self.searchers[size] = bench.SearchFloor(copy)
        return self.searchers[size]

    def base(self) -> int:
        """A fresh range of draft indexes (eventIds never seen before)."""
        return next(self.bases)

    def close(self) -> None:
        """Close every store and floor."""
        for reader in self.readers.values():
            reader.close()
        for writer, floor in self.writers.values():
            writer.close()
            floor.close()
        for searcher in self.searchers.values():
            searcher.close()
        for beside in self.besides.values():
            beside.close()


@pytest.fixture(scope="session")
def sqlite_bench(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SqliteBench]:
    """The session's :class:`SqliteBench` (ledgers built or taken from the cache)."""
    config = request.config
    quick = bool(config.getoption("--bench-quick"))
    cache = Path(str(config.getoption("--bench-cache"))).expanduser()
    state = SqliteBench(bench.Plan.of(quick=quick, sizes=ledger_sizes(config)),
                        tmp_path_factory.mktemp("sqlite-bench"), cache)
    yield state
    state.close()


def pedantic(benchmark: Any) -> bench.Runner:
    """A runner that lets pytest-benchmark drive the interleaved rounds."""

    def run(one_round: Callable[[], None], rounds: int, warmup: int) -> None:
        benchmark.pedantic(one_round, rounds=rounds, warmup_rounds=warmup, iterations=1)

    return run


def keep(benchmark: Any, figure: bench.Figure) -> None:
    """Put the figure where the gate and the closing table find it."""
    benchmark.extra_info.update(figure.as_json())
    benchmark.extra_info["baseline"] = False


def _smallest(request: pytest.FixtureRequest) -> int:
    return min(ledger_sizes(request.config))


@pytest.mark.benchmark(group="sqlite: append vs raw replay")
@pytest.mark.parametrize("name", ["transition", *bench.APPENDS])
def test_append(benchmark: Any, sqlite_bench: SqliteBench, ledger_size: int, name: str) -> None:
    """Appends (LED-001) and transitions (TRN-001) against bare sqlite3 running their statements."""
    store, floor = sqlite_bench.writer(ledger_size)
    plan = sqlite_bench.plan
    if name == "transition":
        figure = bench.transition_figure(store, floor, ledger_size, plan.append_rounds,
                                         base=sqlite_bench.base(), runner=pedantic(benchmark),
                                         beside=sqlite_bench.beside(ledger_size))
    else:
        rounds = plan.append_rounds if name == "single" else plan.batch_rounds
        if name == "batch10":
            rounds *= 2
        figure = bench.append_figure(store, floor, ledger_size, name, rounds,
                                     base=sqlite_bench.base(), runner=pedantic(benchmark),
                                     beside=sqlite_bench.beside(ledger_size))
    assert store.head(bench.conversation_name(0)) == floor.store.head(bench.conversation_name(0))
    keep(benchmark, figure)


@pytest.mark.benchmark(group="sqlite: bounded read vs fetch + json.loads")
@pytest.mark.parametrize("page", bench.READ_PAGES)
def test_read(benchmark: Any, sqlite_bench: SqliteBench, ledger_size: int, page: int) -> None:
    """A page of decoded envelopes (LED-007) against the same keyset fetch plus json.loads."""
    store = sqlite_bench.reader(ledger_size)
    floor = bench.raw_connection(
        bench.copy_ledger(sqlite_bench.reference(ledger_size),
                          sqlite_bench.work / f"read-floor-{ledger_size}-{page}.sqlite")
    )
    try:
        figure = bench.read_figure(store, floor, ledger_size, page, sqlite_bench.plan.read_rounds,
                                   runner=pedantic(benchmark),
                                   beside=sqlite_bench.beside(ledger_size))
    finally:
        floor.close()
    keep(benchmark, figure)


@pytest.mark.benchmark(group="sqlite: bounded read vs the peers")
def test_read_peers(benchmark: Any, sqlite_bench: SqliteBench, ledger_size: int) -> None:
    """A page of 100 beside the peers' reads of the same events (``read.peers100@N``)."""
    store = sqlite_bench.reader(ledger_size)
    floor = bench.raw_connection(
        bench.copy_ledger(sqlite_bench.reference(ledger_size),
                          sqlite_bench.work / f"read-peers-floor-{ledger_size}.sqlite")
    )
    try:
        figure = bench.read_figure(store, floor, ledger_size, bench.PEER_PAGE,
                                   sqlite_bench.plan.read_rounds, runner=pedantic(benchmark),
                                   beside=sqlite_bench.beside(ledger_size), peers=True)
    finally:
        floor.close()
    keep(benchmark, figure)


@pytest.mark.benchmark(group="sqlite: read scaling")
def test_read_scaling(
    benchmark: Any, sqlite_bench: SqliteBench, request: pytest.FixtureRequest
) -> None:
    """A page of 100 at the largest size against the same read at the smallest, interleaved."""
    sizes = ledger_sizes(request.config)
    small, large = min(sizes), max(sizes)
    if small == large:
        pytest.skip("one ledger size: nothing to scale against")
    figure = bench.scaling_figure(sqlite_bench.reader(small), sqlite_bench.reader(large),
                                  (small, large), sqlite_bench.plan.read_rounds,
                                  runner=pedantic(benchmark))
    keep(benchmark, figure)


@pytest.mark.benchmark(group="sqlite: search vs raw replay")
@pytest.mark.parametrize("mode", bench.SEARCH_MODES)
def test_search(benchmark: Any, sqlite_bench: SqliteBench, ledger_size: int, mode: str) -> None:
    """One-word search (SRC-001), own or with a callback, against bare sqlite3 running its FTS5
    statements."""
    store = bench.searchable(sqlite_bench.reader(ledger_size))
    if store is None:
        pytest.skip("not measured: the store does not declare search")
    figure = bench.search_figure(store, sqlite_bench.search_floor(ledger_size), ledger_size, mode,
                                 bench.search_rounds(sqlite_bench.plan, mode),
                                 runner=pedantic(benchmark))
    keep(benchmark, figure)


@pytest.mark.benchmark(group="sqlite: search scaling")
@pytest.mark.parametrize("mode", bench.SEARCH_MODES)
def test_search_scaling(
    benchmark: Any, sqlite_bench: SqliteBench, request: pytest.FixtureRequest, mode: str
) -> None:
    """The same search at the largest size against the smallest, interleaved."""
    sizes = ledger_sizes(request.config)
    small, large = min(sizes), max(sizes)
    if small == large:
        pytest.skip("one ledger size: nothing to scale against")
    low = bench.searchable(sqlite_bench.reader(small))
    high = bench.searchable(sqlite_bench.reader(large))
    if low is None or high is None:
        pytest.skip("not measured: the store does not declare search")
    figure = bench.search_scaling_figure(low, high, (small, large), mode,
                                         bench.search_rounds(sqlite_bench.plan, mode),
                                         runner=pedantic(benchmark))
    keep(benchmark, figure)


@pytest.mark.benchmark(group="sqlite: export and import")
def test_export(benchmark: Any, sqlite_bench: SqliteBench, request: pytest.FixtureRequest) -> None:
    """Export of a 1000-event conversation (ARC-001) against rfc8785 on each of its events."""
    figure = bench.export_figure(sqlite_bench.reader(_smallest(request)),
                                 sqlite_bench.plan.export_rounds, runner=pedantic(benchmark))
    assert figure is not None
    keep(benchmark, figure)


@pytest.mark.benchmark(group="sqlite: export and import")
def test_import(benchmark: Any, sqlite_bench: SqliteBench, request: pytest.FixtureRequest) -> None:
    """Import of a 1000-event archive (ARC-003) against bare sqlite3 running its statements."""
    store, floor = sqlite_bench.writer(_smallest(request))
    figure = bench.import_figure(store, floor, sqlite_bench.plan.export_rounds,
                                 base=sqlite_bench.base(), runner=pedantic(benchmark),
                                 beside=sqlite_bench.beside(_smallest(request)))
    keep(benchmark, figure)


@pytest.mark.benchmark(group="canonical and in-memory")
def test_canonical(benchmark: Any, sqlite_bench: SqliteBench) -> None:
    """The fast canonical encoder (the store's) against rfc8785 on one envelope."""
    figure = bench.canonical_figure(sqlite_bench.plan.read_rounds, runner=pedantic(benchmark))
    assert figure is not None
    keep(benchmark, figure)


@pytest.mark.benchmark(group="canonical and in-memory")
@pytest.mark.parametrize("name", ["single", "batch100"])
def test_memory_append(benchmark: Any, sqlite_bench: SqliteBench, name: str) -> None:
    """Events/s of MemoryStore appends (the in-memory budget is a rate)."""
    keep(benchmark, bench.memory_append_figure(name, sqlite_bench.plan.append_rounds,
                                               runner=pedantic(benchmark)))


@pytest.mark.benchmark(group="projections")
@pytest.mark.parametrize("store_name", ["sqlite", "memory"])
def test_catch_up(
    benchmark: Any, sqlite_bench: SqliteBench, request: pytest.FixtureRequest, store_name: str
) -> None:
    """Projection catch-up (PRJ-011) of 1000 events, when the store declares projections."""
    if store_name == "sqlite":
        store: Any = sqlite_bench.reader(_smallest(request))
    else:
        store = MemoryStore()
        bench.fill(store, 1000)
    if Capability.PROJECTIONS not in store.capabilities:
        pytest.skip(f"not yet measurable: the {store_name} store does not declare projections")
    figure = bench.catch_up_figure(store, sqlite_bench.plan.export_rounds,
                                   figure_id=f"projection.catch_up.{store_name}",
                                   runner=pedantic(benchmark))
    assert figure is not None
    keep(benchmark, figure)



@pytest.mark.benchmark(group="sqlite: scale to 1e6")
@pytest.mark.parametrize("operation", ["read", "append"])
def test_scale(
    benchmark: Any, sqlite_bench: SqliteBench, request: pytest.FixtureRequest, operation: str
) -> None:
    """A page of 100 and a single append at 1e6 events against the same at 1e3 (full gate only).

    The 1e6 ledger is built once by ``bench.build_reference_file`` (bulk rows, ~2 min) and
    cached under ``--bench-cache`` keyed by ``bench.workload_key``; the figures carry the
    file's size per event (``bytes_per_event``).
    """
    if request.config.getoption("--bench-quick"):
        pytest.skip("not measured: the 1e6 ledger is measured by the full gate only")
    small = _smallest(request)
    large = sqlite_bench.scale_store()
    plan = sqlite_bench.plan
    if operation == "read":
        figure = bench.scaling_figure(sqlite_bench.reader(small), large, (small, SCALE),
                                      plan.read_rounds, runner=pedantic(benchmark),
                                      figure_id="read.scale1e6")
    else:
        store, _ = sqlite_bench.writer(small)
        figure = bench.append_scaling_figure(store, large, (small, SCALE), plan.append_rounds,
                                             base=sqlite_bench.base(), runner=pedantic(benchmark),
                                             figure_id="append.scale1e6")
    keep(benchmark, figure)
    reference = sqlite_bench.reference(SCALE)
    benchmark.extra_info["ledger_events"] = SCALE
    benchmark.extra_info["bytes_per_event"] = reference.stat().st_size / SCALE
