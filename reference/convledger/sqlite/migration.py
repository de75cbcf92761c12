"""Migration of a version 1, 2 or 3 database to version 4 (SQL-030 .. SQL-037, SQL-072,
SQL-076).

The caller (``opening.py``) has begun the write transaction *before* it read
the table list and has validated the version 1 schema, so two processes that
open one file at once cannot both migrate it (SQL-030): the second waits for
the lock and then finds version 4. A version 2 or 3 file is validated as version 2
the same way before it migrates.

Steps from version 1, all inside that one transaction (SQL-036):

=====================  ======================================================
step                   what it does
=====================  ======================================================
``create_objects``     create the version 4 tables, indexes, FTS5 table and
                       triggers
``check_rows``         refuse rows of runs, admissions or messages whose
                       conversation has no head, and records that are not
                       records of chapter TRN or disagree with their row's
                       columns (SQL-037, SQL-054)
``write_baselines``    one ``runtime/baseline`` at seq 1 per head, in
                       conversation id order (SQL-031)
``set_version``        ``meta.schema_version`` becomes 4
=====================  ======================================================

From version 2 (SQL-072) there are three steps: ``drop_insert_trigger`` (the
FTS5 index and its rows stay as they are; from now on the store writes each
new event's index row itself, SQL-070), ``create_pending`` (the table
``search_pending`` and its trigger, SQL-076) and ``set_version``. The rows a
version 2 file indexed keep the text its trigger gave them. From version 3
there are two: ``create_pending`` and ``set_version``.

``on_step`` is called with each step's name after it ran; it lets tests
inject a failure after any step and prove the file is exactly the version 1
database it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import cast

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.errors import LedgerError
from convledger.kinds import KindRegistry
from convledger.runtime.records import Admission, Head, Message, Run
from convledger.runtime.state import comparable, draft_problems, rebuild
from convledger.sqlite import rows, schema
from convledger.sqlite.baseline import (
    BASELINE_KIND,
    BASELINE_SCHEMA_VERSION,
    TimedRecord,
    V1Conversation,
    baseline_event,
    instant,
)
from convledger.sqlite.errors import MigrationRefusedError
from convledger.sqlite.runtime_view import (
    admission_row,
    head_row,
    load_state,
    message_row,
    run_row,
)

STEPS = ("create_objects", "check_rows", "write_baselines", "set_version")
"""The migration steps from version 1, in order; ``on_step`` receives each name."""
STEPS_FROM_V2 = ("drop_insert_trigger", "create_pending", "set_version")
"""The migration steps from version 2, in order (SQL-072, SQL-076)."""
STEPS_FROM_V3 = ("create_pending", "set_version")
"""The migration steps from version 3, in order (SQL-076)."""

StepObserver = Callable[[str], None]


@attrs.frozen
class MigrationReport:
    """What a migration wrote (or, in a dry run, would write)."""

    conversations: tuple[str, ...]
    migrated_at: str
    from_version: int = 1
    """The version the file had (1, 2 or 3); only version 1 gets baselines."""

    @property
    def baselines(self) -> int:
        """One baseline event per conversation (SQL-031)."""
        return len(self.conversations)


def migrate(
    connection: sqlite3.Connection,
    *,
    from_version: int,
    registry: KindRegistry,
    clock: Callable[[], str],
    new_event_id: Callable[[], str],
    on_step: StepObserver | None = None,
) -> MigrationReport:
    """Migrate a version 1, 2 or 3 file inside the caller's write transaction (module table)."""
    if from_version in (2, 3):
        notify = on_step or (lambda step: None)
        migrated_at = _migration_time(clock)
        if from_version == 2:
            connection.execute(f"DROP TRIGGER {schema.FTS_INSERT_TRIGGER.name}")
            notify("drop_insert_trigger")
        for statement in schema.upgrade_script(from_version):
            connection.execute(statement)
        notify("create_pending")
        _set_version(connection)
        notify("set_version")
        return MigrationReport(
            conversations=(), migrated_at=migrated_at, from_version=from_version
        )
    return migrate_v1(
        connection, registry=registry, clock=clock, new_event_id=new_event_id, on_step=on_step
    )


def _set_version(connection: sqlite3.Connection) -> None:
    connection.execute(
        "UPDATE meta SET value = ? WHERE key = ?", (str(schema.LATEST_VERSION), schema.VERSION_KEY)
    )


def migrate_v1(
    connection: sqlite3.Connection,
    *,
    registry: KindRegistry,
    clock: Callable[[], str],
    new_event_id: Callable[[], str],
    on_step: StepObserver | None = None,
) -> MigrationReport:
    """Run every step of the table above on a connection inside its write transaction."""
    notify = on_step or (lambda step: None)
    for statement in schema.upgrade_script(1):
        connection.execute(statement)
    notify("create_objects")
    _refuse_orphans(connection)
    conversations = tuple(
        row[0]
        for row in connection.execute("SELECT conversation_id FROM heads ORDER BY conversation_id")
    )
    for conversation_id in conversations:
        _refuse_disagreeing_rows(connection, conversation_id)
    notify("check_rows")
    migrated_at = _migration_time(clock)
    for conversation_id in conversations:
        state = read_conversation(connection, conversation_id)
        envelope = _baseline(state, migrated_at, new_event_id)
        _check_baseline(envelope.payload, registry, conversation_id)
        _check_rebuild(connection, envelope)
        if rows.first_stored_event_id(connection, [envelope.event_id]) is not None:
            raise MigrationRefusedError(
                f"the event id generator repeated {envelope.event_id!r}", requirement="SQL-032"
            )
        rows.insert_events(connection, [envelope])
    notify("write_baselines")
    _set_version(connection)
    notify("set_version")
    return MigrationReport(conversations=conversations, migrated_at=migrated_at)


def read_conversation(connection: sqlite3.Connection, conversation_id: str) -> V1Conversation:
    """The normalized rows of one conversation, decoded and ordered (SQL-033)."""
    head = connection.execute(
        "SELECT record FROM heads WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()
    messages = connection.execute(
        "SELECT created_at, record FROM messages WHERE conversation_id = ? ORDER BY position",
        (conversation_id,),
    ).fetchall()
    runs = connection.execute(
        "SELECT updated_at, record FROM runs WHERE conversation_id = ?"
        " ORDER BY ordinal, run_id",
        (conversation_id,),
    ).fetchall()
    admissions = connection.execute(
        "SELECT record FROM admissions WHERE conversation_id = ?"
        " ORDER BY ordinal, idempotency_key",
        (conversation_id,),
    ).fetchall()
    where = f"conversation {conversation_id!r}"
    return V1Conversation(
        conversation_id=conversation_id,
        head=_record(head[0], f"heads row of {where}"),
        messages=tuple(_timed(at, record, f"messages row of {where}") for at, record in messages),
        runs=tuple(_timed(at, record, f"runs row of {where}") for at, record in runs),
        admissions=tuple(_record(row[0], f"admissions row of {where}") for row in admissions),
    )


def _timed(at: object, record: object, where: str) -> TimedRecord:
    if not isinstance(at, str):
        raise MigrationRefusedError(f"{where}: time is not text", requirement="SQL-037")
    try:
        instant(at)
    except LedgerError as error:
        raise MigrationRefusedError(
            f"{where}: time {at!r} is not an RFC 3339 date-time with an offset",
            requirement="SQL-037",
        ) from error
    return TimedRecord(at=at, record=_record(record, where))


def _record(text: object, where: str) -> JsonValue:
    """A ``record`` column: the canonical JSON of one object (SQL-037)."""
    if not isinstance(text, str):
        raise MigrationRefusedError(f"{where}: record is not text", requirement="SQL-037")
    try:
        value = canonical.decode(text.encode("utf-8"))
    except LedgerError as error:
        raise MigrationRefusedError(
            f"{where}: record is not JSON ({error.message})", requirement="SQL-037"
        ) from error
    if not isinstance(value, dict):
        raise MigrationRefusedError(f"{where}: record is not a JSON object", requirement="SQL-037")
    return cast(JsonValue, value)


def _head_columns(value: object) -> tuple[object, ...]:
    return head_row(Head.from_json(value), "")[:2]  # updated_at is the row's own


def _run_columns(value: object) -> tuple[object, ...]:
    return run_row(Run.from_json(value))[:-1]


def _admission_columns(value: object) -> tuple[object, ...]:
    return admission_row(Admission.from_json(value))[:-1]


def _message_columns(value: object) -> tuple[object, ...]:
    return message_row(Message.from_json(value))[:-1]


_ROW_CHECKS: tuple[tuple[str, str, Callable[[object], tuple[object, ...]]], ...] = (
    ("heads", "conversation_id", _head_columns),
    ("runs", "conversation_id, run_id", _run_columns),
    ("admissions", "conversation_id, idempotency_key", _admission_columns),
    ("messages", "conversation_id, position", _message_columns),
)
"""Each version 1 table, its key order, and the columns its record implies (SQL-054)."""


def _refuse_disagreeing_rows(connection: sqlite3.Connection, conversation_id: str) -> None:
    """SQL-037, SQL-054: every record is a TRN record and its row's columns agree with it.

    ``heads.updated_at`` is the only column no record implies.
    """
    where = f"conversation {conversation_id!r}"
    for table, order, implied in _ROW_CHECKS:
        found = connection.execute(
            f"SELECT * FROM {table} WHERE conversation_id = ? ORDER BY {order}",
            (conversation_id,),
        ).fetchall()
        for row in found:
            value = _record(row[-1], f"{table} row of {where}")
            try:
                expected = implied(value)
            except LedgerError as error:
                raise MigrationRefusedError(
                    f"{table} row of {where}: not a record of chapter TRN ({error.message})",
                    requirement="SQL-037",
                ) from error
            if tuple(row[: len(expected)]) != expected:
                raise MigrationRefusedError(
                    f"{table} row of {where}: columns {tuple(row[:-1])!r} disagree with its "
                    "record",
                    requirement="SQL-037",
                )


def _check_rebuild(connection: sqlite3.Connection, envelope: Envelope) -> None:
    """SQL-037, TRN-100: the baseline rebuilds exactly the stored rows, drafts included."""
    conversation_id = envelope.conversation_id
    try:
        rebuilt = rebuild(conversation_id, [envelope])
    except LedgerError as error:
        raise MigrationRefusedError(
            f"the baseline of {conversation_id!r} does not rebuild: {error.message}",
            requirement="SQL-037",
        ) from error
    stored = load_state(connection, conversation_id)
    problems = draft_problems(stored)
    if canonical.encode(comparable(rebuilt)) != canonical.encode(comparable(stored)) or problems:
        raise MigrationRefusedError(
            f"the rows of {conversation_id!r} are not one runtime state: {problems}",
            requirement="SQL-037",
        )


def _refuse_orphans(connection: sqlite3.Connection) -> None:
    """SQL-037: every runs, admissions and messages row belongs to a head."""
    for table in ("runs", "admissions", "messages"):
        orphan = connection.execute(
            f"SELECT conversation_id FROM {table} WHERE conversation_id NOT IN"
            " (SELECT conversation_id FROM heads) LIMIT 1"
        ).fetchone()
        if orphan is not None:
            raise MigrationRefusedError(
                f"{table} has rows of conversation {orphan[0]!r}, which has no head",
                requirement="SQL-037",
            )


def _migration_time(clock: Callable[[], str]) -> str:
    migrated_at = clock()
    try:
        instant(migrated_at)
    except LedgerError as error:
        raise MigrationRefusedError(
            f"the clock returned {migrated_at!r}, not an RFC 3339 date-time with an offset",
            requirement="SQL-032",
        ) from error
    return migrated_at


def _baseline(
    state: V1Conversation, migrated_at: str, new_event_id: Callable[[], str]
) -> Envelope:
    event_id = new_event_id()
    try:
        return baseline_event(state, migrated_at=migrated_at, event_id=event_id)
    except LedgerError as error:
        raise MigrationRefusedError(
            f"the event id generator returned {event_id!r}: {error.message}",
            requirement="SQL-032",
        ) from error


def _check_baseline(payload: JsonValue, registry: KindRegistry, conversation_id: str) -> None:
    try:
        registry.check_payload(BASELINE_KIND, BASELINE_SCHEMA_VERSION, payload)
    except LedgerError as error:
        raise MigrationRefusedError(
            f"baseline of conversation {conversation_id!r} breaks its schema: {error.message}",
            requirement="SQL-033",
        ) from error
