"""The raw-SQLite floor of write figures: recorded statements, replayed through bare ``sqlite3``.

The reference SQLite store runs an operation on a copy of the reference
ledger while :mod:`convledger_bench.recorder` logs its statements; a bare
connection on another copy then executes exactly those statements with
exactly those parameters (triggers included: the file's schema is the
store's own). :func:`paired` times the store under test against that replay.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from convledger.store import LedgerStore
from convledger_bench.measure import Counter, Runner, interleave
from convledger_bench.recorder import Statement, recording, recording_store
from convledger_bench.workloads import Operation, copy_ledger


def raw_connection(path: Path, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """A bare connection configured as the reference store configures its own (``opening.py``)."""
    connection = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    connection.execute(f"PRAGMA synchronous = {synchronous}")
    return connection


def replay(connection: sqlite3.Connection, statements: Sequence[Statement]) -> None:
    """Run recorded statements through bare ``sqlite3``, fetching every result as the store did."""
    for how, sql, parameters in statements:
        if how == "execute":
            connection.execute(sql, parameters).fetchall()
        else:
            connection.executemany(sql, parameters)


class Floor:
    """The raw floor of write figures: a recording reference store and a bare copy, in step.

    Both files start as copies of the same reference ledger. :meth:`record`
    runs operations on the reference store while its
    :class:`~convledger_bench.recorder.RecordingConnection` records, and
    returns each one's statements; :func:`paired` replays each exactly once on
    the bare copy, so the two files always hold the same rows and a later
    recording fits the bare file's state.
    """

    def __init__(self, reference: Path, work: Path) -> None:
        self.recorder_path = copy_ledger(reference, work / "floor-recording.sqlite")
        self.raw_path = copy_ledger(reference, work / "floor-raw.sqlite")
        self.store, self.recorder = recording_store(self.recorder_path)
        self.raw = raw_connection(self.raw_path)

    def record(self, operations: Sequence[Operation]) -> list[list[Statement]]:
        """The statements the reference store runs for each operation."""
        with recording(self.recorder) as recorder:
            logs = []
            for operation in operations:
                operation(self.store)
                logs.append(recorder.take())
        return logs

    def close(self) -> None:
        """Close both connections."""
        self.store.close()
        self.raw.close()


def paired(
    store: LedgerStore,
    floor: Floor,
    operations: Sequence[Operation],
    *,
    rounds: int,
    warmup: int,
    runner: Runner | None,
    others: Mapping[str, Callable[[], object]] | None = None,
) -> dict[str, list[float]]:
    """Store operation ``i`` against the raw replay of its recorded statements, interleaved.

    ``operations`` must number ``rounds + warmup``: each runs once on each side.
    ``others`` (the minimal floor, the peers) run in the same rotation.
    """
    logs = floor.record(operations)
    store_turn, raw_turn = Counter(), Counter()
    return interleave(
        {
            "store": lambda: operations[store_turn.next()](store),
            "floor": lambda: replay(floor.raw, logs[raw_turn.next()]),
            **(others or {}),
        },
        rounds=rounds,
        warmup=warmup,
        runner=runner,
    )
