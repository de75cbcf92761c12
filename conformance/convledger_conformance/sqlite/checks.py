"""Checks of chapter SQL: the SQLite store's schema and layout (SQL-001 .. SQL-008).

The helpers here serve every SQL check; the other parts of the chapter are
:mod:`~convledger_conformance.sqlite.checks_opening` (SQL-010 .. SQL-022),
:mod:`~convledger_conformance.sqlite.checks_migration` (SQL-030 .. SQL-037),
:mod:`~convledger_conformance.sqlite.checks_transactions` (SQL-040 .. SQL-047)
and the ``checks_runtime`` modules (SQL-050 ..). These checks drive the SQLite
reference store interface: the factory must make
:class:`convledger.sqlite.SqliteStore` instances (or subclasses) on files; a
store that declares ``migration`` but is not one fails them. Beside the store
the factory gives, they open scratch files of their own with the same class,
and they read the files with plain ``sqlite3`` connections to see exactly what
is stored. Every refusal is checked to leave its file byte-identical
(SQL-022).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.sqlite import SqliteStore, rows, schema
from convledger.sqlite.fixtures import execute_raw, file_digest, query_plan, scans_events
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import accepted, draft, drafts, fail, fresh_store

Opener = Callable[..., SqliteStore]


@contextlib.contextmanager
def sqlite_store(ctx: CheckContext, ids: Sequence[str]) -> Iterator[SqliteStore]:
    """A fresh store from the factory, which must be an SQLite store on a file."""
    with fresh_store(ctx) as store:
        if not isinstance(store, SqliteStore) or store.path == ":memory:":
            fail(ids, f"the SQL checks need an SQLite store on a file, got {store!r}")
        yield store


@contextlib.contextmanager
def workspace(ctx: CheckContext, ids: Sequence[str]) -> Iterator[tuple[Opener, Path]]:
    """The store class of the factory and a scratch directory for further files."""
    with sqlite_store(ctx, ids) as store:
        opener: Opener = type(store)
    with tempfile.TemporaryDirectory(prefix="convledger-sql-") as directory:
        yield opener, Path(directory)


def refused_unchanged(
    open_file: Callable[[], object], path: Path, kind: str, ids: Sequence[str], what: str
) -> LedgerError:
    """Expect a refusal of ``kind`` that leaves ``path`` as it was (SQL-022)."""
    before = file_digest(path)
    try:
        result = open_file()
    except LedgerError as error:
        if error.kind != kind:
            fail(ids, f"{what}: refused as {error.kind!r}, expected {kind!r} ({error!r})")
        caught = error
    except Exception as error:
        fail(ids, f"{what}: raised {error!r}, expected a ledger error of kind {kind!r}")
    else:
        with contextlib.suppress(Exception):
            result.close()  # type: ignore[attr-defined]
        fail(ids, f"{what}: opened, expected a refusal of kind {kind!r}")
    if file_digest(path) != before:
        fail(("SQL-022", *ids), f"{what}: the refused open changed the file")
    return caught


def plain(path: Path | str) -> sqlite3.Connection:
    """A plain connection to a store's file, to see what is stored."""
    return sqlite3.connect(path, isolation_level=None)


# -- schema and layout ---------------------------------------------------------------------


@check("SQL-001", "SQL-002", "SQL-003", "SQL-004", "SQL-006", capability=Capability.MIGRATION)
def check_sqlite_schema_objects(ctx: CheckContext) -> None:
    """SQL-001 .. SQL-006: version in meta, every object as defined, keys enforced by SQLite."""
    ids = ("SQL-001", "SQL-002", "SQL-003", "SQL-004", "SQL-006")
    with sqlite_store(ctx, ids) as store:
        store.append("c", [draft("e-1")])
        connection = plain(store.path)
        try:
            version = connection.execute("SELECT value FROM meta WHERE key = ?",
                                         (schema.VERSION_KEY,)).fetchone()
            user_version = connection.execute("PRAGMA user_version").fetchone()
            if version != (str(schema.LATEST_VERSION),) or user_version != (0,):
                fail("SQL-001", f"meta holds {version!r}; the version belongs in meta only")
            # What SQLite itself refuses comes first, so a missing trigger or index
            # fails the rule it enforces (SQL-004, SQL-006), not only SQL-002.
            _expect_sqlite_refuses(connection, "INSERT INTO events SELECT conversation_id, 2,"
                                   " event_id, kind, schema_version, occurred_at, payload,"
                                   " ignorable, 99 FROM events", "SQL-004", "a repeated eventId")
            _expect_sqlite_refuses(connection, "INSERT INTO events SELECT conversation_id, seq,"
                                   " 'other', kind, schema_version, occurred_at, payload,"
                                   " ignorable, 99 FROM events", "SQL-004", "a repeated seq")
            _expect_sqlite_refuses(connection, "UPDATE events SET kind = 'changed'", "SQL-006",
                                   "an UPDATE of an event")
            stored = {name: " ".join(sql.split()) for name, sql in connection.execute(
                "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")}
            for item in (*schema.V2_CORE, schema.FTS_TABLE,
                         *schema.fts_triggers(schema.LATEST_VERSION)):
                if schema.normalize_sql(stored.get(item.name, "")) != item.normalized:
                    fail("SQL-002", f"{item.name} is missing or defined otherwise")
            for table in ("heads", "runs", "admissions", "messages"):
                columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
                if "record" not in columns:
                    fail("SQL-003", f"{table} keeps no record column")
        finally:
            connection.close()
        execute_raw(store.path, ["CREATE TABLE application_notes (note TEXT)"])
        reopened = accepted(store.reopen, "SQL-002", "reopen with a foreign table")
        if reopened.head("c") != 1:
            fail("SQL-002", "a foreign table changed what the store reads")
        reopened.close()


def _expect_sqlite_refuses(
    connection: sqlite3.Connection, statement: str, requirement: str, what: str
) -> None:
    try:
        connection.execute(statement)
    except sqlite3.IntegrityError:
        return
    fail(requirement, f"SQLite accepted {what}")


@check("SQL-005", capability=Capability.MIGRATION)
def check_sqlite_envelope_rows(ctx: CheckContext) -> None:
    """SQL-005: each member is stored as given: exact occurredAt, canonical payload, 0/1."""
    value: JsonValue = {"floats": [1.0, 1e21, -0.0, 0.1], "text": "é\n\x00😀"}
    batch = [
        draft("e-\x00-ü", value, occurred_at="2024-05-01T12:00:00.250000+02:00"),
        draft("e-2", "x", occurred_at="2024-05-01T10:00:00z", ignorable=True),
    ]
    with sqlite_store(ctx, ["SQL-005"]) as store:
        placed = store.append("c\x00/ü", batch)
        connection = plain(store.path)
        found = connection.execute(
            "SELECT event_id, occurred_at, payload, ignorable FROM events ORDER BY seq"
        ).fetchall()
        connection.close()
        for envelope, (event_id, occurred_at, payload, ignorable) in zip(
            placed, found, strict=True
        ):
            expected = (envelope.event_id, envelope.occurred_at,
                        canonical.encode(envelope.payload).decode("utf-8"),
                        1 if envelope.ignorable else 0)
            if (event_id, occurred_at, payload, ignorable) != expected:
                fail("SQL-005", f"row {found!r} does not store {expected!r} member for member")
        again = store.read("c\x00/ü").items
        if [e.canonical_bytes() for e in again] != [e.canonical_bytes() for e in placed]:
            fail("SQL-005", "reading the rows back changed the canonical bytes")


@check("SQL-007", capability=Capability.MIGRATION)
def check_sqlite_reads_search_indexes(ctx: CheckContext) -> None:
    """SQL-007: every ledger statement is a SEARCH on an index of events, never a SCAN."""
    with sqlite_store(ctx, ["SQL-007"]) as store:
        store.append("c", drafts("c", 3))
        connection = plain(store.path)
        try:
            for name, statement in rows.LEDGER_READS.items():
                plan = query_plan(connection, statement)
                if scans_events(plan) or not any(
                    line.startswith("SEARCH events USING") for line in plan
                ):
                    fail("SQL-007", f"the {name} read is planned as {plan!r}")
        finally:
            connection.close()


_READS_EVENTS = re.compile(r"\b(FROM|JOIN)\s+events\b", re.IGNORECASE)


@check("SQL-007", capability=Capability.MIGRATION)
def check_sqlite_executed_reads_search_indexes(ctx: CheckContext) -> None:
    """SQL-007: the statements the store really executes on events are planned as SEARCH.

    Planning the store's declared statements is not enough: a store could run
    others. This check records every statement a handle executes (SQLite's
    trace callback gives them with their arguments inlined) while it reads,
    appends, reads heads and exports, then plans each one that reads ``events``.
    """
    with sqlite_store(ctx, ["SQL-007"]) as store:
        store.append("c", drafts("c", 3))
        executed: list[str] = []

        def trace(connection: sqlite3.Connection) -> None:
            connection.set_trace_callback(executed.append)

        traced = type(store)(store.path, connection_hook=trace)
        try:
            traced.read("c", from_seq=2, to_seq=3, limit=1)
            traced.read("c")
            traced.head("c")
            traced.append("c", drafts("traced", 2))
            traced.export_conversation("c")
        finally:
            traced.close()
        reads = sorted({sql for sql in executed if _READS_EVENTS.search(sql)})
        if not reads:
            fail("SQL-007", "no statement reading events was executed by read, head and export")
        connection = plain(store.path)
        try:
            for statement in reads:
                plan = [
                    str(row[3]) for row in connection.execute(f"EXPLAIN QUERY PLAN {statement}")
                ]
                if scans_events(plan):
                    fail("SQL-007", f"the executed statement {statement!r} is planned as {plan!r}")
        finally:
            connection.close()


@check("SQL-008", capability=Capability.MIGRATION)
def check_sqlite_fts_index(ctx: CheckContext) -> None:
    """SQL-008: the FTS5 index holds every event's string values and follows deletes."""
    with sqlite_store(ctx, ["SQL-008"]) as store:
        # SQL-074: a batch of 32 fills search_pending, so every event gets its index row now
        store.append("c\x00", [draft("e1", {"note": "zebra crossing"}), draft("e2", "Köln")]
                     + [draft(f"filler-{n}", "filler") for n in range(30)])
        connection = plain(store.path)
        try:
            hits = connection.execute(
                "SELECT conversation_id, seq FROM events_fts WHERE events_fts MATCH 'koln OR zebra'"
                " ORDER BY CAST(seq AS INTEGER)"
            ).fetchall()
            if hits != [("c\x00", 1), ("c\x00", 2)]:
                fail("SQL-008", f"the FTS5 index answers {hits!r}")
            connection.execute("DELETE FROM events WHERE seq = 1")
            left = connection.execute(
                "SELECT seq FROM events_fts WHERE events_fts MATCH 'koln OR zebra'").fetchall()
            if left != [(2,)]:
                fail("SQL-008", f"after deleting seq 1 the FTS5 index holds {left!r}")
        finally:
            connection.close()
