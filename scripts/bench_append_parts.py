"""Where one SQLite append spends its time, part by part (issue 18): microseconds per call.

On copies of the same 1e3-event reference ledger (``workloads.build_reference_file``),
WAL and ``synchronous=FULL`` as the store's default, interleaved call by call in each
round (the starting contender rotating), it times:

* ``store``: ``SqliteStore.append`` of one draft, or of a batch of 100, the whole call;
* ``replay``: bare ``sqlite3`` running the store's own statements for the same append
  (``rows``/``runtime_view`` constants, the parameters built before timing), each
  statement timed on its own: ``BEGIN IMMEDIATE``, the tombstone (``purged``), the head,
  the eventId probe (one per event), the next FTS rowid, the events insert, the FTS5
  rows, ``COMMIT`` (which writes the WAL frames and fsyncs);
* ``replay-now``: the statements of this checkout's append (one read of the tombstone, the
  head and the next FTS rowid, ``rows.APPEND_STATE``; no eventId probe), each timed;
  ``replay`` is the sequence main ran at c05251d (both write each event's FTS5 row, schema
  version 3);
* ``replay-v4``: the statements of schema version 4 (SQL-073, SQL-074): the one read (now
  also the pending count), the events, their ``search_pending`` rows, and in one call of
  32 the index rows of every pending event instead; that part is the mean of its round
  (amortized), every other part the median;
* ``replay-nofts``: the ``replay`` statements without the FTS5 statements, so the commit's
  difference is what the FTS5 pages cost in the WAL and its fsync;
* ``replay-noidx``: the same on a copy without ``events_by_event_id`` and without the
  probe, so the insert's and commit's difference is that unique index;
* ``minimal``: the minimal ledger transaction (``convledger_bench.minimal``) on its own
  ledger of the same events, each statement timed;
* the Python parts on the same drafts, no file: ``validated_batch`` (field checks, the
  one canonical encoding and the detached copy, ``codec.encode_payload_copied``, with
  the size and depth limits, the compiled validator), of which the encoding and copy
  alone, and the row
  building of ``rows.insert_placed`` (``Envelope.from_draft``, ``event_row``,
  ``event_text``, ``scope_token``).

What is left of ``store`` after the replay's statements and the Python parts is the
store's own glue (the lock and scopes, ``driver_boundary``, the execute calls' Python).
A last pass, not timed, counts the WAL frames each variant's commit writes
(``wal_autocheckpoint`` off, the WAL's growth over the page size + 24).

Usage::

    python scripts/bench_append_parts.py [--rounds 7] [--calls 30] [--profile]
        [--synchronous NORMAL]   # no fsync: the store's own CPU stands out
        [--clock cpu]            # thread CPU time instead of wall time
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from convledger import codec
from convledger.batch import validated_batch
from convledger.envelope import Envelope
from convledger.kinds import default_registry
from convledger.search.query import scope_token
from convledger.search.text import event_text
from convledger.sqlite import SqliteStore, rows
from convledger.sqlite import runtime_view as view
from convledger.sqlite.schema import SEARCH_PENDING_LIMIT
from convledger_bench import minimal
from convledger_bench.workloads import (
    build_reference_file,
    copy_ledger,
    draft,
)

SIZE = 1000
FIND_EVENT_ID = "SELECT 1 FROM events WHERE event_id = ?"
"""The eventId probe main ran at c05251d, one per event (now ``rows.FIND_EVENT_IDS``)."""
CLOCK: list[Callable[[], float]] = [time.perf_counter]
"""The clock of every part (``--clock``): ``wall`` (perf_counter, with the fsync's wait and
whatever the machine's load adds) or ``cpu`` (this thread's CPU time, ``time.thread_time``:
what each part costs the process, steady under load, without the disk's wait)."""
SYNCHRONOUS = ["FULL"]
"""Every contender's ``synchronous`` (``--synchronous``): NORMAL takes the fsync out of each
commit, so what the store adds to its statements stands out of the disk's noise."""
CONVERSATION = "conv-000000"
Timings = dict[str, float]
Call = Callable[[int], Timings]
"""Runs the ``turn``-th call of a contender and returns its parts in seconds."""


def _clock(timings: Timings, name: str, started: float) -> float:
    now = CLOCK[0]()
    timings[name] = timings.get(name, 0.0) + now - started
    return now


def _drafts(turn: int, batch: int) -> list[object]:
    first = 10**6 + turn * batch
    return [draft(index) for index in range(first, first + batch)]


def _rows(turn: int, batch: int, head: int) -> list[rows.Row]:
    return [
        rows.event_row(Envelope.from_draft(made, CONVERSATION, head + offset))  # type: ignore[arg-type]
        for offset, made in enumerate(_drafts(turn, batch), start=1)
    ]


def _connection(path: Path, *, autocheckpoint: bool = True) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    connection.execute(f"PRAGMA synchronous = {SYNCHRONOUS[0]}")
    if not autocheckpoint:
        connection.execute("PRAGMA wal_autocheckpoint = 0")
    return connection


def store_call(path: Path, batch: int) -> Call:
    store = SqliteStore(path, synchronous=SYNCHRONOUS[0])
    prepared: dict[int, list[object]] = {}

    def call(turn: int) -> Timings:
        drafts = prepared.pop(turn, None) or _drafts(turn, batch)
        started = CLOCK[0]()
        store.append(CONVERSATION, drafts)  # type: ignore[arg-type]
        return {"store": CLOCK[0]() - started}

    return call


def replay_call(
    connection: sqlite3.Connection, batch: int, *, fts: bool, probe: bool, fused: bool = False
) -> Call:
    """The store's statements for one append, each timed (parameters built before timing).

    ``fused``: the statements of this checkout (one ``rows.APPEND_STATE`` read, no eventId
    probe); otherwise those of main at c05251d (three reads and a probe per event).
    """
    head = SIZE
    texts: dict[int, list[tuple[str, str, str, int]]] = {}

    def call(turn: int) -> Timings:
        nonlocal head
        stored = _rows(turn, batch, head)
        index_rows = [(event_text(codec.decode_stored(row[6])), scope_token(CONVERSATION),
                       CONVERSATION, row[1]) for row in stored]
        texts[turn] = index_rows
        timings: Timings = {}
        started = CLOCK[0]()
        connection.execute("BEGIN IMMEDIATE")
        started = _clock(timings, "BEGIN IMMEDIATE", started)
        if fused:
            first = int(connection.execute(
                rows.APPEND_STATE, (CONVERSATION, CONVERSATION)).fetchone()[2])
            started = _clock(timings, "SELECT tombstone+head+next FTS rowid", started)
        else:
            connection.execute(view.PURGED, (CONVERSATION,)).fetchone()
            started = _clock(timings, "SELECT purged", started)
            connection.execute(rows.READ_HEAD, (CONVERSATION,)).fetchone()
            started = _clock(timings, "SELECT head", started)
        if probe and not fused:
            for row in stored:
                connection.execute(FIND_EVENT_ID, (row[2],)).fetchone()
            started = _clock(timings, "SELECT eventId (probe)", started)
        if fts and not fused:
            first = int(connection.execute(rows.NEXT_SEARCH_ROWID).fetchone()[0])
            started = _clock(timings, "SELECT next FTS rowid", started)
        elif not fts:
            first = 10**9 + turn * batch
        connection.executemany(
            rows.INSERT_EVENT, [(*row, rowid) for rowid, row in enumerate(stored, start=first)]
        )
        started = _clock(timings, "INSERT events", started)
        if fts:
            connection.executemany(
                rows.INSERT_SEARCH_ROW,
                [(rowid, *found) for rowid, found in enumerate(index_rows, start=first)],
            )
            started = _clock(timings, "INSERT events_fts", started)
        connection.execute("COMMIT")
        _clock(timings, "COMMIT (WAL write + fsync)", started)
        head += batch
        return timings

    return call


AMORTIZED = "pending rows, or index them all (amortized)"
"""The part of ``replay-v4`` whose round statistic is the mean: one call in 32 indexes."""


def pending_replay_call(connection: sqlite3.Connection, batch: int) -> Call:
    """The statements of schema version 4 (SQL-073, SQL-074), each timed: the one read, the
    events, their ``search_pending`` rows, and, in the write that fills the table, the index
    rows of every pending event and of its own (``rows.index_pending``) instead."""
    head = SIZE

    def call(turn: int) -> Timings:
        nonlocal head
        stored = _rows(turn, batch, head)
        index_rows = [(event_text(codec.decode_stored(row[6])), scope_token(CONVERSATION),
                       CONVERSATION, row[1]) for row in stored]
        timings: Timings = {}
        started = CLOCK[0]()
        connection.execute("BEGIN IMMEDIATE")
        started = _clock(timings, "BEGIN IMMEDIATE", started)
        _, _, first, pending = rows.append_state(connection, CONVERSATION)
        started = _clock(timings, "SELECT tombstone+head+next rowid+pending", started)
        connection.executemany(
            rows.INSERT_EVENT, [(*row, rowid) for rowid, row in enumerate(stored, start=first)]
        )
        started = _clock(timings, "INSERT events", started)
        if pending + batch < SEARCH_PENDING_LIMIT:
            connection.executemany(rows.INSERT_PENDING, [
                (rowid, CONVERSATION, row[1]) for rowid, row in enumerate(stored, start=first)
            ])
        else:
            if pending:
                rows.index_pending(connection)
            connection.executemany(
                rows.INSERT_SEARCH_ROW,
                [(rowid, *found) for rowid, found in enumerate(index_rows, start=first)],
            )
        started = _clock(timings, AMORTIZED, started)
        connection.execute("COMMIT")
        _clock(timings, "COMMIT (WAL write + fsync)", started)
        head += batch
        return timings

    return call


def minimal_call(ledger: minimal.MinimalLedger, batch: int) -> Call:
    """The minimal ledger transaction, each statement timed."""
    connection = ledger.connection

    def call(turn: int) -> Timings:
        first = 10**6 + turn * batch
        events = [minimal.event_row(index) for index in range(first, first + batch)]
        timings: Timings = {}
        started = CLOCK[0]()
        connection.execute("BEGIN IMMEDIATE")
        started = _clock(timings, "BEGIN IMMEDIATE", started)
        found = connection.execute(minimal.HEAD, (CONVERSATION,)).fetchone()
        head = 0 if found is None else int(found[0])
        started = _clock(timings, "SELECT head", started)
        connection.executemany(minimal.INSERT_EVENT, [
            (CONVERSATION, head + offset, *row) for offset, row in enumerate(events, start=1)
        ])
        started = _clock(timings, "INSERT events", started)
        connection.execute(minimal.UPSERT_HEAD, (CONVERSATION, head + batch))
        started = _clock(timings, "upsert head", started)
        connection.execute("COMMIT")
        _clock(timings, "COMMIT (WAL write + fsync)", started)
        return timings

    return call


def python_call(batch: int) -> Call:
    """The store's Python parts of one append, on the same drafts, without a file."""
    registry = default_registry()

    def call(turn: int) -> Timings:
        drafts = _drafts(turn, batch)
        timings: Timings = {}
        started = CLOCK[0]()
        checked = validated_batch(registry, CONVERSATION, drafts, None)
        started = _clock(timings, "validated_batch (all)", started)
        for made in drafts:
            codec.encode_payload_copied(made.payload)
        started = _clock(timings, "  of which: canonical encoding and copy", started)
        texts = [made.canonical_payload for made in checked]  # type: ignore[attr-defined]
        placed = [Envelope.from_draft(made, CONVERSATION, SIZE + offset)
                  for offset, made in enumerate(checked, start=1)]
        started = _clock(timings, "Envelope.from_draft", started)
        for envelope, text in zip(placed, texts, strict=True):
            rows.event_row(envelope, text)
        started = _clock(timings, "rows.event_row", started)
        for envelope in placed:
            event_text(envelope.payload)
            scope_token(envelope.conversation_id)
        _clock(timings, "FTS text (event_text, scope_token)", started)
        return timings

    return call


def measure(
    directory: Path, batch: int, rounds: int, calls: int
) -> dict[str, dict[str, list[float]]]:
    reference = directory / "reference.sqlite"
    if not reference.exists():
        build_reference_file(reference, SIZE)
        minimal.build_minimal_file(directory / "minimal.sqlite", SIZE)
    tag = f"b{batch}"
    noidx = _connection(copy_ledger(reference, directory / f"{tag}-noidx.sqlite"))
    noidx.execute("DROP INDEX events_by_event_id")
    contenders: dict[str, Call] = {
        "store": store_call(copy_ledger(reference, directory / f"{tag}-store.sqlite"), batch),
        "replay": replay_call(
            _connection(copy_ledger(reference, directory / f"{tag}-replay.sqlite")), batch,
            fts=True, probe=True),
        "replay-now": replay_call(
            _connection(copy_ledger(reference, directory / f"{tag}-now.sqlite")), batch,
            fts=True, probe=False, fused=True),
        "replay-v4": pending_replay_call(
            _connection(copy_ledger(reference, directory / f"{tag}-v4.sqlite")), batch),
        "replay-nofts": replay_call(
            _connection(copy_ledger(reference, directory / f"{tag}-nofts.sqlite")), batch,
            fts=False, probe=True),
        "replay-noidx": replay_call(noidx, batch, fts=True, probe=False),
        "minimal": minimal_call(minimal.MinimalLedger(
            copy_ledger(directory / "minimal.sqlite", directory / f"{tag}-minimal.sqlite"),
            synchronous=SYNCHRONOUS[0]), batch),
        "python": python_call(batch),
    }
    names = list(contenders)
    # per contender, per part: the median of each round
    results: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    turn = 0
    for number in range(rounds):
        samples: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        order = names[number % len(names):] + names[:number % len(names)]
        for _ in range(calls):
            for name in order:
                for part, seconds in contenders[name](turn).items():
                    samples[name][part].append(seconds)
            turn += 1
        for name, parts in samples.items():
            for part, values in parts.items():
                middle = statistics.mean if part == AMORTIZED else statistics.median
                results[name][part].append(middle(values) * 1e6)
    return results


def frames(directory: Path, batch: int) -> dict[str, float]:
    """WAL frames per commit of each variant (not timed)."""
    reference = directory / "reference.sqlite"
    found: dict[str, float] = {}
    for name, fts, probe, drop in (
        ("replay", True, True, False), ("replay-nofts", False, True, False),
        ("replay-noidx", True, False, True),
    ):
        path = copy_ledger(reference, directory / f"frames-{name}-{batch}.sqlite")
        connection = _connection(path, autocheckpoint=False)
        if drop:
            connection.execute("DROP INDEX events_by_event_id")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = int(connection.execute("PRAGMA page_size").fetchone()[0])
        call = replay_call(connection, batch, fts=fts, probe=probe)
        wal = Path(f"{path}-wal")
        before = wal.stat().st_size if wal.exists() else 0
        for turn in range(20):
            call(turn)
        found[f"{name} ({page} B pages)"] = (wal.stat().st_size - before) / (page + 24) / 20
        connection.close()
    path = copy_ledger(reference, directory / f"frames-v4-{batch}.sqlite")
    connection = _connection(path, autocheckpoint=False)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = int(connection.execute("PRAGMA page_size").fetchone()[0])
    call = pending_replay_call(connection, batch)
    wal = Path(f"{path}-wal")
    before = wal.stat().st_size if wal.exists() else 0
    for turn in range(2 * SEARCH_PENDING_LIMIT):  # two whole cycles of search_pending
        call(turn)
    found[f"replay-v4, amortized ({page} B pages)"] = (
        (wal.stat().st_size - before) / (page + 24) / (2 * SEARCH_PENDING_LIMIT))
    connection.close()
    path = copy_ledger(directory / "minimal.sqlite", directory / f"frames-minimal-{batch}.sqlite")
    ledger = minimal.MinimalLedger(path)
    ledger.connection.execute("PRAGMA wal_autocheckpoint = 0")
    ledger.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = int(ledger.connection.execute("PRAGMA page_size").fetchone()[0])
    call = minimal_call(ledger, batch)
    wal = Path(f"{path}-wal")
    before = wal.stat().st_size if wal.exists() else 0
    for turn in range(20):
        call(turn)
    found[f"minimal ({page} B pages)"] = (wal.stat().st_size - before) / (page + 24) / 20
    ledger.close()
    return found


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):9.1f} [{min(values):.1f}..{max(values):.1f}]"


def report(batch: int, results: dict[str, dict[str, list[float]]]) -> None:
    print(f"\n== append of {batch} event(s): us per call, median of round medians [min..max]")
    for name, parts in results.items():
        total = [sum(values) for values in zip(
            *(v for part, v in parts.items() if not part.startswith("  ")), strict=True)]
        print(f"{name:14} total {_cell(total)}")
        if len(parts) > 1:
            for part, values in parts.items():
                print(f"  {part:38} {_cell(values)}")
    store = statistics.median(results["store"]["store"])
    replay = statistics.median(
        [sum(v) for v in zip(*results["replay-v4"].values(), strict=True)])
    python = results["python"]
    own = sum(statistics.median(python[part]) for part in python if not part.startswith("  "))
    print(f"store - replay-v4 statements - python parts = glue {store - replay - own:.1f} us")


def profile(directory: Path, batch: int, calls: int) -> None:
    path = copy_ledger(directory / "reference.sqlite", directory / f"profile-{batch}.sqlite")
    store = SqliteStore(path)
    groups = [_drafts(10**4 + turn, batch) for turn in range(calls)]
    profiler = cProfile.Profile()
    profiler.enable()
    for drafts in groups:
        store.append(CONVERSATION, drafts)  # type: ignore[arg-type]
    profiler.disable()
    store.close()
    print(f"\n== cProfile of {calls} appends of {batch} (tottime)")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=30, help="single appends per round")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL"), default="FULL")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    options = parser.parse_args()
    CLOCK[0] = time.thread_time if options.clock == "cpu" else time.perf_counter
    SYNCHRONOUS[0] = options.synchronous
    print(f"load average {os.getloadavg()}, sqlite {sqlite3.sqlite_version},"
          f" synchronous={options.synchronous}, clock={options.clock}")
    with tempfile.TemporaryDirectory(prefix="append-parts-", dir="/tmp") as name:
        directory = Path(name)
        for batch, calls in ((1, options.calls), (100, max(3, options.calls // 6))):
            report(batch, measure(directory, batch, options.rounds, calls))
            for variant, count in frames(directory, batch).items():
                print(f"  WAL frames per commit, {variant}: {count:.1f}")
            if options.profile:
                profile(directory, batch, 300 if batch == 1 else 20)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
