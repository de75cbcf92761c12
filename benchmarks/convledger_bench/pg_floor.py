"""The PostgreSQL store against raw psycopg replaying the store's own statements (issue 15).

A :class:`PgBench` keeps, per ledger size, a *template* schema filled row for
row as the store fills it (``rows.event_row`` of the envelopes ``append``
would place, many per transaction) and clones it, so the store, its floor
and a recording store all start from identical schemas:

* the **recording store** runs each planned operation first, untimed, on a
  connection that records every statement and its parameters
  (:class:`RecordingConnection`);
* the **store** (a plain :class:`PostgresStore`) runs the same operation;
* the **floor** is a bare psycopg connection that replays the recorded
  statements of that operation, fetching what they return: what a store
  cannot avoid doing, without validation, encoding or decoding.

Store and floor run interleaved (``measure.interleave``), one operation each
per round, so the machine's load hits both; the ratio is floor over store.
Reads compare a page of decoded envelopes against the same keyset fetch plus
``json.loads`` of each payload. Every schema is dropped by :meth:`PgBench.close`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from convledger.envelope import Envelope
from convledger.postgres import PostgresStore, rows
from convledger.postgres.factories import drop_schema
from convledger_bench.measure import Counter, Figure, Plan, Runner, figure, interleave
from convledger_bench.workloads import (
    append_operations,
    conversation_name,
    conversations_of,
    draft,
    fill_plan,
    transition_operations,
)

Statement = tuple[str, Any, Any]
"""("execute" | "executemany", sql, parameters) as the store sent it."""


class _RecordingCursor:
    def __init__(self, inner: Any, log: list[Statement]) -> None:
        self._inner = inner
        self._log = log

    def __enter__(self) -> _RecordingCursor:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.__exit__(*exc)

    def executemany(self, sql: Any, parameters: Any) -> None:
        materialized = list(parameters)
        self._log.append(("executemany", sql, materialized))
        self._inner.executemany(sql, materialized)

    def execute(self, sql: Any, parameters: Any = None) -> Any:
        self._log.append(("execute", sql, parameters))
        return self._inner.execute(sql, parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RecordingConnection:
    """A psycopg connection that records every statement sent through it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.log: list[Statement] = []

    def execute(self, sql: Any, parameters: Any = None) -> Any:
        self.log.append(("execute", sql, parameters))
        return self._inner.execute(sql, parameters)

    def cursor(self) -> _RecordingCursor:
        return _RecordingCursor(self._inner.cursor(), self.log)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def record(store: PostgresStore) -> RecordingConnection:
    """Make ``store`` send its statements through a :class:`RecordingConnection`."""
    with store._lock:
        recording = RecordingConnection(store._connection)
        store._connection = recording  # type: ignore[assignment]
    return recording


def replay(connection: Any, statements: Sequence[Statement]) -> None:
    """Run recorded statements on a bare connection, fetching every result."""
    for how, sql, parameters in statements:
        if how == "executemany":
            with connection.cursor() as cursor:
                cursor.executemany(sql, parameters)
            continue
        cursor = connection.execute(sql, parameters)
        if cursor.description is not None:
            cursor.fetchall()


def _connect(dsn: str, schema: str) -> Any:
    import psycopg

    connection = psycopg.connect(dsn, autocommit=True)
    connection.execute(psycopg.sql.SQL("SET search_path TO {}").format(
        psycopg.sql.Identifier(schema)))
    return connection


@attrs.define
class PgBench:
    """Template schemas by size, their clones, and the stores on them."""

    dsn: str
    plan: Plan
    prefix: str = attrs.Factory(lambda: f"convledger_bench_{uuid.uuid4().hex[:8]}")
    schemas: list[str] = attrs.Factory(list)
    stores: list[PostgresStore] = attrs.Factory(list)
    connections: list[Any] = attrs.Factory(list)
    templates: dict[int, str] = attrs.Factory(dict)
    bases: Any = attrs.Factory(lambda: iter(range(10**8, 10**12, 10**7)))

    def _store(self, schema: str) -> PostgresStore:
        if schema not in self.schemas:
            self.schemas.append(schema)
        store = PostgresStore(self.dsn, schema=schema)
        self.stores.append(store)
        return store

    def template(self, size: int) -> str:
        """The schema of ``size`` events, filled as :func:`workloads.fill_plan` appends them."""
        if size not in self.templates:
            schema = f"{self.prefix}_t{size}"
            self._store(schema)
            connection = _connect(self.dsn, schema)
            self.connections.append(connection)
            heads: dict[str, int] = {}
            pending: list[rows.Row] = []
            for conversation_id, indexes in fill_plan(size):
                for index in indexes:
                    seq = heads.get(conversation_id, 0) + 1
                    heads[conversation_id] = seq
                    pending.append(rows.event_row(
                        Envelope.from_draft(draft(index), conversation_id, seq)))
                if len(pending) >= 5000:
                    _insert(connection, pending)
                    pending = []
            if pending:
                _insert(connection, pending)
            with connection.cursor() as cursor:
                cursor.executemany(rows.LOCK_CONVERSATION,
                                   [(rows.key(name),) for name in heads])
            connection.execute("ANALYZE")
            self.templates[size] = schema
        return self.templates[size]

    def clone(self, size: int, role: str) -> str:
        """A new schema holding the template's rows, analyzed."""
        source = self.template(size)
        schema = f"{self.prefix}_{role}{size}_{len(self.schemas)}"
        self._store(schema)
        connection = _connect(self.dsn, schema)
        self.connections.append(connection)
        for table in ("events", "conversations"):
            connection.execute(f"INSERT INTO {table} SELECT * FROM {source}.{table}")
        connection.execute("ANALYZE")
        return schema

    def reader(self, size: int) -> PostgresStore:
        """A store on the template (reads only)."""
        return self._store(self.template(size))

    def base(self) -> int:
        """A fresh range of draft indexes."""
        return int(next(self.bases))

    def close(self) -> None:
        """Close every store and connection; drop every schema."""
        for store in self.stores:
            store.close()
        for connection in self.connections:
            connection.close()
        for schema in self.schemas:
            drop_schema(self.dsn, schema)


def _insert(connection: Any, pending: list[rows.Row]) -> None:
    connection.execute("BEGIN")
    with connection.cursor() as cursor:
        cursor.executemany(rows.INSERT_EVENT, pending)
    connection.execute("COMMIT")


Operation = Callable[[Any], object]


def write_figure(bench: PgBench, size: int, name: str, rounds: int, *,
                 runner: Runner | None = None, warmup: int = 3) -> Figure:
    """``postgres.append.{single,batch100}`` or ``postgres.transition``: store against replay."""
    count = rounds + warmup
    base = bench.base()
    operations: list[Operation]
    if name == "transition":
        operations = list(transition_operations(count, base=base))
        events = 1
    else:
        batch = {"single": 1, "batch100": 100}[name]
        operations = list(append_operations(size, batch, count, base=base))
        events = batch
    recorder = bench._store(bench.clone(size, "rec"))
    store = bench._store(bench.clone(size, "store"))
    floor_schema = bench.clone(size, "floor")
    floor = _connect(bench.dsn, floor_schema)
    bench.connections.append(floor)
    recording = record(recorder)
    logs: list[list[Statement]] = []
    for operation in operations:
        recording.log = []
        operation(recorder)
        logs.append(recording.log)
    turns = {"store": Counter(), "floor": Counter()}
    samples = interleave({
        "store": lambda: operations[turns["store"].next()](store),
        "floor": lambda: replay(floor, logs[turns["floor"].next()]),
    }, rounds=rounds, warmup=warmup, runner=runner)
    figure_id = "postgres.transition" if name == "transition" else f"postgres.append.{name}"
    return figure(f"{figure_id}@{size:.0e}",
                  f"PostgresStore {name} against psycopg replaying its statements",
                  samples, events=events)


def read_figure(bench: PgBench, size: int, page: int, rounds: int, *,
                runner: Runner | None = None, warmup: int = 3) -> Figure:
    """``postgres.read.page{page}``: decoded envelopes against the fetch plus json.loads."""
    store = bench.reader(size)
    floor = _connect(bench.dsn, bench.template(size))
    bench.connections.append(floor)
    windows = _windows(size, page, rounds + warmup)
    turns = {"store": Counter(), "floor": Counter()}

    def store_read() -> None:
        conversation_id, start = windows[turns["store"].next()]
        store.read(conversation_id, from_seq=start, limit=page)

    def floor_read() -> None:
        conversation_id, start = windows[turns["floor"].next()]
        found = floor.execute(rows.READ_WINDOW,
                              (rows.key(conversation_id), start, rows.MAX_SEQ, page)).fetchall()
        for row in found:
            json.loads(row[6])

    samples = interleave({"store": store_read, "floor": floor_read}, rounds=rounds,
                         warmup=warmup, runner=runner)
    return figure(f"postgres.read.page{page}@{size:.0e}",
                  f"PostgresStore page of {page} against the fetch plus json.loads",
                  samples, events=page)


def _windows(size: int, page: int, count: int) -> list[tuple[str, int]]:
    conversations = conversations_of(size)
    per = size // conversations
    return [(conversation_name(turn * 7 % conversations), 1 + (turn * page * 3) % (per - page))
            for turn in range(count)]


def scaling_figure(bench: PgBench, sizes: tuple[int, int], rounds: int, *,
                   runner: Runner | None = None, warmup: int = 3) -> Figure:
    """``postgres.read.scaling``: a page of 100 at the large size against the small one."""
    small, large = sizes
    stores = {"small": bench.reader(small), "large": bench.reader(large)}
    windows = {name: _windows(size, 100, rounds + warmup)
               for name, size in (("small", small), ("large", large))}
    turns = {"small": Counter(), "large": Counter()}

    def reading(name: str) -> Callable[[], None]:
        def call() -> None:
            conversation_id, start = windows[name][turns[name].next()]
            stores[name].read(conversation_id, from_seq=start, limit=100)

        return call

    samples = interleave({"large": reading("large"), "small": reading("small")},
                         rounds=rounds, warmup=warmup, runner=runner)
    return figure("postgres.read.scaling",
                  f"PostgresStore page of 100 at {large:.0e} over the same at {small:.0e}",
                  samples, events=100, store="large", floor="small")
