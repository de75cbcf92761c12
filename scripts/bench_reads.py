"""Bounded reads of the SQLite store against their floor and a peer, interleaved in one run.

A page of 100 events from a random cursor (a random conversation, a random
start) is read by each contender, in rotation, for ``--seconds`` per contender
per round, ``--rounds`` rounds (issue 18: 7 rounds of 2 s):

``ours``
    ``SqliteStore.read(conversation, from_seq=start, limit=100)``: 100
    decoded :class:`~convledger.envelope.Envelope` values and the cursor.
``floor``
    bare ``sqlite3`` on the same file: ``SELECT payload FROM events WHERE
    conversation_id = ? AND seq >= ? ORDER BY seq LIMIT 100`` and
    ``json.loads`` of each payload (the shape's own limit: one column, the
    C decoder, no envelope).
``es_select`` / ``es_decoded`` (when ``eventsourcing`` is installed, the ``peers`` extra)
    eventsourcing's ``SQLiteApplicationRecorder.select_events(conversation,
    gt=start - 1, limit=100)`` on a database of the same events (originator
    = conversation, version = seq, topic = kind, state = the same canonical
    payload bytes), without decoding its state, and with ``json.loads`` of
    each state.

Every ledger is the benchmark ledger of ``convledger_bench.workloads``
(conversations of 1000 ~600 B ``provider/message`` events), built once per
size into ``--work`` and reused. With several ``--sizes``, ``ours`` reads
each size in the same rotation (``ours@SIZE``), so the flatness of the read is
measured in one run too; the floor and the peer use the first size.

Prints, per contender, the median pages/s over the rounds with the range and
the interquartile spread, and per ratio (ours against each other contender)
the median of the per-round ratios with their range. Not a test: absolute
figures depend on the machine; read the ratios.

    python scripts/bench_reads.py [--sizes 20000] [--rounds 7] [--seconds 2] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from convledger.sqlite import SqliteStore
from convledger_bench.workloads import (
    PER_CONVERSATION,
    conversation_name,
    conversations_of,
    reference_file,
)

PAGE = 100
FLOOR = (
    "SELECT payload FROM events WHERE conversation_id = ? AND seq >= ? ORDER BY seq LIMIT ?"
)


def windows(size: int, seed: int) -> Iterator[tuple[str, int]]:
    """Random cursors (conversation, start) of a ledger of ``size`` events, without end."""
    rng = random.Random(seed)
    conversations = [conversation_name(number) for number in range(conversations_of(size))]
    while True:
        yield rng.choice(conversations), rng.randrange(1, PER_CONVERSATION - PAGE + 2)


def peer_database(reference: Path, work: Path) -> Path:
    """An eventsourcing SQLite recorder database holding the reference ledger's events."""
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    path = work / f"{reference.stem}.eventsourcing.sqlite"
    if path.exists():
        return path
    partial = work / f"{reference.stem}.eventsourcing.partial"
    partial.unlink(missing_ok=True)
    datastore = SQLiteDatastore(str(partial), originator_id_type="text")
    recorder = SQLiteApplicationRecorder(datastore)
    recorder.create_table()
    source = sqlite3.connect(reference)
    cursor = source.execute(
        "SELECT conversation_id, seq, kind, payload FROM events ORDER BY conversation_id, seq"
    )
    while batch := cursor.fetchmany(5000):
        recorder.insert_events(
            [
                StoredEvent(originator_id=c, originator_version=s, topic=k, state=p.encode())
                for c, s, k, p in batch
            ]
        )
    source.close()
    datastore.close()
    partial.replace(path)
    return path


def contenders(sizes: list[int], work: Path, rounds: int) -> dict[str, Callable[[], int]]:
    """Each contender: a call that reads one page at the next cursor and returns its length."""
    found: dict[str, Callable[[], int]] = {}
    references = {size: reference_file(work, size) for size in sizes}
    for size in sizes:
        store = SqliteStore(references[size], read_only=True)
        cursors = iter(windows(size, seed=size))

        def ours(
            store: SqliteStore = store, cursors: Iterator[tuple[str, int]] = cursors
        ) -> int:
            conversation_id, start = next(cursors)
            return len(store.read(conversation_id, from_seq=start, limit=PAGE).items)

        found["ours" if len(sizes) == 1 else f"ours@{size:.0e}"] = ours
    first = sizes[0]
    raw = sqlite3.connect(references[first], isolation_level=None, check_same_thread=False)
    floor_cursors = iter(windows(first, seed=first))

    def floor() -> int:
        conversation_id, start = next(floor_cursors)
        rows = raw.execute(FLOOR, (conversation_id, start, PAGE)).fetchall()
        return len([json.loads(row[0]) for row in rows])

    found["floor"] = floor
    try:
        from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore
    except ImportError:
        print("eventsourcing is not installed (pip install -e '.[peers]'): no peer", flush=True)
        return found
    datastore = SQLiteDatastore(str(peer_database(references[first], work)),
                                originator_id_type="text")
    recorder = SQLiteApplicationRecorder(datastore)
    es_cursors = iter(windows(first, seed=first))

    def es_select() -> int:
        conversation_id, start = next(es_cursors)
        return len(recorder.select_events(conversation_id, gt=start - 1, limit=PAGE))

    def es_decoded() -> int:
        conversation_id, start = next(es_cursors)
        events = recorder.select_events(conversation_id, gt=start - 1, limit=PAGE)
        return len([json.loads(event.state) for event in events])

    found["es_select"] = es_select
    found["es_decoded"] = es_decoded
    return found


def measure(
    calls: dict[str, Callable[[], int]], rounds: int, seconds: float
) -> dict[str, list[float]]:
    """Pages per second of each contender per round; round ``r`` starts with contender ``r``."""
    names = list(calls)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm up: caches, statement cache, the first pages of each file
        for _ in range(50):
            assert calls[name]() == PAGE
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            call, pages = calls[name], 0
            started = time.perf_counter()
            deadline = started + seconds
            while True:
                for _ in range(20):
                    call()
                pages += 20
                now = time.perf_counter()
                if now >= deadline:
                    break
            rates[name].append(pages / (now - started))
    return rates


def spread(values: list[float]) -> float:
    """Interquartile range over the median."""
    if len(values) < 4:
        return 0.0
    low, _, high = statistics.quantiles(values, n=4)
    return (high - low) / statistics.median(values)


def report(rates: dict[str, list[float]]) -> None:
    """Medians with ranges, then the per-round ratios of ours against every other contender."""
    print(f"{'contender':<14} {'pages/s median':>15} {'min':>9} {'max':>9} {'IQR/median':>11}")
    for name, values in rates.items():
        print(f"{name:<14} {statistics.median(values):15,.0f} {min(values):9,.0f} "
              f"{max(values):9,.0f} {spread(values):11.1%}")
    ours = [name for name in rates if name.startswith("ours")]
    for name in ours:
        for other in rates:
            if other == name or (other.startswith("ours") and other != ours[0]):
                continue
            ratios = [a / b for a, b in zip(rates[name], rates[other], strict=True)]
            print(f"{name} / {other}: median {statistics.median(ratios):.2f}x "
                  f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/convledger-bench-reads"))
    arguments = parser.parse_args(argv)
    arguments.work.mkdir(parents=True, exist_ok=True)
    calls = contenders(arguments.sizes, arguments.work, arguments.rounds)
    print(f"{arguments.rounds} rounds of {arguments.seconds:g} s per contender, "
          f"pages of {PAGE}, sizes {arguments.sizes}", flush=True)
    report(measure(calls, arguments.rounds, arguments.seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
