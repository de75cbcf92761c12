"""The second floor: the minimal ledger transaction, the physical limit of the ledger's shape.

The raw replay (:mod:`convledger_bench.floor`) runs the store's OWN statements
on the store's OWN schema, so the cost of that schema (the search index and
its trigger, the extra columns and indexes) is invisible to its ratio. This
floor runs the least a ledger must do on the least schema that can hold it,
with the same durability as the store's default (WAL, ``synchronous=FULL``):

* a single append or a batch: ``BEGIN IMMEDIATE``; read the head; insert the
  event(s) (one ``executemany`` for a batch); upsert the head; ``COMMIT``;
* a transition: the same for its one event, plus its normalized rows (the run
  row upserted, and for an accept the admission row);
* an import: ``BEGIN IMMEDIATE``; check the conversation is absent; insert
  its 1000 events; insert the head; ``COMMIT``;
* a read page: ``SELECT payload ... ORDER BY seq LIMIT n`` and ``json.loads``
  of each payload.

Schema: ``events`` keyed by ``(conversation_id, seq)`` with ``event_id``
unique, ``heads`` and ``runs`` / ``admissions`` keyed as the store keys them.
The events are the benchmark's own (the same drafts, eventIds and canonical
payload text the store writes, ~600-800 B), pre-serialized before timing, as
the replay's parameters are.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from convledger import canonical
from convledger_bench.workloads import (
    PER_CONVERSATION,
    conversations_of,
    draft,
    fill_plan,
    plan_transitions,
)

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS events (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL,"
    " event_id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, occurred_at TEXT NOT NULL,"
    " payload TEXT NOT NULL, PRIMARY KEY (conversation_id, seq))",
    "CREATE TABLE IF NOT EXISTS heads (conversation_id TEXT NOT NULL PRIMARY KEY,"
    " head INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS runs (conversation_id TEXT NOT NULL, run_id TEXT NOT NULL,"
    " state TEXT NOT NULL, record TEXT NOT NULL, PRIMARY KEY (conversation_id, run_id))"
    " WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS admissions (conversation_id TEXT NOT NULL,"
    " idempotency_key TEXT NOT NULL, run_id TEXT NOT NULL,"
    " PRIMARY KEY (conversation_id, idempotency_key)) WITHOUT ROWID",
)
HEAD = "SELECT head FROM heads WHERE conversation_id = ?"
INSERT_EVENT = (
    "INSERT INTO events (conversation_id, seq, event_id, kind, occurred_at, payload)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
UPSERT_HEAD = (
    "INSERT INTO heads (conversation_id, head) VALUES (?, ?)"
    " ON CONFLICT (conversation_id) DO UPDATE SET head = excluded.head"
)
UPSERT_RUN = (
    "INSERT INTO runs (conversation_id, run_id, state, record) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (conversation_id, run_id) DO UPDATE SET state = excluded.state,"
    " record = excluded.record"
)
INSERT_ADMISSION = (
    "INSERT INTO admissions (conversation_id, idempotency_key, run_id) VALUES (?, ?, ?)"
)
READ_PAGE = (
    "SELECT payload FROM events WHERE conversation_id = ? AND seq >= ? ORDER BY seq LIMIT ?"
)

EventRow = tuple[str, str, str, str]
"""(eventId, kind, occurredAt, canonical payload text): one event, pre-serialized."""
MinimalOperation = Callable[["MinimalLedger"], object]


def event_row(index: int) -> EventRow:
    """The pre-serialized row of the benchmark's ``index``-th draft."""
    made = draft(index)
    return (made.event_id, made.kind, made.occurred_at, canonical.encode(made.payload).decode())


class MinimalLedger:
    """A bare ``sqlite3`` connection on the minimal schema, WAL with the store's durability."""

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        self.path = path
        self.connection = sqlite3.connect(path, timeout=5.0, isolation_level=None,
                                          check_same_thread=False)
        self.connection.execute("PRAGMA journal_mode = WAL")
        self.connection.execute(f"PRAGMA synchronous = {synchronous}")
        for statement in SCHEMA:
            self.connection.execute(statement)

    def head(self, conversation_id: str) -> int:
        """The conversation's last seq (0 when it has none)."""
        found = self.connection.execute(HEAD, (conversation_id,)).fetchone()
        return 0 if found is None else int(found[0])

    def append(self, conversation_id: str, events: Sequence[EventRow]) -> int:
        """One transaction: read the head, insert the events, upsert the head; the new head."""
        connection = self.connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            found = connection.execute(HEAD, (conversation_id,)).fetchone()
            head = 0 if found is None else found[0]
            if len(events) == 1:
                connection.execute(INSERT_EVENT, (conversation_id, head + 1, *events[0]))
            else:
                connection.executemany(INSERT_EVENT, [
                    (conversation_id, head + offset, *row)
                    for offset, row in enumerate(events, start=1)
                ])
            head += len(events)
            connection.execute(UPSERT_HEAD, (conversation_id, head))
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        return int(head)

    def transition(
        self,
        conversation_id: str,
        event: EventRow,
        run: tuple[str, str, str],
        admission: tuple[str, str] | None,
    ) -> int:
        """One transition: its event and head as :meth:`append`, its run row, its admission."""
        connection = self.connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            found = connection.execute(HEAD, (conversation_id,)).fetchone()
            head = (0 if found is None else found[0]) + 1
            connection.execute(INSERT_EVENT, (conversation_id, head, *event))
            connection.execute(UPSERT_RUN, (conversation_id, *run))
            if admission is not None:
                connection.execute(INSERT_ADMISSION, (conversation_id, *admission))
            connection.execute(UPSERT_HEAD, (conversation_id, head))
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        return int(head)

    def import_conversation(self, conversation_id: str, events: Sequence[EventRow]) -> None:
        """One transaction: refuse a conversation that exists, insert every event and the head."""
        connection = self.connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            if connection.execute(HEAD, (conversation_id,)).fetchone() is not None:
                raise ValueError(f"conversation {conversation_id!r} exists")
            connection.executemany(INSERT_EVENT, [
                (conversation_id, seq, *row) for seq, row in enumerate(events, start=1)
            ])
            connection.execute(UPSERT_HEAD, (conversation_id, len(events)))
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def read(self, conversation_id: str, from_seq: int, limit: int) -> list[object]:
        """The decoded payloads of up to ``limit`` events from ``from_seq``."""
        found = self.connection.execute(READ_PAGE, (conversation_id, from_seq, limit))
        return [json.loads(row[0]) for row in found]

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


def build_minimal_file(path: Path, size: int) -> None:
    """The minimal ledger of ``size`` events: the benchmark ledger's events, in the same order."""
    ledger = MinimalLedger(path, synchronous="NORMAL")
    connection = ledger.connection
    try:
        heads: dict[str, int] = {}
        pending: list[tuple[object, ...]] = []

        def flush() -> None:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany(INSERT_EVENT, pending)
            connection.executemany(UPSERT_HEAD, list(heads.items()))
            connection.execute("COMMIT")
            pending.clear()

        for conversation_id, indexes in fill_plan(size):
            for index in indexes:
                seq = heads.get(conversation_id, 0) + 1
                heads[conversation_id] = seq
                pending.append((conversation_id, seq, *event_row(index)))
            if len(pending) >= 5000:
                flush()
        if pending:
            flush()
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        ledger.close()


def minimal_append_operations(
    size: int, batch: int, count: int, *, base: int
) -> list[MinimalOperation]:
    """The minimal twin of :func:`~convledger_bench.workloads.append_operations`: same events."""
    conversations = conversations_of(size)
    operations: list[MinimalOperation] = []
    for turn in range(count):
        first = base + turn * batch
        events = [event_row(index) for index in range(first, first + batch)]
        conversation_id = f"conv-{turn % conversations:06d}"
        operations.append(
            lambda ledger, c=conversation_id, e=events: ledger.append(c, e)  # type: ignore[misc]
        )
    return operations


def minimal_transition_operations(count: int, *, base: int = 0) -> list[MinimalOperation]:
    """The minimal twin of ``transition_operations``: each transition's event and rows."""
    operations: list[MinimalOperation] = []
    for planned in plan_transitions(count, base=base):
        envelope = planned.envelope
        event: EventRow = (envelope.event_id, envelope.kind, envelope.occurred_at,
                           canonical.encode(envelope.payload).decode())
        run = (planned.run.run_id, planned.run.state.value,
               canonical.encode(planned.run.to_json()).decode())
        operations.append(
            lambda ledger, c=planned.conversation_id, e=event, r=run, a=planned.admission:
            ledger.transition(c, e, r, a)  # type: ignore[misc]
        )
    return operations


def minimal_archive_operations(count: int, *, base: int) -> list[MinimalOperation]:
    """The minimal twin of ``archive_operations``: the same 1000 events per conversation."""
    operations: list[MinimalOperation] = []
    for number in range(count):
        conversation_id = f"imported-{base + number:06d}"
        first = base + number * PER_CONVERSATION
        events = [event_row(index) for index in range(first, first + PER_CONVERSATION)]
        operations.append(
            lambda ledger, c=conversation_id, e=events:  # type: ignore[misc]
            ledger.import_conversation(c, e)
        )
    return operations
