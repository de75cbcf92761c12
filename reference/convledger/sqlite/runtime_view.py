"""The runtime's operational rows in SQLite: bounded lookups and row writes (SQL-050 .. SQL-056).

:class:`SqlRuntimeView` answers every lookup of
:class:`~convledger.runtime.view.RuntimeView` with one statement that searches
a primary key or an index of the version 1 tables (SQL-055); none reads
``events`` (TRN-080). Each statement is a named constant in
:data:`RUNTIME_READS`, so a test can ask SQLite for its query plan.

The ``record`` column of each row holds the record of chapter TRN as
canonical JSON and the other columns mirror it (SQL-054): :func:`run_row`,
:func:`admission_row`, :func:`message_row` and :func:`head_row` derive every
column from the record, so they cannot disagree. A stored record that does not
parse is stored data contradicting the spec: :class:`IntegrityError`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TypeVar

from convledger import canonical, codec
from convledger.errors import IntegrityError, LedgerError, PurgedError
from convledger.runtime.records import Admission, Head, Message, Run
from convledger.runtime.state import RuntimeState

_ACTIVE = "state IN ('queued', 'running', 'interrupt_requested')"
_OWNED = "state IN ('running', 'interrupt_requested')"

HEAD = "SELECT record FROM heads WHERE conversation_id = ?"
HEAD_VERSION = "SELECT version, record FROM heads WHERE conversation_id = ?"
OPENING = (
    "SELECT EXISTS (SELECT 1 FROM purged WHERE conversation_id = ?1),"
    " (SELECT version FROM heads WHERE conversation_id = ?1),"
    " (SELECT record FROM heads WHERE conversation_id = ?1)"
)
"""A transition's first read (SQL-052, SQL-053): the tombstone and the head in one statement."""
RUN = "SELECT record FROM runs WHERE conversation_id = ? AND run_id = ?"
ACTIVE_RUNS = (
    "SELECT record FROM runs INDEXED BY runs_active"
    f" WHERE conversation_id = ? AND {_ACTIVE} ORDER BY ordinal"
)
ADMISSION = "SELECT record FROM admissions WHERE conversation_id = ? AND idempotency_key = ?"
ADMISSION_OF_INPUT = (
    "SELECT record FROM admissions INDEXED BY admissions_by_input"
    " WHERE conversation_id = ? AND json_extract(record, '$.inputId') = ? LIMIT 1"
)
LAST_ORDINALS = (
    "SELECT (SELECT max(ordinal) FROM runs WHERE conversation_id = ?1),"
    " (SELECT max(ordinal) FROM admissions WHERE conversation_id = ?1)"
)
"""Both highest ordinals, which an accept asks for one after the other."""
MESSAGE = "SELECT record FROM messages WHERE conversation_id = ? AND message_id = ?"
RUN_ANSWERED_BY = (
    "SELECT record FROM runs INDEXED BY runs_by_assistant"
    " WHERE conversation_id = ? AND json_extract(record, '$.assistantMessageId') = ? LIMIT 1"
)
MESSAGE_IN_USE = (
    "SELECT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?1 AND message_id = ?2)"
    " OR EXISTS (SELECT 1 FROM admissions INDEXED BY admissions_by_input"
    " WHERE conversation_id = ?1 AND json_extract(record, '$.inputId') = ?2)"
    " OR EXISTS (SELECT 1 FROM runs INDEXED BY runs_by_assistant"
    " WHERE conversation_id = ?1 AND json_extract(record, '$.assistantMessageId') = ?2)"
)
"""TRN-022's three lookups (MESSAGE, ADMISSION_OF_INPUT, RUN_ANSWERED_BY) in one statement."""
POSITION_BOUNDS = (
    "SELECT (SELECT min(position) FROM messages WHERE conversation_id = ?),"
    " (SELECT max(position) FROM messages WHERE conversation_id = ?)"
)
FIRST_ACTIVE_MESSAGE = (
    "SELECT record FROM messages INDEXED BY messages_active"
    " WHERE conversation_id = ? AND active = 1 ORDER BY position LIMIT 1"
)
ACTIVE_MESSAGES = (
    "SELECT record FROM messages INDEXED BY messages_active"
    " WHERE conversation_id = ? AND active = 1 AND position >= ? AND position <= ?"
    " ORDER BY position"
)
HISTORY = (
    "SELECT record FROM messages INDEXED BY messages_active"
    " WHERE conversation_id = ? AND active = 1 ORDER BY position"
)
RECOVERABLE_AFTER = (
    "SELECT record FROM runs INDEXED BY runs_recoverable"
    f" WHERE {_OWNED} AND (conversation_id, ordinal) > (?, ?)"
    " ORDER BY conversation_id, ordinal LIMIT ?"
)
PURGED = "SELECT 1 FROM purged WHERE conversation_id = ?"

RUNTIME_READS = {
    "head": HEAD,
    "head_version": HEAD_VERSION,
    "opening": OPENING,
    "run": RUN,
    "active_runs": ACTIVE_RUNS,
    "admission": ADMISSION,
    "admission_of_input": ADMISSION_OF_INPUT,
    "last_ordinals": LAST_ORDINALS,
    "message": MESSAGE,
    "run_answered_by": RUN_ANSWERED_BY,
    "message_in_use": MESSAGE_IN_USE,
    "position_bounds": POSITION_BOUNDS,
    "first_active_message": FIRST_ACTIVE_MESSAGE,
    "active_messages": ACTIVE_MESSAGES,
    "history": HISTORY,
    "recoverable_after": RECOVERABLE_AFTER,
    "purged": PURGED,
}
"""Every statement of the bounded reads and of the transition view, by purpose (SQL-055).

``INDEXED BY`` pins the index each statement is written for: SQLite refuses
to prepare the statement rather than fall back to a scan.
"""

FIRST_CURSOR = ("", 0)
"""The keyset position before every run: no conversation id is empty (ENV-005)."""

EXPORT_READS = {
    "runs": "SELECT record FROM runs WHERE conversation_id = ? ORDER BY ordinal",
    "admissions": "SELECT record FROM admissions WHERE conversation_id = ? ORDER BY ordinal",
    "messages": "SELECT record FROM messages WHERE conversation_id = ? ORDER BY position",
}
"""The whole operational state of one conversation, for an export (TRN-103, SQL-045)."""

INSERT_HEAD = (
    "INSERT INTO heads (conversation_id, version, updated_at, record) VALUES (?, ?, ?, ?)"
    " RETURNING version, record"
)
UPDATE_HEAD = (
    "UPDATE heads SET version = ?, updated_at = ?, record = ?"
    " WHERE conversation_id = ? AND version = ? RETURNING version, record"
)
"""SQL-053: the head's writes give back the row as written (``RETURNING``), which proves the
compare-and-swap without reading the row again and without a row count."""
UPSERT_RUN = (
    "INSERT INTO runs (conversation_id, run_id, ordinal, state, updated_at, record)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id, run_id) DO UPDATE SET"
    " ordinal = excluded.ordinal, state = excluded.state, updated_at = excluded.updated_at,"
    " record = excluded.record"
)
UPSERT_ADMISSION = (
    "INSERT INTO admissions"
    " (conversation_id, idempotency_key, run_id, ordinal, admitted_at, record)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id, idempotency_key) DO UPDATE SET"
    " run_id = excluded.run_id, ordinal = excluded.ordinal,"
    " admitted_at = excluded.admitted_at, record = excluded.record"
)
UPSERT_MESSAGE = (
    "INSERT INTO messages (conversation_id, position, message_id, active, created_at, record)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id, message_id) DO UPDATE SET"
    " position = excluded.position, active = excluded.active,"
    " created_at = excluded.created_at, record = excluded.record"
)

_R = TypeVar("_R")


def record_text(record: Head | Run | Admission | Message) -> str:
    """The ``record`` column: the record's canonical JSON (SQL-054)."""
    return codec.encode(record.to_json()).decode("utf-8")


def head_row(head: Head, updated_at: str) -> tuple[str, int, str, str]:
    """``heads`` columns of ``head``; ``updated_at`` is the last applied transition's time."""
    return head.conversation_id, head.version, updated_at, record_text(head)


def run_row(run: Run) -> tuple[str, str, int, str, str, str]:
    """``runs`` columns of ``run`` (SQL-051, SQL-054)."""
    return (run.conversation_id, run.run_id, run.ordinal, run.state.value, run.updated_at,
            record_text(run))


def admission_row(admission: Admission) -> tuple[str, str, str, int, str, str]:
    """``admissions`` columns of ``admission`` (SQL-054)."""
    return (admission.conversation_id, admission.idempotency_key, admission.run_id,
            admission.ordinal, admission.admitted_at, record_text(admission))


def message_row(message: Message) -> tuple[str, int, str, int, str, str]:
    """``messages`` columns of ``message`` (SQL-054)."""
    return (message.conversation_id, message.position, message.message_id,
            1 if message.active else 0, message.created_at, record_text(message))


def parse_record(text: object, parse: Callable[[object], _R], where: str) -> _R:
    """A stored ``record`` column as its TRN record; IntegrityError when it is not one."""
    if not isinstance(text, str):
        raise IntegrityError(f"{where}: record is not text", requirement="SQL-054")
    data = text.encode("utf-8")
    # The store wrote the record as canonical text (SQL-054): the fast decoder's value, when
    # it proves the text canonical, is the strict decoder's (codec.decode_canonical); any
    # other text is decoded strictly, which reports what is wrong.
    value = codec.decode_canonical(data)
    try:
        if value is None:
            value = canonical.decode(data)
    except LedgerError as error:
        raise IntegrityError(
            f"{where}: record is not JSON ({error.message})", requirement="SQL-054"
        ) from error
    return parse(value)


class SqlRuntimeView:
    """:class:`~convledger.runtime.view.RuntimeView` over one conversation's rows (SQL-055).

    It runs on the connection of a transaction its caller holds; it never
    writes and never reads ``events``. It is read before any write of that
    transaction, so what it has read once stays true while it is used: the
    head (after :meth:`opened`) and both highest ordinals are read once.
    """

    def __init__(self, connection: sqlite3.Connection, conversation_id: str) -> None:
        self._connection = connection
        self._conversation_id = conversation_id
        self.head_read: tuple[int | None] | None = None
        """After :meth:`head`: the ``version`` column of the ``heads`` row it read in the
        caller's transaction, or ``(None,)`` when there was no row; None before it was read. A
        transition's compare-and-swap is decided from it (SQL-053) without a second read."""
        self._head: Head | None = None
        self._ordinals: tuple[int, int] | None = None

    @classmethod
    def opened(cls, connection: sqlite3.Connection, conversation_id: str) -> SqlRuntimeView:
        """The view of a transition: the tombstone and the head read in one statement.

        Refuses with kind ``purged`` when the conversation has a tombstone
        (SQL-052, TRN-092); the head is then known without another read.
        """
        view = cls(connection, conversation_id)
        purged, version, record = connection.execute(
            OPENING, (conversation_id,)
        ).fetchone()
        if purged:
            raise PurgedError.of(conversation_id)
        view._remember_head(version, record)
        return view

    def _remember_head(self, version: int | None, record: object) -> None:
        if version is None:
            self.head_read = (None,)
            self._head = None
        else:
            self.head_read = (int(version),)
            self._head = parse_record(record, Head.from_json, "runtime row")

    def _one(self, sql: str, parse: Callable[[object], _R], *args: object) -> _R | None:
        found = self._connection.execute(sql, (self._conversation_id, *args)).fetchone()
        return None if found is None else parse_record(found[0], parse, "runtime row")

    def _all(self, sql: str, parse: Callable[[object], _R], *args: object) -> list[_R]:
        found = self._connection.execute(sql, (self._conversation_id, *args)).fetchall()
        return [parse_record(row[0], parse, "runtime row") for row in found]

    def _last_ordinals(self) -> tuple[int, int]:
        if self._ordinals is None:
            runs, admissions = self._connection.execute(
                LAST_ORDINALS, (self._conversation_id,)
            ).fetchone()
            self._ordinals = (runs or 0, admissions or 0)
        return self._ordinals

    def head(self) -> Head | None:
        """The head, or None before the first applied transition (keeps :attr:`head_read`)."""
        if self.head_read is None:
            found = self._connection.execute(HEAD_VERSION, (self._conversation_id,)).fetchone()
            self._remember_head(*(found or (None, None)))
        return self._head

    def run(self, run_id: str) -> Run | None:
        """The run of this conversation with ``run_id`` (primary key)."""
        return self._one(RUN, Run.from_json, run_id)

    def active_runs(self) -> Sequence[Run]:
        """Every active run by ordinal (index ``runs_active``)."""
        return self._all(ACTIVE_RUNS, Run.from_json)

    def last_run_ordinal(self) -> int:
        """The highest run ordinal (index ``runs_by_ordinal``)."""
        return self._last_ordinals()[0]

    def admission(self, idempotency_key: str) -> Admission | None:
        """The admission made under ``idempotency_key`` (primary key)."""
        return self._one(ADMISSION, Admission.from_json, idempotency_key)

    def admission_of_input(self, input_id: str) -> Admission | None:
        """The admission whose input is ``input_id`` (index ``admissions_by_input``)."""
        return self._one(ADMISSION_OF_INPUT, Admission.from_json, input_id)

    def last_admission_ordinal(self) -> int:
        """The highest admission ordinal (index ``admissions_by_ordinal``)."""
        return self._last_ordinals()[1]

    def message(self, message_id: str) -> Message | None:
        """The message with ``message_id``, active or not (index ``messages_by_id``)."""
        return self._one(MESSAGE, Message.from_json, message_id)

    def run_answered_by(self, message_id: str) -> Run | None:
        """The run whose assistantMessageId is ``message_id`` (index ``runs_by_assistant``)."""
        return self._one(RUN_ANSWERED_BY, Run.from_json, message_id)

    def message_in_use(self, message_id: str) -> bool:
        """TRN-022's three lookups in one statement (:data:`MESSAGE_IN_USE`)."""
        found = self._connection.execute(
            MESSAGE_IN_USE, (self._conversation_id, message_id)
        ).fetchone()
        return bool(found[0])

    def position_bounds(self) -> tuple[int, int] | None:
        """The lowest and highest position ever used (two primary-key probes)."""
        found = self._connection.execute(
            POSITION_BOUNDS, (self._conversation_id, self._conversation_id)
        ).fetchone()
        if found is None or found[0] is None:
            return None
        return int(found[0]), int(found[1])

    def first_active_message(self) -> Message | None:
        """The active message with the lowest position (index ``messages_active``)."""
        return self._one(FIRST_ACTIVE_MESSAGE, Message.from_json)

    def active_messages(self, first: int, last: int) -> Sequence[Message]:
        """The active messages with positions in ``first..last`` (index ``messages_active``)."""
        return self._all(ACTIVE_MESSAGES, Message.from_json, first, last)

    def history(self) -> list[Message]:
        """Every active message by position (index ``messages_active``)."""
        return self._all(HISTORY, Message.from_json)


def load_state(connection: sqlite3.Connection, conversation_id: str) -> RuntimeState:
    """The whole operational state of one conversation (for an export, TRN-103)."""
    state = RuntimeState(conversation_id)
    state.head_record = SqlRuntimeView(connection, conversation_id).head()
    records: list[Run | Admission | Message] = []
    records.extend(_every(connection, EXPORT_READS["runs"], conversation_id, Run.from_json))
    records.extend(
        _every(connection, EXPORT_READS["admissions"], conversation_id, Admission.from_json)
    )
    records.extend(
        _every(connection, EXPORT_READS["messages"], conversation_id, Message.from_json)
    )
    for record in records:
        state.put(record)
    return state


def _every(
    connection: sqlite3.Connection, sql: str, conversation_id: str, parse: Callable[[object], _R]
) -> list[_R]:
    found = connection.execute(sql, (conversation_id,)).fetchall()
    return [parse_record(row[0], parse, "runtime row") for row in found]
