"""What the search index costs an append: designs of the FTS5 index against the minimal ledger.

Every contender is a bare ``sqlite3`` connection on its own file (WAL, the
chosen ``synchronous``), preloaded with the same ledger, and runs one ledger
transaction per call: ``BEGIN IMMEDIATE``; read the head; insert the event
(or a batch of events); upsert the head; ``COMMIT``. The contenders differ
only in how the event reaches the search index:

=================  ==============================================================
contender          the index write
=================  ==============================================================
``raw``            none: the minimal ledger transaction (the floor, 1.00x)
``trigger``        schema v2: ``search_rowid`` from ``max(rowid)`` of ``events_fts``
                   and the AFTER INSERT trigger (``json_tree`` walk, ``hex`` scope)
``py``             schema v3: the same FTS5 table, no trigger: the body joined in
                   Python from the payload value, one ``max(rowid)`` per batch,
                   the events and their index rows each by one ``executemany``
``py_lastrowid``   as ``py``, the rowid assigned by FTS5 and read back
                   (``lastrowid``), the event inserted after its index row
``py_noscope``     as ``py_lastrowid`` without the ``scope`` column (the scope's
                   share of the cost; not a design: search needs a scope)
``contentless``    ``content=''``, ``columnsize=0``: no copy of the text, no
                   docsize row; events gain an index on ``search_rowid`` to map a
                   hit back, snippets cut from the ledger row
``detail_column``  as ``py_lastrowid`` with ``detail=column`` (no positions)
``lagging``        no index write at append time (an index that lags, brought up
                   to date by a later batch; the ceiling of that design)
``store``          ``SqliteStore.append`` of whatever ``convledger`` is imported,
                   with a ``state/set`` payload of the same value
``peer``           the same, in a worker process whose ``PYTHONPATH`` starts with
                   ``--peer DIR`` (another checkout's ``reference``: the store
                   before a change), timed inside the worker call by call
=================  ==============================================================

Calls are interleaved: each call runs every contender once, in an order that
rotates call by call, so machine load hits all alike. A contender's figure is
its median call (us/tx); its ratio is the median call of ``raw`` over its own,
and the spread is that ratio taken per round (min .. max of round medians).

    python scripts/bench_search_index.py [--synchronous FULL] [--rounds 7] [--batch 1] \
        [--only raw trigger py store] [--peer /path/to/other/checkout/reference]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

EVENTS = """CREATE TABLE events (
    conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL,
    kind TEXT NOT NULL, schema_version INTEGER NOT NULL, occurred_at TEXT NOT NULL,
    payload TEXT NOT NULL, ignorable INTEGER NOT NULL{extra},
    PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID"""
BASE = (
    "CREATE UNIQUE INDEX events_by_event_id ON events (event_id)",
    "CREATE TABLE heads (conversation_id TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL)"
    " WITHOUT ROWID",
)
FTS = (
    "CREATE VIRTUAL TABLE events_fts USING fts5(body, scope, conversation_id UNINDEXED,"
    " seq UNINDEXED{options}, tokenize = 'unicode61 remove_diacritics 2')"
)
TRIGGER = """CREATE TRIGGER events_fts_after_insert AFTER INSERT ON events BEGIN
    INSERT INTO events_fts (rowid, body, scope, conversation_id, seq) VALUES (
        new.search_rowid,
        (SELECT group_concat(value, ' ') FROM json_tree(new.payload) WHERE type = 'text'),
        hex(new.conversation_id), new.conversation_id, new.seq);
    END"""
COLUMNS = "conversation_id, seq, event_id, kind, schema_version, occurred_at, payload, ignorable"
READ_HEAD = "SELECT seq FROM heads WHERE conversation_id = ?"
UPSERT_HEAD = (
    "INSERT INTO heads (conversation_id, seq) VALUES (?, ?)"
    " ON CONFLICT (conversation_id) DO UPDATE SET seq = excluded.seq"
)
WORDS = ("assertion", "archive", "escaped", "encoder", "suite", "café", "failing", "writer",
         "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda")


def strings_of(value: Any) -> Iterator[str]:
    """The string values of a JSON value in document order (keys are not text).

    The same walk as ``convledger.search.text.event_text``, written here on purpose: this
    module imports no ``convledger`` at the top, because its ``--worker`` runs a peer
    checkout's store (``--peer``), which may predate that module.
    """
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for member in value.values():
            yield from strings_of(member)
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)


def body_of(payload: Any) -> str:
    return " ".join(strings_of(payload))


def scope_of(conversation_id: str) -> str:
    return conversation_id.encode("utf-8").hex().upper()


def drafts_of(events: list[tuple[str, str, Any]]) -> list[Any]:
    from convledger import EventDraft

    return [
        EventDraft(event_id=event_id, kind="state/set", occurred_at="2026-01-01T00:00:00.000Z",
                   payload={"actor": "bench", "name": "slot", "value": value, "version": 1})
        for event_id, _text, value in events
    ]


def worker(path: str, synchronous: str) -> None:
    """``--worker``: a store on ``path``; each stdin line is one append, answered by its time."""
    from convledger.sqlite import SqliteStore

    store = SqliteStore(path, synchronous=synchronous)
    for line in sys.stdin:
        conversation_id, events = json.loads(line)
        drafts = drafts_of([tuple(event) for event in events])
        start = time.perf_counter()
        store.append(conversation_id, drafts)
        print(time.perf_counter() - start, flush=True)
    store.close()


class Peer:
    """The ``peer`` contender: a :func:`worker` process on its own ``PYTHONPATH``."""

    name = "peer"

    def __init__(self, path: Path, synchronous: str, pythonpath: str) -> None:
        environment = dict(os.environ, PYTHONPATH=pythonpath)
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(path), "--synchronous", synchronous],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment)

    def timed(self, conversation_id: str, events: list[tuple[str, str, Any]]) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps([conversation_id, events]) + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def append(self, conversation_id: str, events: list[tuple[str, str, Any]]) -> None:
        self.timed(conversation_id, events)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


class Contender:
    """One design on its own file; :meth:`append` is one ledger transaction."""

    def __init__(self, name: str, path: Path, synchronous: str) -> None:
        self.name = name
        if name == "store":
            from convledger.sqlite import SqliteStore

            self.store = SqliteStore(path, synchronous=synchronous)
            return
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA page_size = 16384")
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute(f"PRAGMA synchronous = {synchronous}")
        extra = "" if name in ("raw", "lagging") else ", search_rowid INTEGER NOT NULL"
        statements = [EVENTS.format(extra=extra), *BASE]
        if name == "contentless":
            statements.append("CREATE INDEX events_by_search_rowid ON events (search_rowid)")
        if name == "py_noscope":
            statements.append(
                "CREATE VIRTUAL TABLE events_fts USING fts5(body, conversation_id UNINDEXED,"
                " seq UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')"
            )
        elif name == "contentless":
            statements.append(
                "CREATE VIRTUAL TABLE events_fts USING fts5(body, scope, content = '',"
                " columnsize = 0, tokenize = 'unicode61 remove_diacritics 2')"
            )
        elif name == "detail_column":
            statements.append(FTS.format(options=", detail = column"))
        elif name not in ("raw", "lagging"):
            statements.append(FTS.format(options=""))
        if name == "trigger":
            statements.append(TRIGGER)
        for statement in statements:
            self.db.execute(statement)
        self.insert = self._inserter()

    def _inserter(self) -> Callable[[list[tuple[Any, ...]], list[Any]], None]:
        db = self.db
        name = self.name
        plain = f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        with_rowid = (
            f"INSERT INTO events ({COLUMNS}, search_rowid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        if name in ("raw", "lagging"):
            return lambda rows, payloads: db.executemany(plain, rows) and None
        if name == "trigger":
            sql = (
                f"INSERT INTO events ({COLUMNS}, search_rowid) VALUES (?, ?, ?, ?, ?, ?, ?, ?,"
                " (SELECT coalesce(max(rowid), 0) + 1 FROM events_fts))"
            )
            return lambda rows, payloads: db.executemany(sql, rows) and None
        if name == "py":
            fts = (
                "INSERT INTO events_fts (rowid, body, scope, conversation_id, seq)"
                " VALUES (?, ?, ?, ?, ?)"
            )
            top = "SELECT coalesce(max(rowid), 0) + 1 FROM events_fts"

            def insert_py(rows: list[tuple[Any, ...]], payloads: list[Any]) -> None:
                first = db.execute(top).fetchone()[0]
                db.executemany(with_rowid, [(*row, n) for n, row in enumerate(rows, first)])
                db.executemany(fts, [
                    (n, body_of(payload), scope_of(row[0]), row[0], row[1])
                    for n, (row, payload) in enumerate(zip(rows, payloads, strict=True), first)
                ])

            return insert_py
        if name == "contentless":
            fts = "INSERT INTO events_fts (rowid, body, scope) VALUES (?, ?, ?)"
            top = "SELECT coalesce(max(search_rowid), 0) FROM events"

            def insert_contentless(rows: list[tuple[Any, ...]], payloads: list[Any]) -> None:
                rowid = db.execute(top).fetchone()[0]
                for row, payload in zip(rows, payloads, strict=True):
                    rowid += 1
                    db.execute(fts, (rowid, body_of(payload), scope_of(row[0])))
                    db.execute(with_rowid, (*row, rowid))

            return insert_contentless
        if name == "py_noscope":
            fts = "INSERT INTO events_fts (body, conversation_id, seq) VALUES (?, ?, ?)"

            def insert_noscope(rows: list[tuple[Any, ...]], payloads: list[Any]) -> None:
                for row, payload in zip(rows, payloads, strict=True):
                    cursor = db.execute(fts, (body_of(payload), row[0], row[1]))
                    db.execute(with_rowid, (*row, cursor.lastrowid))

            return insert_noscope
        fts = "INSERT INTO events_fts (body, scope, conversation_id, seq) VALUES (?, ?, ?, ?)"

        def insert_lastrowid(rows: list[tuple[Any, ...]], payloads: list[Any]) -> None:
            for row, payload in zip(rows, payloads, strict=True):
                cursor = db.execute(fts, (body_of(payload), scope_of(row[0]), row[0], row[1]))
                db.execute(with_rowid, (*row, cursor.lastrowid))

        return insert_lastrowid

    def append(self, conversation_id: str, events: list[tuple[str, str, Any]]) -> None:
        if self.name == "store":
            self.store.append(conversation_id, drafts_of(events))
            return
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        found = db.execute(READ_HEAD, (conversation_id,)).fetchone()
        head = 0 if found is None else found[0]
        rows = []
        payloads = []
        for offset, (event_id, text, payload) in enumerate(events, start=1):
            rows.append((conversation_id, head + offset, event_id, "bench/event", 1,
                         "2026-01-01T00:00:00.000Z", text, 0))
            payloads.append(payload)
        self.insert(rows, payloads)
        db.execute(UPSERT_HEAD, (conversation_id, head + len(events)))
        db.execute("COMMIT")


def payload(rng: random.Random) -> Any:
    """About 800 bytes of JSON: a few string members and a list of short strings."""
    return {
        "actor": "bench",
        "role": rng.choice(("user", "assistant", "tool")),
        "text": " ".join(rng.choice(WORDS) for _ in range(60)),
        "parts": [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(5)],
        "count": rng.randrange(1000),
        "flag": True,
    }


def events(rng: random.Random, count: int, prefix: str) -> list[tuple[str, str, Any]]:
    made = []
    for _ in range(count):
        value = payload(rng)
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        made.append((f"{prefix}-{rng.getrandbits(64):016x}", text, value))
    return made


NAMES = ("raw", "trigger", "py", "py_lastrowid", "py_noscope", "contentless", "detail_column",
         "lagging", "store")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synchronous", default="FULL", choices=("NORMAL", "FULL"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100, help="transactions per round")
    parser.add_argument("--batch", type=int, default=1, help="events per transaction")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--preload", type=int, default=100, help="events per conversation")
    parser.add_argument("--only", nargs="*", default=list(NAMES))
    parser.add_argument("--peer", help="PYTHONPATH of the peer contender (another checkout)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.synchronous)
        return
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        contenders: list[Any] = [Contender(name, Path(tmp) / f"{name}.db", args.synchronous)
                                 for name in args.only if name != "peer"]
        if args.peer:
            contenders.append(Peer(Path(tmp) / "peer.db", args.synchronous, args.peer))
        for number in range(args.conversations):
            batch = events(rng, args.preload, f"pre{number}")
            for contender in contenders:
                contender.append(f"conv-{number:05d}", batch)
        # Each call runs every contender once, in an order that rotates call by call, so a
        # burst of load hits all of them alike; a contender's figure is its median call.
        calls: dict[str, list[float]] = {c.name: [] for c in contenders}
        medians: dict[str, list[float]] = {c.name: [] for c in contenders}
        for turn in range(args.rounds):
            work = [(f"conv-{rng.randrange(args.conversations):05d}",
                     events(rng, args.batch, f"r{turn}c{call}"))
                    for call in range(args.calls)]
            taken: dict[str, list[float]] = {c.name: [] for c in contenders}
            for number, (conversation_id, batch) in enumerate(work):
                shift = (turn * args.calls + number) % len(contenders)
                for contender in contenders[shift:] + contenders[:shift]:
                    if isinstance(contender, Peer):
                        taken["peer"].append(contender.timed(conversation_id, batch))
                        continue
                    start = time.perf_counter()
                    contender.append(conversation_id, batch)
                    taken[contender.name].append(time.perf_counter() - start)
            for name, values in taken.items():
                calls[name].extend(values)
                medians[name].append(statistics.median(values))
        print(f"synchronous={args.synchronous} batch={args.batch} rounds={args.rounds}"
              f" calls={args.calls} preload={args.conversations}x{args.preload}")
        print(f"{'contender':<14} {'us/tx':>9} {'ratio':>7} {'rounds min..max':>16}")
        floor = statistics.median(calls["raw"]) if "raw" in calls else None
        for name, values in calls.items():
            us = statistics.median(values) * 1e6
            if floor is None:
                print(f"{name:<14} {us:9.0f}")
                continue
            per_round = [raw / mine for raw, mine in zip(medians["raw"], medians[name],
                                                          strict=True)]
            print(f"{name:<14} {us:9.0f} {floor / statistics.median(values):7.2f}"
                  f" {min(per_round):8.2f}..{max(per_round):5.2f}")
        for contender in contenders:
            if isinstance(contender, Peer):
                contender.close()
            elif contender.name == "store":
                contender.store.close()
            else:
                contender.db.close()


if __name__ == "__main__":
    main()
