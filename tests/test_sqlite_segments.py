"""The index layout on real SQLite files: ``scripts/bench_search_segments.py``'s reader of
FTS5's structure record, and searches that answer the same whatever the layout.

The oracle of the reader is the index's leaf pages counted from the rows of
``events_fts_data`` (a leaf's row id is the segment id shifted left by 37 bits
plus the page number, with the doclist-index bit and the height zero:
``fts5_index.c``). A merge changes the layout of the index, never what a
search returns (SRC-003 relies on rowid order within a conversation, SQL-067).
"""

from __future__ import annotations

import importlib.util
import sqlite3
from collections import Counter
from pathlib import Path
from types import ModuleType

from convledger.envelope import EventDraft
from convledger.sqlite import SqliteStore

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_search_segments.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_search_segments", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


segments = _script()

LEAF_PAGES = (
    "SELECT id >> 37, count(*) FROM events_fts_data"
    " WHERE id >= (1 << 37) AND (id >> 31) & 63 = 0 GROUP BY id >> 37"
)
"""Leaf pages per segment id, counted from the data rows (the oracle of ``structure_of``)."""


def _draft(index: int) -> EventDraft:
    words = " ".join(f"w{(index * 7 + step) % 50}" for step in range(30))
    return EventDraft(
        f"e{index}", "state/set", "2024-05-01T12:00:00Z",
        {"actor": "tester", "name": "slot", "value": f"common {words}", "version": 1},
    )


def _pages(connection: sqlite3.Connection) -> list[int]:
    return [count for _, pages in segments.layout(connection) for count in pages]


def _merging(connection: sqlite3.Connection) -> bool:
    return any(merging for merging, _ in segments.layout(connection))


def _fill(path: Path, transactions: int, per: int, *, first: int = 0) -> None:
    store = SqliteStore(path, synchronous="NORMAL")
    try:
        for number in range(transactions):
            store.append(
                f"c{number % 7}", [_draft(first + number * per + k) for k in range(per)]
            )
    finally:
        store.close()


def test_structure_counts_the_leaf_pages_of_every_segment(tmp_path: Path) -> None:
    """The parsed pages per segment are the leaf rows ``events_fts_data`` holds."""
    path = tmp_path / "ledger.sqlite"
    _fill(path, 60, 32)  # 32 events: each append writes its index rows (SQL-074)
    connection = sqlite3.connect(path)
    try:
        connection.execute("INSERT INTO events_fts (events_fts, rank) VALUES ('automerge', 0)")
        for number in range(3):  # three more segments, none merged away
            connection.execute(
                "INSERT INTO events_fts (rowid, body, scope) VALUES (?, 'extra words', 'S')",
                (10_000 + number,),
            )
            connection.commit()
        pages, merging = _pages(connection), _merging(connection)
        counted = Counter(dict(connection.execute(LEAF_PAGES).fetchall()))
    finally:
        connection.close()
    assert sorted(pages) == sorted(counted.values())
    assert len(pages) >= 4 and not merging


def test_a_started_merge_is_seen_and_continued(tmp_path: Path) -> None:
    """A negative step starts a merge of every segment (the reader sees it running); positive
    steps continue it until one segment holds the index."""
    path = tmp_path / "ledger.sqlite"
    _fill(path, 40, 50)
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        assert len(_pages(connection)) >= 2
        connection.execute(segments.MERGE, (-1,))
        assert _merging(connection)
        steps = 0
        while _merging(connection) and steps < 10_000:
            connection.execute(segments.MERGE, (16,))
            steps += 1
        assert len(_pages(connection)) == 1 and steps > 0
    finally:
        connection.close()


def test_unreadable_records_leave_the_index_alone() -> None:
    """A record the reader does not know gives None, not a guess."""
    assert segments.levels_of(b"") is None
    assert segments.levels_of(b"\x00\x00\x00\x01\x05") is None
    assert segments.levels_of(b"\x00\x00\x00\x01\x01\x01\x00\x00\x01\x01\x01\x05\x09") is None
    assert segments.levels_of(b"\x00\x00\x00\x01\x01\x01\x00\x00\x01\x01\x01\x05") == [
        (0, [5])
    ]


def test_tail_policy_merges_a_grown_tail_only(tmp_path: Path) -> None:
    """The measured ``tail10`` policy: a tail under 64 pages is left to FTS5; once the small
    segments hold a tenth of the largest (and 64 pages), its steps merge until they do not."""
    path = tmp_path / "ledger.sqlite"
    _fill(path, 40, 50)
    step = segments.tail_policy(0.10)
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("INSERT INTO events_fts (events_fts) VALUES ('optimize')")
        for number in range(12):  # twelve one-page segments: a tail far under 64 pages
            connection.execute(
                "INSERT INTO events_fts (rowid, body, scope) VALUES (?, 'few words', 'S')",
                (100_000 + number,),
            )
        small = sorted(_pages(connection))
        step(connection)
        assert sorted(_pages(connection)) == small and not _merging(connection)
    finally:
        connection.close()
    _fill(path, 200, 50, first=10_000)
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        pages = sorted(_pages(connection))
        assert sum(pages[:-1]) >= max(64, pages[-1] // 10), pages
        steps = 0
        while steps < 10_000:
            step(connection)
            steps += 1
            after = sorted(_pages(connection))
            if not _merging(connection) and sum(after[:-1]) < max(64, after[-1] // 10):
                break
        assert steps > 1 and len(after) < len(pages) and after[-1] > pages[-1], (pages, after)
    finally:
        connection.close()


def test_searches_answer_the_same_whatever_the_layout(tmp_path: Path) -> None:
    """SRC-003, SQL-067: a ledger of many segments answers every search (one backward MATCH,
    ``search.HITS_OF_ONE``) as the same ledger merged into one segment (FTS5 ``optimize``)."""
    path = tmp_path / "ledger.sqlite"
    _fill(path, 300, 10)
    connection = sqlite3.connect(path)
    try:
        layout = _pages(connection)
    finally:
        connection.close()
    store = SqliteStore(path, synchronous="NORMAL")
    try:
        queries = [(f"c{number}", word) for number in range(7) for word in ("common", "w3 w4")]
        before = [store.search(cid, word, limit=30) for cid, word in queries]
    finally:
        store.close()
    connection = sqlite3.connect(path)
    try:
        connection.execute("INSERT INTO events_fts (events_fts) VALUES ('optimize')")
        connection.commit()
        assert len(_pages(connection)) == 1
    finally:
        connection.close()
    store = SqliteStore(path, synchronous="NORMAL")
    try:
        assert [store.search(cid, word, limit=30) for cid, word in queries] == before
    finally:
        store.close()
    assert len(layout) >= 3 and all(len(hits) == 30 for hits in before)
