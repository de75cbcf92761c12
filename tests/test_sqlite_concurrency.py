"""Several writers on one SQLite file: processes, threads, busy, full (SQL-040 .. SQL-047)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import draft
from convledger.sqlite import SqliteStore, StorageFullError, StoreBusyError
from convledger.sqlite.fixtures import file_digest

_WRITER = textwrap.dedent(
    """
    import pathlib, sys, time
    from convledger.envelope import EventDraft
    from convledger.sqlite import SqliteStore
    path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4])
    store = SqliteStore(path, busy_timeout=60)
    while not go.exists():
        time.sleep(0.001)
    for n in range(count):
        store.append("shared", [EventDraft(
            event_id=f"{name}-{n}", kind="state/set", occurred_at="2024-01-01T00:00:00Z",
            payload={"name": name, "version": 1, "value": n, "actor": name})])
    store.close()
    """
)


def test_two_processes_append_to_one_file_without_gaps(tmp_path: Path) -> None:
    """SQL-047: two processes appending 200 events each give seqs 1..400, each event once."""
    path = tmp_path / "shared.sqlite"
    SqliteStore(path).close()
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), name, "200", str(go)],
            stderr=subprocess.PIPE,
        )
        for name in ("left", "right")
    ]
    go.touch()
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err.decode()
    store = SqliteStore(path)
    events = store.read("shared", limit=1000).items
    store.close()
    assert [event.seq for event in events] == list(range(1, 401))
    assert len({event.event_id for event in events}) == 400
    for name in ("left", "right"):
        own = [event.payload for event in events if event.event_id.startswith(name)]
        assert [payload["value"] for payload in own if isinstance(payload, dict)] == list(
            range(200)
        )


def test_threads_on_two_handles_interleave_without_gaps(tmp_path: Path) -> None:
    """SQL-040, LED-013: threads appending through two handles and one shared handle stay 1..n."""
    path = tmp_path / "threads.sqlite"
    first = SqliteStore(path)
    second = SqliteStore(path)
    handles = [first, second, first]

    def write(index: int) -> None:
        for n in range(40):
            handles[index].append("c", [draft(f"t{index}-{n}"), draft(f"t{index}-{n}b")])

    threads = [threading.Thread(target=write, args=(index,)) for index in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = first.read("c", limit=1000).items
    assert [event.seq for event in events] == list(range(1, 241))
    pairs = {event.event_id: event.seq for event in events}
    assert all(pairs[f"{key}b"] == seq + 1 for key, seq in pairs.items() if not key.endswith("b"))
    first.close()
    second.close()


def test_busy_database_is_a_typed_conflict_after_the_timeout(tmp_path: Path) -> None:
    """SQL-041: a writer blocked past its busy timeout gets a conflict, never a driver error."""
    path = tmp_path / "busy.sqlite"
    holder = SqliteStore(path)
    waiter = SqliteStore(path, busy_timeout=0.05)
    with holder.write_transaction() as tx:
        tx.append("c", [draft("held")])
        with pytest.raises(StoreBusyError) as caught:
            waiter.append("c", [draft("blocked")])
        assert caught.value.kind == "conflict"
    assert waiter.append("c", [draft("later")])[0].seq == 2
    assert [event.event_id for event in waiter.read("c").items] == ["held", "later"]
    holder.close()
    waiter.close()


def test_busy_open_is_a_typed_conflict(tmp_path: Path) -> None:
    """SQL-041: an open that cannot take the write lock in time is a conflict too."""
    path = tmp_path / "busy.sqlite"
    holder = SqliteStore(path)
    with holder.write_transaction(), pytest.raises(StoreBusyError):
        SqliteStore(path, busy_timeout=0.05)
    holder.close()


def test_export_is_one_snapshot_while_a_writer_appends(tmp_path: Path) -> None:
    """SQL-045, ARC-014: exports during batches of 5 appends always hold whole batches."""
    path = tmp_path / "snapshot.sqlite"
    writer = SqliteStore(path)
    reader = SqliteStore(path)
    writer.append("c", [draft(f"seed-{n}") for n in range(5)])
    done = threading.Event()

    def write() -> None:
        for batch in range(60):
            writer.append("c", [draft(f"b{batch}-{n}") for n in range(5)])
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    while True:
        finished = done.is_set()
        document = json.loads(reader.export_conversation("c"))
        seqs = [event["seq"] for event in document["events"]]
        assert seqs == list(range(1, len(seqs) + 1))
        assert len(seqs) % 5 == 0
        if finished:
            break
    thread.join()
    final = json.loads(reader.export_conversation("c"))
    assert len(final["events"]) == 305
    writer.close()
    reader.close()


def test_full_database_refuses_the_write_and_keeps_nothing(tmp_path: Path) -> None:
    """SQL-046: a write past the page limit is an unavailable error; nothing of it is stored."""
    path = tmp_path / "full.sqlite"
    SqliteStore(path).close()

    def limit_pages(connection: sqlite3.Connection) -> None:
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {pages + 4}")

    store = SqliteStore(path, connection_hook=limit_pages)
    store.append("c", [draft("small")])
    before = store.export_conversation("c")
    big = [draft(f"big-{n}", value="x" * 4000) for n in range(200)]
    with pytest.raises(StorageFullError) as caught:
        store.append("c", big)
    assert caught.value.kind == "unavailable"
    assert store.export_conversation("c") == before
    assert store.head("c") == 1
    store.close()
    reopened = SqliteStore(path)
    assert reopened.export_conversation("c") == before
    reopened.close()


def test_durability_settings_are_applied(tmp_path: Path) -> None:
    """SQL-042: WAL with synchronous FULL by default; NORMAL when configured."""
    path = tmp_path / "durable.sqlite"
    for setting, expected in (("FULL", 2), ("NORMAL", 1), ("EXTRA", 3)):
        store = SqliteStore(path, synchronous=setting)
        connection = store._connection
        assert connection.execute("PRAGMA synchronous").fetchone() == (expected,)
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        store.close()
    default = SqliteStore(path)
    assert default._connection.execute("PRAGMA synchronous").fetchone() == (2,)
    default.close()


def test_read_only_handle_sees_writes_of_another_process(tmp_path: Path) -> None:
    """SQL-047: a read-only handle reads what a writer committed, and changes no byte."""
    path = tmp_path / "shared.sqlite"
    writer = SqliteStore(path)
    writer.append("c", [draft("e1")])
    writer.close()
    before = file_digest(path)
    reader = SqliteStore(path, read_only=True)
    assert json.loads(reader.export_conversation("c"))["events"][0]["eventId"] == "e1"
    reader.close()
    assert file_digest(path) == before
