"""The runtime's rows in PostgreSQL: bounded lookups and row writes (PGS-040 .. PGS-043).

:class:`PgRuntimeView` answers every lookup of
:class:`~convledger.runtime.view.RuntimeView` with one statement on a primary
key or an index of ``heads``, ``runs``, ``admissions`` or ``messages``; none
reads ``events`` (TRN-080). Each statement is a named constant in
:data:`RUNTIME_READS`, so a test can ask the server for its plan (PGS-030).

The ``record`` column of each row holds the record of chapter TRN as canonical
JSON and the other columns are derived from it by :func:`run_row`,
:func:`admission_row`, :func:`message_row` and :func:`head_row`, so they
cannot disagree (PGS-042). Where the SQLite store indexes an expression of the
record, this store keeps the value in a column of its own
(``runs.assistant_message_id``, ``admissions.input_id``), indexed plainly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from convledger import canonical, codec
from convledger.errors import IntegrityError, LedgerError, PurgedError
from convledger.postgres.rows import key
from convledger.runtime.records import Admission, Head, Message, Run
from convledger.runtime.state import RuntimeState

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

_ACTIVE = "state IN ('queued', 'running', 'interrupt_requested')"
_OWNED = "state IN ('running', 'interrupt_requested')"

HEAD = "SELECT record FROM heads WHERE conversation_id = %s"
HEAD_VERSION = "SELECT version, record FROM heads WHERE conversation_id = %s"
OPENING = (
    "SELECT EXISTS (SELECT 1 FROM purged WHERE conversation_id = %s), version, record"
    " FROM (VALUES (1)) AS one LEFT JOIN heads ON conversation_id = %s"
)
"""A transition's first read after its lock (PGS-040, PGS-041): tombstone and head at once."""
RUN = "SELECT record FROM runs WHERE conversation_id = %s AND run_id = %s"
ACTIVE_RUNS = f"SELECT record FROM runs WHERE conversation_id = %s AND {_ACTIVE} ORDER BY ordinal"
ADMISSION = "SELECT record FROM admissions WHERE conversation_id = %s AND idempotency_key = %s"
ADMISSION_OF_INPUT = (
    "SELECT record FROM admissions WHERE conversation_id = %s AND input_id = %s LIMIT 1"
)
LAST_ORDINALS = (
    "SELECT (SELECT ordinal FROM runs WHERE conversation_id = %s ORDER BY ordinal DESC LIMIT 1),"
    " (SELECT ordinal FROM admissions WHERE conversation_id = %s"
    " ORDER BY ordinal DESC LIMIT 1)"
)
"""Both highest ordinals (``runs_by_ordinal``, ``admissions_by_ordinal``, backward)."""
MESSAGE = "SELECT record FROM messages WHERE conversation_id = %s AND message_id = %s"
RUN_ANSWERED_BY = (
    "SELECT record FROM runs WHERE conversation_id = %s AND assistant_message_id = %s LIMIT 1"
)
MESSAGE_IN_USE = (
    "SELECT EXISTS (SELECT 1 FROM messages WHERE conversation_id = %s AND message_id = %s)"
    " OR EXISTS (SELECT 1 FROM admissions WHERE conversation_id = %s AND input_id = %s)"
    " OR EXISTS (SELECT 1 FROM runs WHERE conversation_id = %s AND assistant_message_id = %s)"
)
"""TRN-022's three lookups (MESSAGE, ADMISSION_OF_INPUT, RUN_ANSWERED_BY) in one statement."""
POSITION_BOUNDS = (
    "SELECT (SELECT position FROM messages WHERE conversation_id = %s"
    " ORDER BY position LIMIT 1),"
    " (SELECT position FROM messages WHERE conversation_id = %s ORDER BY position DESC LIMIT 1)"
)
"""The lowest and highest position ever used (``messages`` primary key, both ends)."""
FIRST_ACTIVE_MESSAGE = (
    "SELECT record FROM messages WHERE conversation_id = %s AND active"
    " ORDER BY position LIMIT 1"
)
ACTIVE_MESSAGES = (
    "SELECT record FROM messages WHERE conversation_id = %s AND active"
    " AND position >= %s AND position <= %s ORDER BY position"
)
HISTORY = "SELECT record FROM messages WHERE conversation_id = %s AND active ORDER BY position"
RECOVERABLE_AFTER = (
    f"SELECT record FROM runs WHERE {_OWNED} AND (conversation_id, ordinal) > (%s, %s)"
    " ORDER BY conversation_id, ordinal LIMIT %s"
)
PURGED = "SELECT 1 FROM purged WHERE conversation_id = %s"

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
"""Every statement of the bounded reads and the transition view, by purpose (PGS-030, PGS-043)."""

FIRST_CURSOR = (b"", 0)
"""The keyset position before every run: no conversation id is empty (ENV-005)."""

EXPORT_READS = {
    "runs": "SELECT record FROM runs WHERE conversation_id = %s ORDER BY ordinal",
    "admissions": "SELECT record FROM admissions WHERE conversation_id = %s ORDER BY ordinal",
    "messages": "SELECT record FROM messages WHERE conversation_id = %s ORDER BY position",
}
"""The whole operational state of one conversation, for an export (TRN-103, PGS-031)."""

INSERT_HEAD = (
    "INSERT INTO heads (conversation_id, version, updated_at, record) VALUES (%s, %s, %s, %s)"
    " RETURNING version, record"
)
"""PGS-040: the head's writes give back the row as written (``RETURNING``), which proves the
compare-and-swap without reading the row again and without a row count."""
UPDATE_HEAD = (
    "UPDATE heads SET version = %s, updated_at = %s, record = %s"
    " WHERE conversation_id = %s AND version = %s RETURNING version, record"
)
UPSERT_RUN = (
    "INSERT INTO runs (conversation_id, run_id, ordinal, state, assistant_message_id,"
    " updated_at, record) VALUES (%s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (conversation_id, run_id) DO UPDATE SET"
    " ordinal = excluded.ordinal, state = excluded.state,"
    " assistant_message_id = excluded.assistant_message_id,"
    " updated_at = excluded.updated_at, record = excluded.record"
)
UPSERT_ADMISSION = (
    "INSERT INTO admissions"
    " (conversation_id, idempotency_key, input_id, run_id, ordinal, admitted_at, record)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (conversation_id, idempotency_key)"
    " DO UPDATE SET input_id = excluded.input_id, run_id = excluded.run_id,"
    " ordinal = excluded.ordinal, admitted_at = excluded.admitted_at, record = excluded.record"
)
UPSERT_MESSAGE = (
    "INSERT INTO messages (conversation_id, position, message_id, active, created_at, record)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (conversation_id, message_id) DO UPDATE SET"
    " position = excluded.position, active = excluded.active,"
    " created_at = excluded.created_at, record = excluded.record"
)

_R = TypeVar("_R")


def record_text(record: Head | Run | Admission | Message) -> str:
    """The ``record`` column: the record's canonical JSON (PGS-042)."""
    return codec.encode(record.to_json()).decode("utf-8")


def head_row(head: Head, updated_at: str) -> tuple[bytes, int, str, str]:
    """``heads`` columns of ``head``; ``updated_at`` is the last applied transition's time."""
    return key(head.conversation_id), head.version, updated_at, record_text(head)


def run_row(run: Run) -> tuple[bytes, bytes, int, str, bytes, str, str]:
    """``runs`` columns of ``run`` (PGS-042)."""
    return (key(run.conversation_id), key(run.run_id), run.ordinal, run.state.value,
            key(run.assistant_message_id), run.updated_at, record_text(run))


def admission_row(admission: Admission) -> tuple[bytes, bytes, bytes, bytes, int, str, str]:
    """``admissions`` columns of ``admission`` (PGS-042)."""
    return (key(admission.conversation_id), key(admission.idempotency_key),
            key(admission.input_id), key(admission.run_id), admission.ordinal,
            admission.admitted_at, record_text(admission))


def message_row(message: Message) -> tuple[bytes, int, bytes, bool, str, str]:
    """``messages`` columns of ``message`` (PGS-042)."""
    return (key(message.conversation_id), message.position, key(message.message_id),
            message.active, message.created_at, record_text(message))


def parse_record(text: object, parse: Callable[[object], _R], where: str) -> _R:
    """A stored ``record`` column as its TRN record; IntegrityError when it is not one."""
    if not isinstance(text, str):
        raise IntegrityError(f"{where}: record is not text", requirement="PGS-042")
    try:
        value = canonical.decode(text.encode("utf-8"))
    except LedgerError as error:
        raise IntegrityError(
            f"{where}: record is not JSON ({error.message})", requirement="PGS-042"
        ) from error
    return parse(value)


class PgRuntimeView:
    """:class:`~convledger.runtime.view.RuntimeView` over one conversation's rows (PGS-043).

    It runs on the connection of a transaction its caller holds; it never
    writes and never reads ``events``. It is read before any write of that
    transaction, so what it has read once stays true while it is used: the
    head (after :meth:`opened`) and both highest ordinals are read once.
    """

    def __init__(self, connection: Connection, conversation_id: str) -> None:
        self._connection = connection
        self._key = key(conversation_id)
        self.head_read: tuple[int | None] | None = None
        """After :meth:`opened`: the ``version`` of the ``heads`` row read in the caller's
        transaction, or ``(None,)`` for no row; the compare-and-swap is decided from it
        (PGS-040) without a second read. None when the view did not read it."""
        self._head: Head | None = None
        self._ordinals: tuple[int, int] | None = None

    @classmethod
    def opened(cls, connection: Connection, conversation_id: str) -> PgRuntimeView:
        """The view of a transition: the tombstone and the head read in one statement.

        Its caller holds the conversation's lock (PGS-010); refuses with kind
        ``purged`` when the conversation has a tombstone (PGS-041, TRN-092).
        """
        view = cls(connection, conversation_id)
        found = connection.execute(OPENING, (view._key, view._key)).fetchone()
        assert found is not None  # one row, always: the VALUES row the head is joined to
        purged, version, record = found
        if purged:
            raise PurgedError.of(conversation_id)
        if version is None:
            view.head_read = (None,)
        else:
            view.head_read = (int(version),)
            view._head = parse_record(record, Head.from_json, "runtime row")
        return view

    def _last_ordinals(self) -> tuple[int, int]:
        if self._ordinals is None:
            found = self._connection.execute(LAST_ORDINALS, (self._key, self._key)).fetchone()
            assert found is not None  # one row of two subqueries
            self._ordinals = (int(found[0] or 0), int(found[1] or 0))
        return self._ordinals

    def _one(self, sql: str, parse: Callable[[object], _R], *args: object) -> _R | None:
        found = self._connection.execute(sql, (self._key, *args)).fetchone()
        return None if found is None else parse_record(found[0], parse, "runtime row")

    def _all(self, sql: str, parse: Callable[[object], _R], *args: object) -> list[_R]:
        found = self._connection.execute(sql, (self._key, *args)).fetchall()
        return [parse_record(row[0], parse, "runtime row") for row in found]

    def head(self) -> Head | None:
        """The head, or None before the first applied transition."""
        if self.head_read is not None:
            return self._head
        return self._one(HEAD, Head.from_json)

    def run(self, run_id: str) -> Run | None:
        """The run of this conversation with ``run_id`` (primary key)."""
        return self._one(RUN, Run.from_json, key(run_id))

    def active_runs(self) -> Sequence[Run]:
        """Every active run by ordinal (index ``runs_active``)."""
        return self._all(ACTIVE_RUNS, Run.from_json)

    def last_run_ordinal(self) -> int:
        """The highest run ordinal (index ``runs_by_ordinal``, backward)."""
        return self._last_ordinals()[0]

    def admission(self, idempotency_key: str) -> Admission | None:
        """The admission made under ``idempotency_key`` (primary key)."""
        return self._one(ADMISSION, Admission.from_json, key(idempotency_key))

    def admission_of_input(self, input_id: str) -> Admission | None:
        """The admission whose input is ``input_id`` (index ``admissions_by_input``)."""
        return self._one(ADMISSION_OF_INPUT, Admission.from_json, key(input_id))

    def last_admission_ordinal(self) -> int:
        """The highest admission ordinal (index ``admissions_by_ordinal``, backward)."""
        return self._last_ordinals()[1]

    def message(self, message_id: str) -> Message | None:
        """The message with ``message_id``, active or not (index ``messages_by_id``)."""
        return self._one(MESSAGE, Message.from_json, key(message_id))

    def run_answered_by(self, message_id: str) -> Run | None:
        """The run whose assistantMessageId is ``message_id`` (index ``runs_by_assistant``)."""
        return self._one(RUN_ANSWERED_BY, Run.from_json, key(message_id))

    def message_in_use(self, message_id: str) -> bool:
        """TRN-022's three lookups in one statement (:data:`MESSAGE_IN_USE`)."""
        wanted = key(message_id)
        found = self._connection.execute(
            MESSAGE_IN_USE, (self._key, wanted, self._key, wanted, self._key, wanted)
        ).fetchone()
        return found is not None and bool(found[0])

    def position_bounds(self) -> tuple[int, int] | None:
        """The lowest and highest position ever used (two primary-key probes, one statement)."""
        found = self._connection.execute(POSITION_BOUNDS, (self._key, self._key)).fetchone()
        if found is None or found[0] is None or found[1] is None:
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


def load_state(connection: Connection, conversation_id: str) -> RuntimeState:
    """The whole operational state of one conversation (for an export, TRN-103)."""
    state = RuntimeState(conversation_id)
    state.head_record = PgRuntimeView(connection, conversation_id).head()
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
    connection: Connection, sql: str, conversation_id: str, parse: Callable[[object], _R]
) -> list[_R]:
    found = connection.execute(sql, (key(conversation_id),)).fetchall()
    return [parse_record(row[0], parse, "runtime row") for row in found]
