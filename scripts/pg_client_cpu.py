"""The PostgreSQL store's own client work: CPU per operation, store against its floor (issue 15).

The harness of ``benchmarks/convledger_bench/pg_floor.py``: per write figure, a
recording store runs each planned operation on a clone of the 1e3 template
(untimed), then the store (on a second clone) and a bare psycopg connection
replaying the recorded statements (on a third) run the operations in
alternation, one each per round; a page of 100 is read by the store and by the
floor's keyset fetch plus ``json.loads``. Each operation is timed twice:
``time.thread_time`` (this thread's CPU: the floor's is psycopg's work on the
store's statements, the store's is that plus its own validation, encoding, word
cutting and decoding) and wall time. On a shared machine the wall figures swing
with the server's fsync and the CPU the other processes take; the client CPU
the store adds ("extra") is what its code decides.

Prints one line per operation: the median CPU ms of store and floor, their
difference, the median wall ms and the wall ratio (floor over store). Not a
test; the schemas are dropped at the end (``PgBench.close``).

    CONVLEDGER_PG_DSN=... python scripts/pg_client_cpu.py [--label main] [--rounds 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from convledger.postgres import configured_dsn, rows
from convledger_bench.measure import Plan
from convledger_bench.pg_floor import PgBench, _connect, _windows, record, replay
from convledger_bench.workloads import append_operations, transition_operations

SIZE = 1000


def _pair(label: str, name: str, store: Callable[[int], object], floor: Callable[[int], object],
          rounds: int, warmup: int = 3) -> None:
    cpu: dict[str, list[int]] = {"store": [], "floor": []}
    wall: dict[str, list[int]] = {"store": [], "floor": []}
    for turn in range(rounds + warmup):
        order = [("store", store), ("floor", floor)]
        for who, call in order if turn % 2 == 0 else order[::-1]:
            started_cpu, started = time.thread_time_ns(), time.perf_counter_ns()
            call(turn)
            cpu[who].append(time.thread_time_ns() - started_cpu)
            wall[who].append(time.perf_counter_ns() - started)

    def ms(samples: list[int]) -> float:
        return statistics.median(samples[warmup:]) / 1e6

    store_cpu, floor_cpu = ms(cpu["store"]), ms(cpu["floor"])
    store_wall, floor_wall = ms(wall["store"]), ms(wall["floor"])
    print(f"{label:8} load={os.getloadavg()[0]:5.1f} {name:10} cpu store={store_cpu:6.3f}"
          f" floor={floor_cpu:6.3f} extra={store_cpu - floor_cpu:6.3f} ms"
          f"  wall store={store_wall:6.2f} floor={floor_wall:6.2f}"
          f" ratio={floor_wall / store_wall:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="run", help="the first column of every line")
    parser.add_argument("--rounds", type=int, default=40, help="rounds of the batch of 100")
    options = parser.parse_args()
    bench = PgBench(configured_dsn(), Plan.of(quick=True, sizes=(SIZE,)))
    try:
        for name, rounds in (("batch100", options.rounds), ("transition", 2 * options.rounds),
                             ("single", 2 * options.rounds)):
            count = rounds + 3
            if name == "transition":
                operations = list(transition_operations(count, base=bench.base()))
            else:
                batch = 100 if name == "batch100" else 1
                operations = list(append_operations(SIZE, batch, count, base=bench.base()))
            recorder = bench._store(bench.clone(SIZE, "rec"))
            store = bench._store(bench.clone(SIZE, "store"))
            floor = _connect(bench.dsn, bench.clone(SIZE, "floor"))
            bench.connections.append(floor)
            recording = record(recorder)
            logs = []
            for operation in operations:
                recording.log = []
                operation(recorder)
                logs.append(recording.log)
            _pair(options.label, name,
                  lambda turn, o=operations, s=store: o[turn](s),  # type: ignore[misc]
                  lambda turn, f=floor, r=logs: replay(f, r[turn]),  # type: ignore[misc]
                  rounds)
        reader = bench.reader(SIZE)
        fetcher = _connect(bench.dsn, bench.template(SIZE))
        bench.connections.append(fetcher)
        rounds = 5 * options.rounds
        windows = _windows(SIZE, 100, rounds + 3)

        def fetch(turn: int) -> None:
            conversation_id, start = windows[turn]
            for row in fetcher.execute(rows.READ_WINDOW, (rows.key(conversation_id), start,
                                                         rows.MAX_SEQ, 100)).fetchall():
                json.loads(row[6])

        _pair(options.label, "read100",
              lambda turn: reader.read(windows[turn][0], from_seq=windows[turn][1], limit=100),
              fetch, rounds)
    finally:
        bench.close()


if __name__ == "__main__":
    main()
