"""Issue 5 figures: projection catch-up (events/s) and search latency (median of 200 queries).

Not a test: run ``python scripts/bench_issue5.py [--sizes 10000 100000]`` and
read the table it prints. Catch-up folds the built-in state slots over one
conversation of N ``state/set`` events, from scratch, in one call, on the
in-memory store and on SQLite (a file, WAL, synchronous FULL). Search runs 200
one- and two-word queries over N events spread over 100 conversations,
first as the requester alone (default-deny), then with a callback that grants
every tenth conversation.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from convledger.envelope import EventDraft
from convledger.memory import MemoryStore
from convledger.projections import STATE_SLOTS
from convledger.sqlite import SqliteStore
from convledger.store import ExtendedStore

STAMP = "2024-01-01T00:00:00Z"
BATCH = 1000


def vocabulary(rng: random.Random, size: int = 2000) -> list[str]:
    """Random lower-case words of 4 to 9 letters."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(size)]


def fill(store: ExtendedStore, cid: str, count: int, rng: random.Random, words: list[str],
         start: int = 0) -> None:
    """Append ``count`` state/set events with a few random words each, in batches."""
    for offset in range(0, count, BATCH):
        drafts = [
            EventDraft(
                event_id=f"{cid}-{start + offset + n}", kind="state/set", occurred_at=STAMP,
                payload={"name": f"slot-{(offset + n) % 50}", "version": 1,
                         "value": " ".join(rng.choice(words) for _ in range(6)), "actor": "bench"},
            )
            for n in range(min(BATCH, count - offset))
        ]
        store.append(cid, drafts)


def catch_up_rate(store: ExtendedStore, count: int) -> float:
    """Events per second of one catch-up of the state slots over ``count`` events."""
    started = time.perf_counter()
    checkpoint = store.catch_up("c", STATE_SLOTS, max_events=1_000_000)
    seconds = time.perf_counter() - started
    assert checkpoint.upto_seq == count
    return count / seconds


def search_medians(store: ExtendedStore, words: list[str], rng: random.Random) -> tuple[float,
                                                                                       float]:
    """Median milliseconds of 200 queries: own only, then with every tenth conversation granted.

    One unmeasured query per word runs first, so the first figure is not a cold-cache one.
    """
    for word in words[:200]:  # warm the page cache for every word the queries use
        store.search(f"conv-{rng.randrange(100)}", word)
    medians = []
    for granted in (None, lambda cid: int(cid.split("-")[1]) % 10 == 0):
        samples = []
        for _ in range(200):
            query = " ".join(rng.choice(words[:200]) for _ in range(rng.randint(1, 2)))
            requester = f"conv-{rng.randrange(100)}"
            started = time.perf_counter()
            store.search(requester, query, limit=20, authorize=granted)
            samples.append((time.perf_counter() - started) * 1000)
        medians.append(statistics.median(samples))
    return medians[0], medians[1]


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    arguments = parser.parse_args()
    rng = random.Random(5)
    words = vocabulary(rng)
    with tempfile.TemporaryDirectory(prefix="bench-issue5-") as directory:
        for size in arguments.sizes:
            memory = MemoryStore()
            fill(memory, "c", size, rng, words)
            print(f"catch-up state slots, {size} events, memory: "
                  f"{catch_up_rate(memory, size):,.0f} events/s")
            sqlite = SqliteStore(Path(directory) / f"catch-{size}.sqlite")
            fill(sqlite, "c", size, rng, words)
            print(f"catch-up state slots, {size} events, sqlite: "
                  f"{catch_up_rate(sqlite, size):,.0f} events/s")
            sqlite.close()
            searched = SqliteStore(Path(directory) / f"search-{size}.sqlite")
            for n in range(100):
                fill(searched, f"conv-{n}", size // 100, rng, words)
            own, granted = search_medians(searched, words, rng)
            print(f"search, {size} events in 100 conversations: median {own:.2f} ms own only, "
                  f"{granted:.2f} ms with every tenth conversation granted")
            searched.close()


if __name__ == "__main__":
    main()
