"""The PostgreSQL reference store against raw psycopg replaying its own statements (issue 15).

Figures come from ``convledger_bench.pg_floor`` (see its docstring): append
single, batch of 100 and transition against a bare psycopg connection
replaying the statements a recording store sent for the same operation, a
bounded read (page of 100) against the same keyset fetch plus ``json.loads``,
and the read at the largest ``--bench-sizes`` size over the same at the
smallest. With the optional ``peers`` extra, eventsourcing's PostgreSQL recorder
appends and reads the same events beside the store (``convledger_bench.pg_peers``;
without it those figures skip with "peers not installed"). Store and floor run
interleaved, one operation each per round; pytest-benchmark drives the rounds,
and the figure goes into ``benchmark.extra_info`` where ``benchmarks/gate.py`` reads it.

The schemas live in the database ``CONVLEDGER_PG_DSN`` names (default
``postgresql://postgres@127.0.0.1:5432/postgres``) and are dropped at the end
of the session. Without psycopg or a reachable server every figure is skipped
(under ``CI=true``: an error), and the gate says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from bench_sqlite import keep, pedantic
from conftest import ledger_sizes
from convledger_bench.measure import Plan

WRITES = ("single", "batch100", "transition")


@pytest.fixture(scope="session")
def pg_bench(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The session's :class:`~convledger_bench.pg_floor.PgBench`, or a skip without a server."""
    try:
        import psycopg

        from convledger.postgres import configured_dsn
        from convledger_bench.pg_floor import PgBench

        dsn = configured_dsn()
        psycopg.connect(dsn, connect_timeout=5).close()
    except Exception as error:
        message = f"no PostgreSQL for the benchmarks (CONVLEDGER_PG_DSN): {error}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    config = request.config
    state = PgBench(dsn, Plan.of(quick=bool(config.getoption("--bench-quick")),
                                 sizes=ledger_sizes(config)))
    yield state
    state.close()


ROUNDS = {
    "quick": {"single": 40, "batch100": 12, "transition": 40, "read": 60, "peer": 20},
    "full": {"single": 150, "batch100": 40, "transition": 150, "read": 300, "peer": 60},
}
"""Rounds per figure: a PostgreSQL commit costs milliseconds (one fsync), so fewer than SQLite's."""


def _rounds(request: pytest.FixtureRequest, name: str) -> int:
    return ROUNDS["quick" if request.config.getoption("--bench-quick") else "full"][name]


@pytest.mark.benchmark(group="postgres: append vs raw psycopg replay")
@pytest.mark.parametrize("name", WRITES)
def test_pg_append(benchmark: Any, pg_bench: Any, ledger_size: int, name: str,
                   request: pytest.FixtureRequest) -> None:
    """Appends (LED-001) and transitions (TRN-001) against psycopg replaying their statements.

    Measured at the smallest size only (``--bench-quick``), or also a single
    append at the larger sizes (the full run: three clones of the ledger each).
    """
    from convledger_bench.pg_floor import write_figure

    quick = bool(request.config.getoption("--bench-quick"))
    if ledger_size != min(pg_bench.plan.sizes) and (quick or name != "single"):
        pytest.skip("measured at the smallest size (a write's cost does not grow with the log)")
    keep(benchmark, write_figure(pg_bench, ledger_size, name, _rounds(request, name),
                                 runner=pedantic(benchmark)))


@pytest.mark.benchmark(group="postgres: bounded read vs fetch + json.loads")
def test_pg_read(benchmark: Any, pg_bench: Any, ledger_size: int,
                 request: pytest.FixtureRequest) -> None:
    """A page of 100 decoded envelopes (LED-007) against the same fetch plus json.loads."""
    from convledger_bench.pg_floor import read_figure

    keep(benchmark, read_figure(pg_bench, ledger_size, 100, _rounds(request, "read"),
                                runner=pedantic(benchmark)))


@pytest.mark.benchmark(group="postgres: read scaling")
def test_pg_read_scaling(benchmark: Any, pg_bench: Any, request: pytest.FixtureRequest) -> None:
    """A page of 100 at the largest size against the same read at the smallest, interleaved."""
    from convledger_bench.pg_floor import scaling_figure

    sizes = pg_bench.plan.sizes
    if min(sizes) == max(sizes):
        pytest.skip("one ledger size: nothing to scale against")
    keep(benchmark, scaling_figure(pg_bench, (min(sizes), max(sizes)), _rounds(request, "read"),
                                   runner=pedantic(benchmark)))


PEER_FIGURES = ("single", "batch100", "read")


@pytest.mark.benchmark(group="postgres: beside eventsourcing's PostgreSQL recorder")
@pytest.mark.parametrize("name", PEER_FIGURES)
def test_pg_peer_eventsourcing(benchmark: Any, pg_bench: Any, ledger_size: int, name: str,
                               request: pytest.FixtureRequest) -> None:
    """The same events through eventsourcing's recorder and the store, interleaved (optional)."""
    from convledger_bench.pg_peers import MISSING, available, peer_figure

    if not available():
        pytest.skip(MISSING)
    if ledger_size != min(pg_bench.plan.sizes):
        pytest.skip("measured once, on schemas of its own")
    keep(benchmark, peer_figure(pg_bench.dsn, name, _rounds(request, "peer"),
                                runner=pedantic(benchmark)))
