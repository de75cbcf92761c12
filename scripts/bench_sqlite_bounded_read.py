"""Bounded-read scaling of the SQLite store: a page of 100 at 1e3 vs larger ledgers.

Builds one file per ledger size (conversations of 1000 events, payloads of
about 500 bytes), then times keyset reads of 100 events from a random
conversation and a random start, interleaving the sizes round by round, and
prints the median pages per second of each size and the ratio to the
smallest. Not a test: absolute figures depend on the machine; read the ratio.

    python scripts/bench_sqlite_bounded_read.py [--sizes 1000 100000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from convledger import EventDraft
from convledger.sqlite import SqliteStore, rows, schema

PER_CONVERSATION = 1000
PAGE = 100


def build(path: Path, events: int, seed: int) -> None:
    """A ledger of ``events`` events in conversations of PER_CONVERSATION."""
    rng = random.Random(seed)
    store = SqliteStore(path, synchronous="NORMAL")
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda"]
    for conversation in range(max(1, events // PER_CONVERSATION)):
        drafts = [
            EventDraft(
                event_id=f"{conversation:06d}-{seq:06d}-{rng.getrandbits(64):016x}",
                kind="state/set",
                occurred_at="2026-01-01T00:00:00.000Z",
                payload={
                    "name": "slot",
                    "version": 1,
                    "actor": "bench",
                    "value": " ".join(rng.choice(words) for _ in range(70)),
                },
            )
            for seq in range(1, min(events, PER_CONVERSATION) + 1)
        ]
        store.append(f"conversation-{conversation:06d}", drafts)
    store.close()


def time_reads(store: SqliteStore, conversations: int, reads: int, rng: random.Random) -> float:
    """Seconds per bounded read of PAGE events through the store (decoded envelopes)."""
    started = time.perf_counter()
    for _ in range(reads):
        conversation = f"conversation-{rng.randrange(conversations):06d}"
        start = rng.randrange(1, PER_CONVERSATION - PAGE + 2)
        page = store.read(conversation, from_seq=start, limit=PAGE)
        assert len(page.items) == PAGE
    return (time.perf_counter() - started) / reads


def time_raw(
    connection: sqlite3.Connection, conversations: int, reads: int, rng: random.Random
) -> float:
    """Seconds per bounded read of PAGE rows with the store's statement, undecoded."""
    started = time.perf_counter()
    for _ in range(reads):
        conversation = f"conversation-{rng.randrange(conversations):06d}"
        start = rng.randrange(1, PER_CONVERSATION - PAGE + 2)
        found = connection.execute(
            rows.READ_WINDOW, (conversation, start, rows.MAX_SEQ, PAGE)
        ).fetchall()
        assert len(found) == PAGE
    return (time.perf_counter() - started) / reads


def main() -> None:
    """Build, measure interleaved, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--page-size", type=int, default=schema.NEW_FILE_PAGE_SIZE)
    args = parser.parse_args()
    schema.NEW_FILE_PAGE_SIZE = args.page_size  # only for this experiment
    with tempfile.TemporaryDirectory() as directory:
        stores = {}
        raw = {}
        for size in args.sizes:
            path = Path(directory) / f"ledger-{size}.sqlite"
            build(path, size, seed=size)
            stores[size] = SqliteStore(path)
            raw[size] = sqlite3.connect(path)
        rng = random.Random(7)
        samples: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.rounds):
            for size in args.sizes:
                conversations = max(1, size // PER_CONVERSATION)
                samples.setdefault(("store", size), []).append(
                    time_reads(stores[size], conversations, args.reads, rng)
                )
                samples.setdefault(("raw", size), []).append(
                    time_raw(raw[size], conversations, args.reads * 5, rng)
                )
        print(f"page size {args.page_size} B, page of {PAGE}, {args.rounds} interleaved rounds")
        for mode in ("store", "raw"):
            base = statistics.median(samples[(mode, args.sizes[0])])
            for size in args.sizes:
                median = statistics.median(samples[(mode, size)])
                print(
                    f"  {mode:5} {size:>9} events: {1 / median:8.0f} pages/s"
                    f"  ratio to {args.sizes[0]}: {base / median:.2f}x"
                )
        for store in stores.values():
            store.close()
        for connection in raw.values():
            connection.close()


if __name__ == "__main__":
    main()
