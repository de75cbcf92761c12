"""Two checkouts' SQLite appends against the minimal ledger transaction, interleaved (issue 18).

Each checkout's ``SqliteStore`` runs in a worker process whose ``PYTHONPATH`` starts with
that checkout's ``reference`` directory (``--base DIR``, e.g. an export of ``main``, and
this checkout), on its own copy of one 1e3-event reference ledger (WAL,
``synchronous=FULL``); the minimal ledger transaction (``convledger_bench.minimal``) runs
in this process on its own ledger of the same events. Every contender performs the same
operations of ``convledger_bench.workloads`` (a single append, a batch of 100, a
transition), one call each in turn, the starting contender rotating; each call is timed
where it runs (the worker times its own call, so the pipe is not counted).

Per figure and round: each contender's median call; then per round the ratios
``minimal / store`` (1.0 = as fast as the floor) and ``base / this`` (above 1 = this
checkout is faster), reported as the median and [min..max] of the rounds.

Usage::

    git archive main | tar -x -C /tmp/base
    python scripts/bench_append_ab.py --base /tmp/base [--rounds 7] [--calls 20] [--clock cpu]
        [--peers]

``--clock cpu`` times each call by its process's CPU time (``time.thread_time``): steady under
load, but without the commit's wait for the disk, which wall time (the default) includes.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BENCHMARKS = HERE / "benchmarks"
FIGURES = {"single": 1, "batch100": 100, "transition": 0}
"""Figures by name: drafts per append (0: a transition)."""


def worker(path: str, calls: int, clock: str) -> None:
    """``--worker``: a store on ``path``; each stdin line ``FIGURE N`` runs that figure's N-th
    operation and answers its time in seconds."""
    sys.path.insert(0, str(BENCHMARKS))
    from convledger.sqlite import SqliteStore
    from convledger_bench.workloads import append_operations, transition_operations

    timer = time.thread_time if clock == "cpu" else time.perf_counter
    store = SqliteStore(path)
    operations = {
        name: (append_operations(1000, batch, calls, base=10**6 * (2 + batch))
               if batch else transition_operations(calls))
        for name, batch in FIGURES.items()
    }
    print("ready", flush=True)
    for line in sys.stdin:
        name, number = line.split()
        operation = operations[name][int(number)]
        started = timer()
        operation(store)
        print(timer() - started, flush=True)
    store.close()


def _for_checkout(checkout: Path, path: Path) -> None:
    """Give a checkout whose store knows only schema version 3 the same ledger as version 3:
    version 4 adds ``search_pending`` and its trigger only (SQL-076), and the reference file
    has no pending event, so dropping them leaves exactly the version 3 file."""
    schema_source = (checkout / "reference/convledger/sqlite/schema.py").read_text()
    if "LATEST_VERSION = 3" not in schema_source:
        return
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        assert connection.execute("SELECT count(*) FROM search_pending").fetchone() == (0,)
        for statement in ("DROP TRIGGER search_pending_after_delete", "DROP TABLE search_pending",
                          "UPDATE meta SET value = '3' WHERE key = 'schema_version'"):
            connection.execute(statement)
    finally:
        connection.close()


class Worker:
    """One checkout's store in its own process."""

    def __init__(self, checkout: Path, path: Path, calls: int, clock: str) -> None:
        environment = dict(os.environ, PYTHONPATH=f"{checkout / 'reference'}")
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(path), "--calls", str(calls),
             "--clock", clock],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment)
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def call(self, name: str, number: int) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{name} {number}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _peers(directory: Path, total: int) -> dict[str, dict[str, Callable[[], object]]]:
    """The peers' calls per figure (``--peers``): eventsourcing's ``insert_events`` of one
    draft and of 100, langgraph's ``SqliteSaver.put`` of one, on 1e3-event ledgers of the same
    events (``convledger_bench.beside``; WAL + ``synchronous=FULL`` set on their connections)."""
    from convledger_bench.beside import Beside
    from convledger_bench.peers import build_eventsourcing_file, build_langgraph_file

    build_eventsourcing_file(directory / "eventsourcing.sqlite", 1000)
    build_langgraph_file(directory / "langgraph.sqlite", 1000)
    beside = Beside.open(None, directory / "eventsourcing.sqlite",
                         directory / "langgraph.sqlite")
    if beside.missing:
        raise SystemExit(f"--peers: {beside.missing}")
    found: dict[str, dict[str, Callable[[], object]]] = {}
    for name, batch in FIGURES.items():
        if batch:
            contenders, _ = beside.appends(1000, batch, total, base=10**6 * (2 + batch))
            found[name] = {who: call for who, call in contenders.items() if who != "minimal"}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="the other checkout (required)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20, help="calls per figure and round")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or each process's CPU time (time.thread_time)")
    parser.add_argument("--peers", action="store_true",
                        help="eventsourcing and langgraph too (pip install -e '.[peers]')")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    options = parser.parse_args()
    total = options.rounds * options.calls
    if options.worker:
        worker(options.worker, total, options.clock)
        return
    if options.base is None:
        parser.error("--base DIR is required")
    sys.path.insert(0, str(BENCHMARKS))
    from convledger_bench import minimal
    from convledger_bench.workloads import build_reference_file, copy_ledger

    print(f"load average {os.getloadavg()}, clock {options.clock}")
    with tempfile.TemporaryDirectory(prefix="append-ab-", dir="/tmp") as name:
        directory = Path(name)
        build_reference_file(directory / "reference.sqlite", 1000)
        minimal.build_minimal_file(directory / "minimal.sqlite", 1000)
        base_file = copy_ledger(directory / "reference.sqlite", directory / "base.sqlite")
        _for_checkout(options.base.resolve(), base_file)
        workers = {
            "base": Worker(options.base.resolve(), base_file, total, options.clock),
            "this": Worker(HERE, copy_ledger(
                directory / "reference.sqlite", directory / "this.sqlite"), total, options.clock),
        }
        ledger = minimal.MinimalLedger(copy_ledger(directory / "minimal.sqlite",
                                                   directory / "floor.sqlite"))
        floors = {
            name: (minimal.minimal_append_operations(1000, batch, total, base=10**6 * (2 + batch))
                   if batch else minimal.minimal_transition_operations(total))
            for name, batch in FIGURES.items()
        }

        timer = time.thread_time if options.clock == "cpu" else time.perf_counter
        peers = _peers(directory, total) if options.peers else {}

        def run_in_here(who: str, name: str, number: int) -> float:
            started = timer()
            if who == "minimal":
                floors[name][number](ledger)
            else:
                peers[name][who]()  # the peer's calls are taken in turn
            return timer() - started

        ratios: dict[str, dict[str, list[float]]] = {name: {} for name in FIGURES}
        medians: dict[str, dict[str, list[float]]] = {name: {} for name in FIGURES}
        for number in range(options.rounds):
            for figure in FIGURES:
                contenders = ["base", "this", "minimal", *sorted(peers.get(figure, {}))]
                shift = number % len(contenders)
                order = contenders[shift:] + contenders[:shift]
                times: dict[str, list[float]] = {who: [] for who in contenders}
                for call in range(options.calls):
                    index = number * options.calls + call
                    for who in order:
                        seconds = (workers[who].call(figure, index) if who in workers
                                   else run_in_here(who, figure, index))
                        times[who].append(seconds)
                median = {who: statistics.median(values) for who, values in times.items()}
                for who in contenders:
                    medians[figure].setdefault(who, []).append(median[who] * 1e6)
                for who in contenders[2:]:
                    for mine in ("this", "base"):
                        ratios[figure].setdefault(f"{mine} vs {who}", []).append(
                            median[who] / median[mine])
                ratios[figure].setdefault("this over base", []).append(
                    median["base"] / median["this"])
        for worker_process in workers.values():
            worker_process.close()
        ledger.close()
    for figure in FIGURES:
        print(f"\n{figure}:")
        for who, values in medians[figure].items():
            print(f"  {who:8} {statistics.median(values):10.1f} us"
                  f" [{min(values):.1f}..{max(values):.1f}]")
        for label, values in ratios[figure].items():
            print(f"  {label:16} {statistics.median(values):.2f}x"
                  f" [{min(values):.2f}..{max(values):.2f}]")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
