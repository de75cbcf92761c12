"""Transitions, purge and runtime imports inside one SQLite transaction (SQL-052 .. SQL-056).

Every function here runs on the connection of a transaction its caller
(``store.py``) has begun with ``BEGIN IMMEDIATE`` and commits or rolls back;
nothing here controls a transaction.

A transition reads what the rules ask through :class:`SqlRuntimeView`,
decides, and when the decision is applied writes in this order, calling the
fault probe after each write (TRN-004): the head (compare-and-swap, label
``head``), each record (``run``, ``admission``, ``message``), the event
(``event``). The compare-and-swap is decided from the ``heads`` row read in
the transaction, before the write (the view's read, which the rules made) and
after it (the row the write gives back), never from a row count (SQL-053).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError, PurgedError
from convledger.runtime.operations import RecoveryCursor
from convledger.runtime.records import Admission, Message, Run
from convledger.runtime.rules import decide
from convledger.runtime.state import RuntimeState, Snapshot
from convledger.runtime.transitions import Transition
from convledger.runtime.view import HeadWrite, Outcome, Status, refuse_stale_swap
from convledger.sqlite import runtime_view as sql
from convledger.sqlite.runtime_view import SqlRuntimeView, parse_record

FaultProbe = Callable[[str], None]
Appender = Callable[[sqlite3.Connection, str, tuple[EventDraft, ...]], tuple[Envelope, ...]]

PURGE_TABLES = (
    ("events", "conversation_id"),
    ("heads", "conversation_id"),
    ("runs", "conversation_id"),
    ("admissions", "conversation_id"),
    ("messages", "conversation_id"),
    ("projections", "conversation_id"),
    ("spills", "conversation_id"),  # SPL-032
    ("schedules", "conversation_id"),
)
"""SQL-056: every row a purge deletes, by table and the column naming the conversation."""


def is_purged(connection: sqlite3.Connection, conversation_id: str) -> bool:
    """Whether the conversation has a tombstone (TRN-092), read in the caller's transaction."""
    return connection.execute(sql.PURGED, (conversation_id,)).fetchone() is not None


def refuse_purged(connection: sqlite3.Connection, conversation_id: str) -> None:
    """SQL-052, TRN-092, TRN-095: the tombstone, read inside the write transaction."""
    if connection.execute(sql.PURGED, (conversation_id,)).fetchone() is not None:
        raise PurgedError.of(conversation_id)


def transit(
    connection: sqlite3.Connection,
    conversation_id: str,
    transition: Transition,
    draft: EventDraft,
    *,
    append: Appender,
    probe: FaultProbe,
) -> Outcome:
    """SQL-053, DUR-004: decide, and if applied write every row and the event in one transaction."""
    view = SqlRuntimeView.opened(connection, conversation_id)  # SQL-052: refuses a tombstone
    decision = decide(view, conversation_id, transition, draft.occurred_at)
    if decision.status is not Status.APPLIED:
        return Outcome.of(decision)  # TRN-004: nothing written
    assert decision.head_write is not None
    # SQL-053: the swap is decided from the heads row the view read in this transaction.
    swap_head(connection, decision.head_write, draft.occurred_at, read=view.head_read)
    probe("head")
    for record in decision.writes:
        write_record(connection, record)
        probe(type(record).__name__.lower())
    placed = append(connection, conversation_id, (draft,))
    probe("event")
    return Outcome.of(decision, placed[0])


def _stored_head(connection: sqlite3.Connection, conversation_id: str) -> tuple[int, str] | None:
    found = connection.execute(sql.HEAD_VERSION, (conversation_id,)).fetchone()
    return None if found is None else (int(found[0]), str(found[1]))


def swap_head(
    connection: sqlite3.Connection,
    write: HeadWrite,
    updated_at: str,
    *,
    read: tuple[int | None] | None = None,
) -> None:
    """TRN-003, SQL-053: move the head from ``write.expected``, proven by the row it wrote.

    ``read`` is what the caller read of the ``heads`` row in this transaction
    (:attr:`SqlRuntimeView.head_read`: its version, or ``(None,)`` for no row);
    without it the row is read here. The insert or update gives back the row as
    written (``RETURNING``): an update that found no row at the expected
    version gives back nothing and is refused, never decided from a row count.
    """
    conversation_id = write.head.conversation_id
    if read is None:
        before = _stored_head(connection, conversation_id)
        read = (None if before is None else before[0],)
    version = read[0]
    refuse_stale_swap(version, write)
    row = sql.head_row(write.head, updated_at)
    if version is None:
        written = connection.execute(sql.INSERT_HEAD, row).fetchall()
    else:
        written = connection.execute(
            sql.UPDATE_HEAD, (row[1], row[2], row[3], row[0], write.expected)
        ).fetchall()
    if written != [(row[1], row[3])]:
        stored = _stored_head(connection, conversation_id)
        raise ConflictError(
            f"the head of {conversation_id!r} did not move to {row[1]}",
            requirement="SQL-053",
            actual=0 if stored is None else stored[0],
        )


def write_record(connection: sqlite3.Connection, record: Run | Admission | Message) -> None:
    """Insert or replace one record's row; its columns mirror the record (SQL-054)."""
    if isinstance(record, Run):
        connection.execute(sql.UPSERT_RUN, sql.run_row(record))
    elif isinstance(record, Admission):
        connection.execute(sql.UPSERT_ADMISSION, sql.admission_row(record))
    else:
        connection.execute(sql.UPSERT_MESSAGE, sql.message_row(record))


def write_state(connection: sqlite3.Connection, state: RuntimeState, updated_at: str) -> None:
    """TRN-105: the rows of an imported ``runtime`` companion (the caller checked it)."""
    if state.head_record is None:
        return
    swap_head(connection, HeadWrite(state.head_record, 0), updated_at)
    records: list[Run | Admission | Message] = [*state.runs.values()]
    records.extend(state.admissions.values())
    records.extend(state.messages.values())
    for record in records:
        write_record(connection, record)


def load_run(connection: sqlite3.Connection, conversation_id: str, run_id: str) -> Run | None:
    """TRN-080: one statement on the primary key of ``runs``."""
    return SqlRuntimeView(connection, conversation_id).run(run_id)


def active_runs(connection: sqlite3.Connection, conversation_id: str) -> list[Run]:
    """TRN-081: one statement on ``runs_active``."""
    return list(SqlRuntimeView(connection, conversation_id).active_runs())


def snapshot(connection: sqlite3.Connection, conversation_id: str) -> Snapshot | None:
    """TRN-082: head, active runs, history; the caller holds one read transaction."""
    view = SqlRuntimeView(connection, conversation_id)
    head = view.head()
    if head is None:
        return None
    return Snapshot(head, tuple(view.active_runs()), tuple(view.history()))


def scan_recoverable(
    connection: sqlite3.Connection, after: RecoveryCursor | None, limit: int
) -> list[Run]:
    """TRN-083: a keyset page over ``runs_recoverable`` by (conversation_id, ordinal).

    ``conversation_id`` compares with the BINARY collation, the order of the
    ids' UTF-8 bytes, which is the order of their code points (TRN-085).
    """
    start = sql.FIRST_CURSOR if after is None else (after.conversation_id, after.ordinal)
    found = connection.execute(sql.RECOVERABLE_AFTER, (*start, limit)).fetchall()
    return [parse_record(row[0], Run.from_json, "runs row") for row in found]


def purge(connection: sqlite3.Connection, conversation_id: str, purged_at: str) -> bool:
    """SQL-056, TRN-090, TRN-091: delete and tombstone; refused while runs are active."""
    if connection.execute(sql.PURGED, (conversation_id,)).fetchone() is not None:
        return False
    if SqlRuntimeView(connection, conversation_id).active_runs():
        raise ConflictError(
            f"conversation {conversation_id!r} has active runs", requirement="TRN-091"
        )
    # TRN-094: reads then answer as if it never existed; TRN-096: its eventIds are free again.
    for table, column in PURGE_TABLES:
        connection.execute(f"DELETE FROM {table} WHERE {column} = ?", (conversation_id,))
    connection.execute(
        "INSERT INTO purged (conversation_id, purged_at) VALUES (?, ?)",
        (conversation_id, purged_at),
    )
    return True

