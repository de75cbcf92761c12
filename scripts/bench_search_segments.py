"""What an FTS5 segment policy buys a search and costs a write (issue 18, search at 1e5).

Builds a ledger of ``--size`` events BY REAL APPENDS (``SqliteStore.append`` of
the benchmark drafts in ``fill_plan`` turns of 10 events, synchronous NORMAL)
once per policy, then reports for each: the build time per append
transaction, the time the policy's own statements took, the index layout
(segments and their leaf pages, read from FTS5's structure record) and the
median of 400 own searches (the store's ``search``, random conversation, the
eight ``SEARCH_WORDS``), repeated ``--repeat`` times. ``--optimized`` adds the
same ledger after FTS5's ``optimize`` (one segment: the floor of any policy).

Policies (``--policies``):

============  ===================================================================
``default``   FTS5's own: automerge 4, usermerge 4, crisismerge 16, pgsz 4050
``am2``       ``automerge`` 2 (one segment per level, more merging)
``am16``      ``automerge`` 16
``pgsz16k``   ``pgsz`` 16000 (larger leaves)
``tail10``    after each append, in a transaction of its own: continue a running
              merge by one ``('merge', 16)`` step, or start a merge of every
              segment (``('merge', -16)``) once the segments other than the
              largest hold 10 % of its pages (and at least 64 pages)
``tail25``    the same at 25 %
============  ===================================================================

Build times of different policies come from different moments of a loaded
machine: compare the policy's own time (``policy_us_per_tx``) and the
layouts, and rerun before trusting a build ratio.

    python scripts/bench_search_segments.py [--size 100000] [--policies default tail10] \
        [--repeat 3] [--optimized] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from convledger.sqlite import SqliteStore  # noqa: E402
from convledger_bench.search import search_queries  # noqa: E402
from convledger_bench.workloads import draft, fill_plan  # noqa: E402

STRUCTURE = "SELECT block FROM events_fts_data WHERE id = 10"
"""FTS5's structure record of ``events_fts`` (the data row with id 10)."""
MERGE = "INSERT INTO events_fts (events_fts, rank) VALUES ('merge', ?)"
"""One merge step of about ``abs(?)`` pages; a negative count merges every segment."""
_VERSION_2 = b"\xff\x00\x00\x01"


def _varint(block: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint (big-endian groups of 7 bits, the ninth byte whole): value, next."""
    value = 0
    for _ in range(8):
        byte = block[at]
        at += 1
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at
    return (value << 8) | block[at], at + 1


def levels_of(block: bytes) -> list[tuple[int, list[int]]] | None:
    """(merge inputs, leaf pages of each segment) per level of a structure record
    (``fts5_index.c``: 4-byte cookie, optional version-2 marker, varints), or None."""
    try:
        at = 8 if block[4:8] == _VERSION_2 else 4
        extra = 5 if at == 8 else 0  # version 2: origins, tombstone pages/entries, entries
        count, at = _varint(block, at)
        _, at = _varint(block, at)  # segments
        _, at = _varint(block, at)  # write counter
        levels = []
        for _ in range(count):
            merging, at = _varint(block, at)
            segments, at = _varint(block, at)
            pages = []
            for _ in range(segments):
                _, at = _varint(block, at)  # segment id
                first, at = _varint(block, at)
                last, at = _varint(block, at)
                for _ in range(extra):
                    _, at = _varint(block, at)
                pages.append(last - first + 1)
            levels.append((merging, pages))
    except IndexError:
        return None
    return levels if at == len(block) else None


def layout(connection: sqlite3.Connection) -> list[tuple[int, list[int]]]:
    """The levels of the index on ``connection`` (an unreadable record is an error here)."""
    (block,) = connection.execute(STRUCTURE).fetchone()
    levels = levels_of(bytes(block))
    if levels is None:
        raise SystemExit("cannot read the FTS5 structure record of this SQLite version")
    return levels


def tail_policy(share: float) -> Callable[[sqlite3.Connection], None]:
    """Continue a running merge by one step, or start a merge of every segment once the
    segments other than the largest hold ``share`` of its pages (and at least 64)."""

    def step(connection: sqlite3.Connection) -> None:
        levels = layout(connection)
        if any(merging for merging, _ in levels):
            connection.execute(MERGE, (16,))
            return
        pages = [count for _, segment_pages in levels for count in segment_pages]
        if len(pages) < 2:
            return
        largest = max(pages)
        if sum(pages) - largest >= max(64, share * largest):
            connection.execute(MERGE, (-16,))

    return step


CONFIGS: dict[str, list[tuple[str, int]]] = {
    "default": [], "am2": [("automerge", 2)], "am16": [("automerge", 16)],
    "pgsz16k": [("pgsz", 16000)], "tail10": [], "tail25": [],
}
STEPS = {"tail10": tail_policy(0.10), "tail25": tail_policy(0.25)}


def build(path: Path, size: int, policy: str) -> dict[str, object]:
    """The ledger of ``size`` events by real appends under ``policy``; its costs."""
    SqliteStore(path, synchronous="NORMAL").close()
    side = sqlite3.connect(path, isolation_level=None)
    for name, value in CONFIGS[policy]:
        side.execute("INSERT INTO events_fts (events_fts, rank) VALUES (?, ?)", (name, value))
    step = STEPS.get(policy)
    store = SqliteStore(path, synchronous="NORMAL")
    transactions, in_policy = 0, 0.0
    started = time.perf_counter()
    for conversation_id, indexes in fill_plan(size):
        store.append(conversation_id, [draft(index) for index in indexes])
        transactions += 1
        if step is not None:
            begun = time.perf_counter()
            side.execute("BEGIN IMMEDIATE")
            step(side)
            side.execute("COMMIT")
            in_policy += time.perf_counter() - begun
    elapsed = time.perf_counter() - started
    store.close()
    side.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    side.close()
    return {"per_tx_us": round(elapsed / transactions * 1e6),
            "policy_us_per_tx": round(in_policy / transactions * 1e6)}


def searched(path: Path, size: int, count: int = 400) -> float:
    """Median microseconds of ``count`` own searches through the store."""
    store = SqliteStore(path)
    try:
        times = []
        for requester, text, _ in search_queries(size, "own", count):
            begun = time.perf_counter()
            store.search(requester, text, limit=20)
            times.append(time.perf_counter() - begun)
    finally:
        store.close()
    return statistics.median(times) * 1e6


def report(path: Path, size: int, repeat: int) -> dict[str, object]:
    connection = sqlite3.connect(path)
    try:
        levels = layout(connection)
    finally:
        connection.close()
    pages = [count for _, segment_pages in levels for count in segment_pages]
    return {"segments": len(pages), "pages": sorted(pages, reverse=True),
            "search_us": [round(searched(path, size)) for _ in range(repeat)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--policies", nargs="+", default=["default", "tail10"],
                        choices=sorted(CONFIGS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--optimized", action="store_true")
    parser.add_argument("--work", type=Path, default=None)
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="search-segments-"))
    for policy in options.policies:
        path = work / f"{policy}-{options.size}.sqlite"
        path.unlink(missing_ok=True)
        costs = build(path, options.size, policy)
        print(json.dumps({"policy": policy, "size": options.size, **costs,
                          **report(path, options.size, options.repeat)}), flush=True)
        if options.optimized and policy == options.policies[0]:
            merged = work / f"optimized-{options.size}.sqlite"
            shutil.copyfile(path, merged)
            connection = sqlite3.connect(merged)
            connection.execute("INSERT INTO events_fts (events_fts) VALUES ('optimize')")
            connection.commit()
            connection.close()
            print(json.dumps({"policy": f"{policy}+optimize", "size": options.size,
                              **report(merged, options.size, options.repeat)}), flush=True)
    if options.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
