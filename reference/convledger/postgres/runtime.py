"""Transitions, purge and runtime imports inside one PostgreSQL transaction (PGS-040 .. PGS-045).

Every function here runs on the connection of a transaction its caller
(``store.py``) has begun and commits or rolls back; nothing here controls a
transaction. Every write has locked the conversation's row of
``conversations`` first (:func:`convledger.postgres.transaction.lock`), so the
reads below see every write committed before it and none can commit beside
it (PGS-010).

A transition reads what the rules ask through :class:`PgRuntimeView`,
decides, and when the decision is applied writes in this order, calling the
fault probe after each write (TRN-004): the head (compare-and-swap, label
``head``), each record (``run``, ``admission``, ``message``), the event
(``event``). The compare-and-swap is decided from the ``heads`` row read in
the transaction, before and after the write, never from a row count (PGS-040).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from convledger.envelope import Envelope, EventDraft
from convledger.errors import ConflictError, PurgedError
from convledger.postgres import runtime_view as sql
from convledger.postgres.rows import key
from convledger.postgres.runtime_view import PgRuntimeView, parse_record
from convledger.runtime.operations import RecoveryCursor
from convledger.runtime.records import Admission, Message, Run
from convledger.runtime.rules import decide
from convledger.runtime.state import RuntimeState, Snapshot
from convledger.runtime.transitions import Transition
from convledger.runtime.view import HeadWrite, Outcome, Status, refuse_stale_swap

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

FaultProbe = Callable[[str], None]
Appender = Callable[["Connection", str, tuple[EventDraft, ...]], tuple[Envelope, ...]]

PURGE_TABLES = (
    ("events", "conversation_id"),
    ("heads", "conversation_id"),
    ("runs", "conversation_id"),
    ("admissions", "conversation_id"),
    ("messages", "conversation_id"),
    ("schedules", "conversation_id"),
    ("projections", "conversation_id"),
    ("spills", "conversation_id"),
    ("search_words", "conversation_id"),
    ("conversations", "conversation_id"),
)
"""PGS-044: every row a purge deletes, by table and the column naming the conversation."""


def is_purged(connection: Connection, conversation_id: str) -> bool:
    """Whether the conversation has a tombstone (TRN-092), read in the caller's transaction."""
    return connection.execute(sql.PURGED, (key(conversation_id),)).fetchone() is not None


def refuse_purged(connection: Connection, conversation_id: str) -> None:
    """PGS-041, TRN-092, TRN-095: the tombstone, read inside the write transaction."""
    if is_purged(connection, conversation_id):
        raise PurgedError.of(conversation_id)


def transit(
    connection: Connection,
    conversation_id: str,
    transition: Transition,
    draft: EventDraft,
    *,
    append: Appender,
    probe: FaultProbe,
) -> Outcome:
    """PGS-040: decide and, when applied, write every row and the event, in this transaction."""
    view = PgRuntimeView.opened(connection, conversation_id)  # PGS-041: refuses a tombstone
    decision = decide(view, conversation_id, transition, draft.occurred_at)
    if decision.status is not Status.APPLIED:
        return Outcome.of(decision)  # TRN-004: nothing written
    assert decision.head_write is not None
    # PGS-040: the swap is decided from the heads row the view read in this transaction.
    swap_head(connection, decision.head_write, draft.occurred_at, read=view.head_read)
    probe("head")
    for record in decision.writes:
        write_record(connection, record)
        probe(type(record).__name__.lower())
    placed = append(connection, conversation_id, (draft,))
    probe("event")
    return Outcome.of(decision, placed[0])


def _stored_head(connection: Connection, conversation_id: str) -> tuple[int, str] | None:
    found = connection.execute(sql.HEAD_VERSION, (key(conversation_id),)).fetchone()
    return None if found is None else (int(found[0]), str(found[1]))


def swap_head(
    connection: Connection,
    write: HeadWrite,
    updated_at: str,
    *,
    read: tuple[int | None] | None = None,
) -> None:
    """TRN-003, PGS-040: :func:`convledger.sqlite.runtime.swap_head` on PostgreSQL's rows.

    ``read`` is :attr:`PgRuntimeView.head_read`, or None to read the row here.
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
    if [tuple(found) for found in written] != [(row[1], row[3])]:
        after = _stored_head(connection, conversation_id)
        actual = 0 if after is None else after[0]
        raise ConflictError(
            f"the head of {conversation_id!r} did not move to {row[1]}",
            requirement="PGS-040",
            actual=actual,
        )


def write_record(connection: Connection, record: Run | Admission | Message) -> None:
    """Insert or replace one record's row; its columns mirror the record (PGS-042)."""
    if isinstance(record, Run):
        connection.execute(sql.UPSERT_RUN, sql.run_row(record))
    elif isinstance(record, Admission):
        connection.execute(sql.UPSERT_ADMISSION, sql.admission_row(record))
    else:
        connection.execute(sql.UPSERT_MESSAGE, sql.message_row(record))


def write_state(connection: Connection, state: RuntimeState, updated_at: str) -> None:
    """TRN-105: the rows of an imported ``runtime`` companion (the caller checked it)."""
    if state.head_record is None:
        return
    swap_head(connection, HeadWrite(state.head_record, 0), updated_at)
    records: list[Run | Admission | Message] = [*state.runs.values()]
    records.extend(state.admissions.values())
    records.extend(state.messages.values())
    for record in records:
        write_record(connection, record)


def load_run(connection: Connection, conversation_id: str, run_id: str) -> Run | None:
    """TRN-080: one statement on the primary key of ``runs``."""
    return PgRuntimeView(connection, conversation_id).run(run_id)


def active_runs(connection: Connection, conversation_id: str) -> list[Run]:
    """TRN-081: one statement on ``runs_active``."""
    return list(PgRuntimeView(connection, conversation_id).active_runs())


def snapshot(connection: Connection, conversation_id: str) -> Snapshot | None:
    """TRN-082: head, active runs, history; the caller holds one REPEATABLE READ snapshot."""
    view = PgRuntimeView(connection, conversation_id)
    head = view.head()
    if head is None:
        return None
    return Snapshot(head, tuple(view.active_runs()), tuple(view.history()))


def scan_recoverable(
    connection: Connection, after: RecoveryCursor | None, limit: int
) -> list[Run]:
    """TRN-083: a keyset page over ``runs_recoverable`` by (conversation_id, ordinal).

    ``conversation_id`` is ``bytea``: it compares as the ids' UTF-8 bytes, the
    order of their code points (TRN-085, PGS-003).
    """
    start = sql.FIRST_CURSOR if after is None else (key(after.conversation_id), after.ordinal)
    found = connection.execute(sql.RECOVERABLE_AFTER, (*start, limit)).fetchall()
    return [parse_record(row[0], Run.from_json, "runs row") for row in found]


def purge(connection: Connection, conversation_id: str, purged_at: str) -> bool:
    """PGS-044, TRN-090, TRN-091: delete and tombstone; refused while runs are active.

    The caller locked the conversation's row, so no write of it runs beside
    this one, and every later write finds the tombstone (TRN-095).
    """
    if is_purged(connection, conversation_id):
        return False
    if PgRuntimeView(connection, conversation_id).active_runs():
        raise ConflictError(
            f"conversation {conversation_id!r} has active runs", requirement="TRN-091"
        )
    # TRN-094: reads then answer as if it never existed; TRN-096: its eventIds are free again.
    for table, column in PURGE_TABLES:
        connection.execute(f"DELETE FROM {table} WHERE {column} = %s", (key(conversation_id),))
    connection.execute(
        "INSERT INTO purged (conversation_id, purged_at) VALUES (%s, %s)",
        (key(conversation_id), purged_at),
    )
    return True
