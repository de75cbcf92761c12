"""Files for tests and conformance checks of the SQLite chapter: builders and probes.

Tests and checks need the same things: a version 1 database with some rows, a
way to break a file on purpose (drop or redefine one object), a connection on
which FTS5 is denied, the digest of a file to prove a refusal left it alone
(SQL-022), and the query plan of a statement (SQL-007). They live here, once,
without any test framework.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Sequence

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.sqlite import schema

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


def sample_v1_rows() -> V1Rows:
    """Two conversations with messages, runs and admissions, and one with a head only."""
    nul = "c\x00ü"
    return V1Rows(
        heads=(
            ("c-1", 3, "2026-01-01T00:00:03Z", record({"conversationId": "c-1", "version": 3})),
            (nul, 1, "2026-01-02T00:00:00Z", record({"conversationId": nul, "version": 1})),
            ("c-empty", 0, "2026-01-03T00:00:00Z", record({"conversationId": "c-empty"})),
        ),
        messages=(
            ("c-1", 1, "m-1", 0, "2026-01-01T00:00:01Z", record({"messageId": "m-1"})),
            ("c-1", 2, "m-2", 1, "2026-01-01T00:00:02.5Z", record({"messageId": "m-2"})),
            (nul, 1, "m-ü", 1, "2026-01-02T09:00:00+09:00", record({"messageId": "m-ü"})),
        ),
        runs=(
            ("c-1", "r-1", 1, "completed", "2026-01-01T03:00:02+03:00", record({"runId": "r-1"})),
            ("c-1", "r-2", 2, "queued", "2026-01-01T00:00:02Z", record({"runId": "r-2"})),
        ),
        admissions=(
            ("c-1", "k-2", "r-2", 2, "2026-01-01T00:00:02Z", record({"key": "k-2"})),
            ("c-1", "k-1", "r-1", 1, "2026-01-01T00:00:01Z", record({"key": "k-1"})),
        ),
    )


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
    """The detail lines of ``EXPLAIN QUERY PLAN`` for ``sql`` with placeholder arguments."""
    arguments: Sequence[object] = ("x",) * sql.count("?")
    return [str(row[3]) for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", arguments)]


def scans_events(plan: Sequence[str]) -> bool:
    """True when a plan reads ``events`` by a full scan rather than by an index (SQL-007)."""
    return any(line.startswith("SCAN events") for line in plan)
