"""What a search pays for the events still waiting for their index row (SQL-075, issue 18).

On copies of one reference ledger (``build_reference_file``: every event indexed),
``pending`` single appends spread over the first conversation and three new ones leave that many
rows in ``search_pending`` (0, 8, 16 or 31; fewer than 32 by SQL-074); then own searches
(the eight ``SEARCH_WORDS`` in turn, a random requester) and granted searches (no
scope, every other conversation allowed) are timed on each copy, the copies interleaved
round by round. Every search after the first on a handle finds the pending events'
text in its ``TEMP`` table already (``search.sync_tail``); ``--cold`` opens a new
handle for every search, so each one writes the tail table again.

    python scripts/bench_search_pending.py [--size 1000] [--rounds 7] [--searches 200]

Prints, per pending count, the median of the round medians in microseconds with the
[min..max] of the rounds, and each count's ratio to the copy with none pending.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "benchmarks"))

from convledger.sqlite import SqliteStore  # noqa: E402
from convledger_bench.search import SEARCH_WORDS  # noqa: E402
from convledger_bench.workloads import build_reference_file, copy_ledger, draft  # noqa: E402

COUNTS = (0, 8, 16, 31)


def conversations(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        return [str(row[0]) for row in connection.execute(
            "SELECT DISTINCT conversation_id FROM events ORDER BY conversation_id")]
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--cold", action="store_true")
    options = parser.parse_args()
    print(f"load average {os.getloadavg()}, size {options.size}, cold {options.cold}")
    with tempfile.TemporaryDirectory(prefix="search-pending-", dir="/tmp") as name:
        directory = Path(name)
        reference = directory / "reference.sqlite"
        build_reference_file(reference, options.size)
        ids = conversations(reference)
        paths: dict[int, Path] = {}
        for count in COUNTS:
            path = copy_ledger(reference, directory / f"pending-{count}.sqlite")
            store = SqliteStore(path, synchronous="NORMAL")
            targets = [ids[0], *(f"{ids[0]}-peer-{n}" for n in range(3))]
            for number in range(count):
                store.append(targets[number % 4], [draft(10**7 + number)])  # type: ignore[list-item]
            store.close()
            paths[count] = path
        stores = {count: SqliteStore(path) for count, path in paths.items()}
        results: dict[tuple[str, int], list[float]] = {}
        chooser = random.Random(1)
        for number in range(options.rounds):
            order = COUNTS[number % len(COUNTS):] + COUNTS[:number % len(COUNTS)]
            for count in order:
                for kind in ("own", "granted"):
                    samples = []
                    for turn in range(options.searches):
                        requester = ids[chooser.randrange(len(ids))]
                        words = SEARCH_WORDS[turn % len(SEARCH_WORDS)]
                        store = SqliteStore(paths[count]) if options.cold else stores[count]
                        started = time.perf_counter()
                        if kind == "own":
                            store.search(requester, words)
                        else:
                            store.search(requester, words, authorize=lambda _c: True)
                        samples.append(time.perf_counter() - started)
                        if options.cold:
                            store.close()
                    results.setdefault((kind, count), []).append(
                        statistics.median(samples) * 1e6)
        for store in stores.values():
            store.close()
    for kind in ("own", "granted"):
        none = statistics.median(results[(kind, 0)])
        for count in COUNTS:
            values = results[(kind, count)]
            middle = statistics.median(values)
            print(f"{kind:8} pending {count:2}: {middle:7.1f} us [{min(values):.1f}.."
                  f"{max(values):.1f}]  none/this {none / middle:.2f}x")


if __name__ == "__main__":
    main()
