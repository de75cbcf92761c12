"""Files for tests and conformance checks of the SQLite chapter: builders and probes.

Tests and checks need the same things: a version 1 database with some rows, a
version 2 database with some events (as release 0.1.0 wrote them), a
way to break a file on purpose (drop or redefine one object), a connection on
which FTS5 is denied, the digest of a file to prove a refusal left it alone
(SQL-022), and the query plan of a statement (SQL-007). They live here, once,
without any test framework.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.memory import MemoryStore
from convledger.runtime.records import Head
from convledger.runtime.state import RuntimeState
from convledger.runtime.transitions import Accept, Acquire, Fence, Terminal, Transition
from convledger.runtime.view import Status
from convledger.search.query import scope_token
from convledger.sqlite import rows as ledger_rows
from convledger.sqlite import schema
from convledger.sqlite.rows import event_row
from convledger.sqlite.runtime_view import admission_row, head_row, message_row, run_row

Row = tuple[object, ...]


@attrs.frozen
class V1Rows:
    """The rows of the four runtime tables of a version 1 database (SQL-003)."""

    heads: tuple[Row, ...] = ()
    messages: tuple[Row, ...] = ()
    runs: tuple[Row, ...] = ()
    admissions: tuple[Row, ...] = ()

    @property
    def conversations(self) -> tuple[str, ...]:
        """The conversation ids of ``heads``, in the order a migration visits them."""
        return tuple(sorted(str(row[0]) for row in self.heads))


def record(value: JsonValue) -> str:
    """A ``record`` column: the canonical JSON text of one object."""
    return canonical.encode(value).decode("utf-8")


def v1_rows_of(states: Iterable[tuple[RuntimeState, str]]) -> V1Rows:
    """The version 1 rows of runtime states, each with its ``heads.updated_at``.

    The ``record`` columns hold the records of chapter TRN and the other
    columns mirror them, exactly as the store writes them (SQL-054).
    """
    heads: list[Row] = []
    messages: list[Row] = []
    runs: list[Row] = []
    admissions: list[Row] = []
    for state, updated_at in states:
        assert state.head_record is not None
        heads.append(head_row(state.head_record, updated_at))
        runs.extend(run_row(run) for run in state.runs.values())
        admissions.extend(admission_row(admission) for admission in state.admissions.values())
        messages.extend(message_row(message) for message in state.messages.values())
    return V1Rows(tuple(heads), tuple(messages), tuple(runs), tuple(admissions))


def runtime_states(
    script: Iterable[tuple[str, Transition, str]],
) -> list[tuple[RuntimeState, str]]:
    """Apply ``(conversationId, transition, occurredAt)`` in order on an in-memory store.

    Returns each conversation's state with the time of its last transition,
    in order of first appearance. Every transition must apply.
    """
    store = MemoryStore()
    last: dict[str, str] = {}
    for number, (conversation_id, transition, at) in enumerate(script, start=1):
        outcome = store.transition(
            conversation_id, transition, event_id=f"v1-{number}", occurred_at=at
        )
        assert outcome.status is Status.APPLIED, (conversation_id, transition, outcome)
        last[conversation_id] = at
    states = []
    for conversation_id, at in last.items():
        document = canonical.decode(store.export_conversation(conversation_id))
        assert isinstance(document, dict) and isinstance(document["companions"], dict)
        runtime = document["companions"]["runtime"]
        states.append((RuntimeState.from_json(conversation_id, runtime), at))
    return states


def sample_v1_rows() -> V1Rows:
    """Three conversations of valid TRN records (SQL-054).

    ``c-1``: a completed run whose last time sorts after, but is before as an
    instant, the admission time of a queued run (``asOf`` is the latter);
    ``c\x00ü``: a running run (owner ``w-ü``) under a key with a NUL;
    ``c-empty``: a head only (no ``asOf``).
    """
    nul = "c\x00ü"
    one: list[tuple[str, Transition, str]] = [
        ("c-1", Accept("k-1", "in-1", "r-1", "a-1", {"text": "first"}), "2026-01-01T00:00:01Z"),
        ("c-1", Acquire("r-1", "w-1"), "2026-01-01T00:00:01.5Z"),
        ("c-1", Terminal("r-1", Fence("w-1", 1, 1), "success", {"text": "done"}),
         "2026-01-01T03:00:02+03:00"),
        ("c-1", Accept("k-2", "in-2", "r-2", "a-2", {"text": "second"}),
         "2026-01-01T00:00:02.5Z"),
        (nul, Accept("k\x00ü", "in-ü", "r-ü", "a-ü", {"text": "grüße"}),
         "2026-01-02T09:00:00+09:00"),
        (nul, Acquire("r-ü", "w-ü"), "2026-01-02T00:00:01Z"),
    ]
    states = runtime_states(one)
    empty = RuntimeState("c-empty")
    empty.head_record = Head("c-empty", 0)
    return v1_rows_of([*states, (empty, "2026-01-03T00:00:00Z")])


def write_v1_database(
    path: str | os.PathLike[str], rows: V1Rows | None = None, *, page_size: int = 1024
) -> None:
    """A version 1 database in rollback-journal mode, holding ``rows`` (default: a sample)."""
    rows = sample_v1_rows() if rows is None else rows
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(f"PRAGMA page_size = {int(page_size)}")
        connection.execute("BEGIN")
        for statement in schema.creation_script(1):
            connection.execute(statement)
        connection.execute("INSERT INTO meta (key, value) VALUES (?, ?)",
                           (schema.VERSION_KEY, "1"))
        connection.executemany("INSERT INTO heads VALUES (?, ?, ?, ?)", rows.heads)
        connection.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)", rows.messages)
        connection.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)", rows.runs)
        connection.executemany("INSERT INTO admissions VALUES (?, ?, ?, ?, ?, ?)",
                               rows.admissions)
        connection.execute("COMMIT")
    finally:
        connection.close()


V2_INSERT_EVENT = (
    "INSERT INTO events (conversation_id, seq, event_id, kind, schema_version, occurred_at,"
    " payload, ignorable, search_rowid)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(rowid), 0) + 1 FROM events_fts))"
)
"""How a version 2 store (release 0.1.0) inserted an event: its trigger indexed it."""


def write_v2_database(
    path: str | os.PathLike[str], events: Iterable[Envelope], *, page_size: int = 4096
) -> None:
    """A version 2 database (rollback journal) holding ``events`` as release 0.1.0 wrote them:
    inserted one by one, each indexed by version 2's ``events_fts_after_insert`` trigger."""

    def insert(connection: sqlite3.Connection, envelope: Envelope) -> None:
        connection.execute(V2_INSERT_EVENT, event_row(envelope))

    _write_old_version(path, 2, events, insert, page_size)


def write_v3_database(
    path: str | os.PathLike[str], events: Iterable[Envelope], *, page_size: int = 4096
) -> None:
    """A version 3 database (rollback journal) holding ``events`` as a version 3 store wrote
    them: each event's ``events_fts`` row in the transaction of its row (SQL-070), rowids from
    ``max(rowid) + 1`` of ``events_fts`` (SQL-067); version 3 has no ``search_pending``."""

    def insert(connection: sqlite3.Connection, envelope: Envelope) -> None:
        row = event_row(envelope)
        found = connection.execute("SELECT coalesce(max(rowid), 0) + 1 FROM events_fts")
        rowid = int(found.fetchone()[0])
        connection.execute(ledger_rows.INSERT_EVENT, (*row, rowid))
        connection.execute(ledger_rows.INSERT_SEARCH_ROW, (
            rowid, ledger_rows.stored_text(row[6]), scope_token(envelope.conversation_id),
            envelope.conversation_id, envelope.seq,
        ))

    _write_old_version(path, 3, events, insert, page_size)


def _write_old_version(
    path: str | os.PathLike[str], version: int, events: Iterable[Envelope],
    insert: Callable[[sqlite3.Connection, Envelope], None], page_size: int,
) -> None:
    """Create ``version``'s objects, record the version, ``insert`` each event, one
    transaction."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(f"PRAGMA page_size = {int(page_size)}")
        connection.execute("BEGIN")
        for statement in schema.creation_script(version):
            connection.execute(statement)
        connection.execute("INSERT INTO meta (key, value) VALUES (?, ?)",
                           (schema.VERSION_KEY, str(version)))
        for envelope in events:
            insert(connection, envelope)
        connection.execute("COMMIT")
    finally:
        connection.close()


def execute_raw(path: str | os.PathLike[str], statements: Iterable[str]) -> None:
    """Run statements on a plain connection, bypassing the store (to break a file on purpose)."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            connection.execute(statement)
    finally:
        connection.close()


def v1_table_rows(path: str | os.PathLike[str]) -> dict[str, list[Row]]:
    """Every row of the four version 1 runtime tables, in key order (SQL-035)."""
    keys = {
        "heads": "conversation_id",
        "messages": "conversation_id, position",
        "runs": "conversation_id, run_id",
        "admissions": "conversation_id, idempotency_key",
    }
    connection = sqlite3.connect(f"{os.fspath(path)}", isolation_level=None)
    try:
        return {
            table: [tuple(row) for row in connection.execute(
                f"SELECT * FROM {table} ORDER BY {order}"
            )]
            for table, order in keys.items()
        }
    finally:
        connection.close()


def file_digest(path: str | os.PathLike[str]) -> str | None:
    """The sha256 of a file's bytes, or None when it does not exist (SQL-022)."""
    try:
        with open(path, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()
    except FileNotFoundError:
        return None


def deny_fts5(connection: sqlite3.Connection) -> None:
    """A connection hook: this connection may not create FTS5 tables (SQL-017).

    SQLite asks the authorizer before it creates a virtual table and names the
    module; denying ``fts5`` there is what a build without FTS5 looks like to
    the store: the table cannot be made.
    """

    def authorize(
        action: int, first: str | None, second: str | None, database: str | None,
        trigger: str | None,
    ) -> int:
        if action == sqlite3.SQLITE_CREATE_VTABLE and (second or "").lower() == "fts5":
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    connection.set_authorizer(authorize)


def query_plan(connection: sqlite3.Connection, sql: str) -> list[str]:
    """The detail lines of ``EXPLAIN QUERY PLAN`` for ``sql`` with placeholder arguments.

    ``?NNN`` placeholders name their parameter: as many arguments as the highest number.
    """
    numbered = [int(number) for number in re.findall(r"\?(\d+)", sql)]
    arguments: Sequence[object] = ("x",) * (max(numbered) if numbered else sql.count("?"))
    return [str(row[3]) for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", arguments)]


def scans_events(plan: Sequence[str]) -> bool:
    """True when a plan reads ``events`` by a full scan rather than by an index (SQL-007)."""
    return any(line.startswith("SCAN events") for line in plan)
