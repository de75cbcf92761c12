"""Checks of chapter SQL: the SQLite store's schema, opening, migration and transactions.

These checks drive the SQLite reference store interface: the factory must make
:class:`convledger.sqlite.SqliteStore` instances (or subclasses) on files; a
store that declares ``migration`` but is not one fails them. Beside the store
the factory gives, they open scratch files of their own with the same class,
and they read the files with plain ``sqlite3`` connections to see exactly what
is stored. Every refusal is checked to leave its file byte-identical
(SQL-022).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.sqlite import Fts5PartialError, PartialSchemaError, SqliteStore, rows, schema
from convledger.sqlite.fixtures import (
    V1Rows,
    deny_fts5,
    execute_raw,
    file_digest,
    query_plan,
    record,
    sample_v1_rows,
    scans_events,
    v1_table_rows,
    write_v1_database,
)
from convledger.sqlite.migration import STEPS
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.machine import expected_baseline_payload
from convledger_conformance.support import accepted, draft, drafts, fail, fresh_store

Opener = Callable[..., SqliteStore]
MIGRATED_AT = "2026-03-01T12:00:00.000Z"


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


def counting_ids() -> Callable[[], str]:
    """An id generator: baseline-1, baseline-2, ..."""
    counter = itertools.count(1)
    return lambda: f"baseline-{next(counter)}"


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
            if version != ("2",) or connection.execute("PRAGMA user_version").fetchone() != (0,):
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
            for item in (*schema.V2_CORE, schema.FTS_TABLE, *schema.FTS_TRIGGERS):
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
        store.append("c\x00", [draft("e1", {"note": "zebra crossing"}), draft("e2", "Köln")])
        connection = plain(store.path)
        try:
            hits = connection.execute(
                "SELECT conversation_id, seq FROM events_fts WHERE events_fts MATCH 'koln OR zebra'"
                " ORDER BY seq"
            ).fetchall()
            if hits != [("c\x00", 1), ("c\x00", 2)]:
                fail("SQL-008", f"the FTS5 index answers {hits!r}")
            connection.execute("DELETE FROM events WHERE seq = 1")
            left = connection.execute("SELECT seq FROM events_fts").fetchall()
            if left != [(2,)]:
                fail("SQL-008", f"after deleting seq 1 the FTS5 index holds {left!r}")
        finally:
            connection.close()


# -- opening ---------------------------------------------------------------------------------


@check("SQL-010", "SQL-011", "SQL-048", capability=Capability.PERSISTENCE,
       also=(Capability.MIGRATION,))
def check_sqlite_create_and_reopen(ctx: CheckContext) -> None:
    """SQL-010, SQL-011, SQL-048: a new file is version 2 with 16 KiB pages; it reopens as is."""
    ids = ("SQL-010", "SQL-011", "SQL-048")
    with sqlite_store(ctx, ids) as store:
        if store.outcome != "created":
            fail("SQL-010", f"a fresh file was {store.outcome!r}, not created")
        connection = plain(store.path)
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        connection.close()
        if page_size != schema.NEW_FILE_PAGE_SIZE:
            fail("SQL-010", f"a new file has pages of {page_size} bytes")
        file_capabilities = {Capability.PERSISTENCE, Capability.MIGRATION,
                             Capability.MULTI_PROCESS}
        if not file_capabilities <= store.capabilities:
            fail("SQL-048", f"a file store declares {sorted(c.value for c in store.capabilities)}")
        store.append("c", drafts("c", 2))
        reopened = store.reopen()
        if not isinstance(reopened, SqliteStore) or reopened.outcome != "opened":
            fail("SQL-011", "a valid version 2 file did not open as it was")
        reopened.close()
        memory = type(store)(":memory:")
        if memory.capabilities & file_capabilities:
            fail("SQL-048", "a store on :memory: declares file capabilities")
        memory.close()


BREAKAGES: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    ("a newer version", ("UPDATE meta SET value = '3'",), "not_supported", "SQL-012"),
    ("an unreadable version", ("UPDATE meta SET value = 'two'",), "integrity", "SQL-013"),
    ("no meta table", ("DROP TABLE meta",), "integrity", "SQL-014"),
    ("a missing index", ("DROP INDEX events_by_event_id",), "integrity", "SQL-015"),
    ("an altered table", ("ALTER TABLE children ADD COLUMN extra TEXT",), "integrity",
     "SQL-016"),
)
"""(what, statements that break a valid version 2 file, kind, requirement)."""


@check("SQL-012", "SQL-013", "SQL-014", "SQL-015", "SQL-016", "SQL-020", "SQL-022",
       capability=Capability.MIGRATION)
def check_sqlite_schema_refusals(ctx: CheckContext) -> None:
    """SQL-012 .. SQL-016, SQL-020: each broken schema is refused with its kind, file unchanged."""
    ids = ("SQL-012", "SQL-013", "SQL-014", "SQL-015", "SQL-016", "SQL-020", "SQL-022")
    with workspace(ctx, ids) as (opener, directory):
        for number, (what, statements, kind, requirement) in enumerate(BREAKAGES):
            path = directory / f"broken-{number}.sqlite"
            opener(path).close()
            execute_raw(path, statements)
            error = refused_unchanged(partial(opener, path), path, kind, [requirement], what)
            if requirement == "SQL-015" and (
                not isinstance(error, PartialSchemaError)
                or error.missing != ("events_by_event_id",)
            ):
                fail("SQL-015", "the refusal does not name the missing object")
        v1 = directory / "v1-with-events.sqlite"
        write_v1_database(v1)
        execute_raw(v1, ["CREATE TABLE events (x)"])
        refused_unchanged(lambda: opener(v1), v1, "integrity", ["SQL-016"],
                          "a version 1 file holding version 2 objects")
        text = directory / "text.sqlite"
        text.write_bytes(b"this is not a database\n" * 40)
        refused_unchanged(lambda: opener(text), text, "integrity", ["SQL-020"],
                          "a file that is not a database")


@check("SQL-017", "SQL-018", "SQL-019", "SQL-022", capability=Capability.MIGRATION)
def check_sqlite_fts_refusals(ctx: CheckContext) -> None:
    """SQL-017 .. SQL-019: FTS5 unavailable, partial or unknown is refused; never opened without."""
    ids = ("SQL-017", "SQL-018", "SQL-019", "SQL-022")
    with workspace(ctx, ids) as (opener, directory):
        fresh = directory / "never.sqlite"
        refused_unchanged(lambda: opener(fresh, connection_hook=deny_fts5), fresh,
                          "not_supported", ["SQL-017"], "a new file without FTS5")
        if fresh.exists():
            fail(("SQL-017", "SQL-022"), "a refused open left a new file behind")
        v1 = directory / "v1.sqlite"
        write_v1_database(v1)
        refused_unchanged(lambda: opener(v1, connection_hook=deny_fts5), v1, "not_supported",
                          ["SQL-017"], "migrating without FTS5")
        cases: list[tuple[str, str, str | None, str, str]] = [
            ("SQL-017", "not_supported", None, "a version 2 file without FTS5", ""),
            ("SQL-018", "integrity", "DROP TRIGGER events_fts_after_insert", "a missing trigger",
             "events_fts_after_insert"),
            ("SQL-018", "integrity", "DROP TABLE events_fts_config", "a missing shadow table",
             "events_fts_config"),
            ("SQL-018", "integrity", "DROP TABLE events_fts", "a missing FTS5 table",
             "events_fts"),
            ("SQL-019", "integrity", "DROP TABLE events_fts; CREATE VIRTUAL TABLE events_fts "
             "USING fts5(body, scope, conversation_id UNINDEXED, seq UNINDEXED)",
             "another tokenizer", ""),
        ]
        for number, (requirement, kind, statements, what, missing) in enumerate(cases):
            path = directory / f"fts-{number}.sqlite"
            opener(path).close()
            if statements is not None:
                execute_raw(path, statements.split("; "))
            hook = deny_fts5 if statements is None else None
            error = refused_unchanged(partial(opener, path, connection_hook=hook), path, kind,
                                      [requirement], what)
            if missing and (
                not isinstance(error, Fts5PartialError) or missing not in error.missing
            ):
                fail("SQL-018", f"{what}: the refusal does not name {missing}")


@check("SQL-021", "SQL-022", capability=Capability.MIGRATION)
def check_sqlite_read_only(ctx: CheckContext) -> None:
    """SQL-021: opens that must write and writes through a read-only handle are unavailable."""
    with workspace(ctx, ["SQL-021", "SQL-022"]) as (opener, directory):
        v1 = directory / "v1.sqlite"
        write_v1_database(v1)
        refused_unchanged(lambda: opener(v1, read_only=True), v1, "unavailable", ["SQL-021"],
                          "a read-only open of a version 1 file")
        path = directory / "v2.sqlite"
        writer = opener(path)
        writer.append("c", [draft("e1")])
        writer.close()
        reader = opener(path, read_only=True)
        try:
            refused_unchanged(lambda: reader.append("c", [draft("e2")]), path, "unavailable",
                              ["SQL-021"], "an append through a read-only handle")
        finally:
            reader.close()


# -- migration -------------------------------------------------------------------------------


@check("SQL-030", "SQL-031", "SQL-032", "SQL-033", "SQL-034", "SQL-035",
       capability=Capability.MIGRATION)
def check_sqlite_migration_baselines(ctx: CheckContext) -> None:
    """SQL-030 .. SQL-035: one baseline at seq 1 per head, with the state, asOf and v1 rows kept."""
    ids = ("SQL-030", "SQL-031", "SQL-032", "SQL-033", "SQL-034", "SQL-035")
    with workspace(ctx, ids) as (opener, directory):
        path = directory / "v1.sqlite"
        sample = sample_v1_rows()
        write_v1_database(path, sample)
        before = v1_table_rows(path)
        store = opener(path, clock=lambda: MIGRATED_AT, new_event_id=counting_ids())
        try:
            if store.outcome != "migrated":
                fail("SQL-030", f"a version 1 file was {store.outcome!r}, not migrated")
            for number, conversation in enumerate(sample.conversations, start=1):
                _check_baseline(store, conversation, number)
            # The oracle computes the payload from the rows alone, without the store.
            expected_c1 = expected_baseline_payload(sample, "c-1", MIGRATED_AT)
            if expected_c1.get("asOf") != "2026-01-01T00:00:02.5Z":
                fail("SQL-034", "the sample no longer has the asOf this check pins")
            first = store.read("c-1").items[0].payload
            if canonical.encode(first) != canonical.encode(expected_c1):
                fail(("SQL-033", "SQL-034"), f"the baseline of c-1 is {first!r}")
            empty = store.read("c-empty").items[0].payload
            if not isinstance(empty, dict) or "asOf" in empty:
                fail("SQL-034", "a conversation without messages or runs has an asOf")
            if store.append("c-1", [draft("after")])[0].seq != 2:
                fail("SQL-031", "the event after a baseline is not seq 2")
        finally:
            store.close()
        if v1_table_rows(path) != before:
            fail("SQL-035", "the migration changed rows of the version 1 tables")


def _check_baseline(store: SqliteStore, conversation: str, number: int) -> None:
    page = store.read(conversation)
    if len(page.items) != 1 or page.items[0].seq != 1:
        fail("SQL-031", f"conversation {conversation!r} holds {len(page.items)} events")
    baseline = page.items[0]
    payload = baseline.payload
    if (baseline.kind, baseline.schema_version, baseline.ignorable) != (
        "runtime/baseline", 1, False
    ) or baseline.occurred_at != MIGRATED_AT or baseline.event_id != f"baseline-{number}":
        fail("SQL-032", f"baseline of {conversation!r} is {baseline!r}")
    if not isinstance(payload, dict) or payload.get("migratedAt") != MIGRATED_AT:
        fail("SQL-032", f"baseline payload of {conversation!r} has no migratedAt of the clock")
    try:
        store.registry.check_payload("runtime/baseline", 1, payload)
    except LedgerError as error:
        fail("SQL-033", f"baseline of {conversation!r} breaks its schema: {error!r}")


@check("SQL-036", "SQL-037", capability=Capability.MIGRATION)
def check_sqlite_migration_is_atomic(ctx: CheckContext) -> None:
    """SQL-036, SQL-037: a failure after any step, or rows that cannot migrate, change nothing."""
    with workspace(ctx, ["SQL-036", "SQL-037"]) as (opener, directory):
        for step in STEPS:
            path = directory / f"fault-{step}.sqlite"
            write_v1_database(path)
            before = file_digest(path)

            def fault(done: str, at: str = step) -> None:
                if done == at:
                    raise RuntimeError(f"injected after {done}")

            with contextlib.suppress(RuntimeError):
                opener(path, on_migration_step=fault).close()
                fail("SQL-036", f"a fault after {step} did not stop the migration")
            if file_digest(path) != before:
                fail("SQL-036", f"a fault after {step} left the file changed")
        orphan = V1Rows(runs=(("ghost", "r", 1, "queued", "2026-01-01T00:00:00Z", record({})),))
        bad_time = V1Rows(
            heads=(("h", 1, "2026-01-01T00:00:00Z", record({})),),
            messages=(("h", 1, "m", 1, "yesterday", record({})),),
        )
        for number, rows_ in enumerate((orphan, bad_time)):
            path = directory / f"bad-{number}.sqlite"
            write_v1_database(path, rows_)
            refused_unchanged(partial(opener, path), path, "integrity", ["SQL-037"],
                              "version 1 rows that cannot migrate")


@check("SQL-030", capability=Capability.MULTI_PROCESS, also=(Capability.MIGRATION,))
def check_sqlite_migration_race(ctx: CheckContext) -> None:
    """SQL-030: two handles opening one version 1 file at once: exactly one migrates."""
    with workspace(ctx, ["SQL-030"]) as (opener, directory):
        path = directory / "race.sqlite"
        write_v1_database(path)
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def open_it() -> None:
            barrier.wait()
            store = opener(path, busy_timeout=30)
            outcomes.append(store.outcome)
            store.close()

        threads = [threading.Thread(target=open_it) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if sorted(outcomes) != ["migrated", "opened"]:
            fail("SQL-030", f"two racing opens gave {outcomes!r}")
        store = opener(path)
        heads = [store.head(c) for c in sample_v1_rows().conversations]
        store.close()
        if heads != [1, 1, 1]:
            fail("SQL-030", f"after the race the baselines are {heads!r}")


# -- transactions and concurrency ---------------------------------------------------------------


def traced_handle(store: SqliteStore, into: list[str]) -> SqliteStore:
    """Another connection onto the store's file that records every statement it executes."""
    return type(store)(store.path, connection_hook=lambda c: c.set_trace_callback(into.append))


def transactions(trace: Sequence[str]) -> list[list[str]]:
    """The statements of a trace grouped by transaction: each group opens with a BEGIN."""
    groups: list[list[str]] = []
    for statement in trace:
        if statement.lstrip().upper().startswith("BEGIN") or not groups:
            groups.append([])
        groups[-1].append(statement.strip())
    return groups


def opening_statements(groups: Sequence[Sequence[str]]) -> str:
    """A short text of traced transactions: how many, and how each opens and ends."""
    shown = [f"{group[0][:40]!r} .. {group[-1][:40]!r} ({len(group)} statements)"
             for group in groups]
    return f"{len(groups)} group(s): {shown}"


@check("SQL-040", "SQL-041", capability=Capability.MULTI_PROCESS,
       also=(Capability.MIGRATION,))
def check_sqlite_write_lock(ctx: CheckContext) -> None:
    """SQL-040, SQL-041: writes begin IMMEDIATE before any read; a held lock is a conflict.

    That the lock keeps seqs 1..n across handles and processes is LED-017,
    checked through the interface in :mod:`convledger_conformance.ledger.checks_handles`.
    """
    with sqlite_store(ctx, ["SQL-040", "SQL-041"]) as store:
        trace: list[str] = []
        traced = traced_handle(store, trace)
        try:
            writes: list[tuple[str, list[list[str]]]] = []
            trace.clear()
            traced.append("c", [draft("traced-1"), draft("traced-2")])
            writes.append(("append", transactions(trace)))
            archive = traced.export_conversation("c")
            trace.clear()
            with contextlib.suppress(LedgerError):  # a conflict: the log is not empty
                traced.import_conversation(archive)
            writes.append(("import", transactions(trace)))
        finally:
            traced.close()
        for operation, groups in writes:
            if len(groups) != 1 or groups[0][0].upper() != "BEGIN IMMEDIATE":
                fail("SQL-040", f"{operation}: expected one transaction opened by BEGIN "
                                f"IMMEDIATE before any read, got {opening_statements(groups)}")
        waiter = type(store)(store.path, busy_timeout=0.05)
        try:
            with store.write_transaction() as tx:
                tx.append("c", [draft("held")])
                try:
                    waiter.append("c", [draft("blocked")])
                except LedgerError as error:
                    if error.kind != "conflict":
                        fail("SQL-041", f"append while another connection holds the lock: "
                                        f"expected a conflict, got {error.kind!r}")
                except Exception as error:
                    fail("SQL-041", f"append while another connection holds the lock: "
                                    f"expected a conflict, raised {error!r}")
                else:
                    fail("SQL-040", "append while another connection holds the lock: "
                                    "expected to wait and be refused, it wrote")
        finally:
            waiter.close()
        if [e.event_id for e in store.read("c").items][-1] != "held":
            fail("SQL-041", "the refused append left part of itself stored")


@check("SQL-042", capability=Capability.PERSISTENCE, also=(Capability.MIGRATION,))
def check_sqlite_durability(ctx: CheckContext) -> None:
    """SQL-042: WAL and synchronous FULL by default, NORMAL on request, OFF refused."""
    with workspace(ctx, ["SQL-042"]) as (opener, directory):
        path = directory / "durable.sqlite"
        for setting, expected in ((None, 2), ("NORMAL", 1)):
            store = opener(path) if setting is None else opener(path, synchronous=setting)
            with store.write_transaction() as tx:
                found = (tx.execute("PRAGMA journal_mode")[0][0],
                         tx.execute("PRAGMA synchronous")[0][0])
            store.close()
            if found != ("wal", expected):
                fail("SQL-042", f"synchronous {setting or 'default'} gives {found!r}")
        try:
            opener(path, synchronous="OFF").close()
        except LedgerError as error:
            if error.kind != "invalid_input":
                fail("SQL-042", f"synchronous OFF refused as {error.kind!r}")
        else:
            fail("SQL-042", "synchronous OFF was accepted")


@check("SQL-043", "SQL-044", capability=Capability.MIGRATION)
def check_sqlite_transaction_scope(ctx: CheckContext) -> None:
    """SQL-043, SQL-044: companions commit and roll back with their event; nested calls refused."""
    insert = "INSERT INTO projections VALUES (?, 'p', 1, ?, '{}', '2024-01-01T00:00:00Z')"
    with sqlite_store(ctx, ["SQL-043", "SQL-044"]) as store:
        with contextlib.suppress(RuntimeError), store.write_transaction() as tx:
            tx.append("a", [draft("a-1")])
            tx.execute(insert, ("a", 1))
            raise RuntimeError("fault after both writes")
        with store.write_transaction() as tx:
            tx.append("b", [draft("b-1")])
            tx.execute(insert, ("b", 1))
            try:
                store.head("b")
            except LedgerError as error:
                if error.kind != "invalid_input":
                    fail("SQL-044", f"a nested call was refused as {error.kind!r}")
            else:
                fail("SQL-044", "a call inside the store's own scope was served")
            if tx.append("b", [draft("b-2")])[0].seq != 2:
                fail("SQL-044", "the scope was not usable after the refused call")
        connection = plain(store.path)
        rows_ = connection.execute("SELECT conversation_id FROM projections").fetchall()
        connection.close()
        if rows_ != [("b",)] or store.head("a") != 0 or store.head("b") != 2:
            fail("SQL-043", f"companions {rows_!r} disagree with the committed events")


@check("SQL-045", capability=Capability.MULTI_PROCESS, also=(Capability.MIGRATION,))
def check_sqlite_export_snapshot(ctx: CheckContext) -> None:
    """SQL-045: an export reads its events and companions in one read transaction.

    That exports taken beside other handles' appends hold whole batches is
    LED-018, checked through the interface in
    :mod:`convledger_conformance.ledger.checks_handles`.
    """
    with sqlite_store(ctx, ["SQL-045"]) as store:
        store.append("c", [draft("e-1"), draft("e-2")])
        trace: list[str] = []
        traced = traced_handle(store, trace)
        try:
            trace.clear()
            traced.export_conversation("c")
        finally:
            traced.close()
        groups = transactions(trace)
        reads = [statement for group in groups for statement in group
                 if statement.upper().startswith(("SELECT", "WITH"))]
        if (
            len(groups) != 1
            or groups[0][0].upper() not in ("BEGIN", "BEGIN DEFERRED")
            or groups[0][-1].upper() not in ("COMMIT", "END")
            or not reads
        ):
            fail("SQL-045", f"export: expected every read inside one BEGIN .. COMMIT, got "
                            f"{opening_statements(groups)}")


@check("SQL-046", capability=Capability.PERSISTENCE, also=(Capability.MIGRATION,))
def check_sqlite_full_disk(ctx: CheckContext) -> None:
    """SQL-046: a write past the page limit is an unavailable refusal that stores nothing."""

    def limit(connection: sqlite3.Connection) -> None:
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {pages + 4}")

    with workspace(ctx, ["SQL-046"]) as (opener, directory):
        path = directory / "full.sqlite"
        opener(path).close()
        store = opener(path, connection_hook=limit)
        try:
            store.append("c", [draft("small")])
            before = store.export_conversation("c")
            try:
                store.append("c", [draft(f"big-{n}", "x" * 4000) for n in range(200)])
            except LedgerError as error:
                if error.kind != "unavailable":
                    fail("SQL-046", f"a full database refused as {error.kind!r}")
            else:
                fail("SQL-046", "800 KB went into a database limited to 4 more pages")
            if store.export_conversation("c") != before:
                fail("SQL-046", "the refused write left part of itself stored")
        finally:
            store.close()


_WRITER = textwrap.dedent(
    """
    import importlib, sys
    from convledger.envelope import EventDraft
    module, name = sys.argv[1].split(":")
    store = getattr(importlib.import_module(module), name)(sys.argv[2], busy_timeout=60)
    for n in range(int(sys.argv[3])):
        store.append("shared", [EventDraft(
            event_id=f"child-{n}", kind="state/set", occurred_at="2024-01-01T00:00:00Z",
            payload={"name": "n", "version": 1, "value": n, "actor": "child"})])
    store.close()
    """
)


@check("SQL-047", capability=Capability.MULTI_PROCESS, also=(Capability.MIGRATION,))
def check_sqlite_processes_share_a_file(ctx: CheckContext) -> None:
    """SQL-047: a process that opens the file by its path appends beside this one: 1..n.

    The child opens the file with the store class and the path, not through a
    locator: SQL-047 is about every process that opens the file (the
    ``convledger`` tools do so). Handles and processes opened through the
    interface are LED-017's, in :mod:`convledger_conformance.ledger.checks_handles`.
    """
    count = 60
    with sqlite_store(ctx, ["SQL-047"]) as store:
        cls = type(store)
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, f"{cls.__module__}:{cls.__qualname__}", store.path,
             str(count)],
            stderr=subprocess.PIPE,
        )
        try:
            for n in range(count):
                store.append("shared", [draft(f"parent-{n}")])
        finally:
            _, err = child.communicate(timeout=300)
        if child.returncode != 0:
            fail("SQL-047", f"the other process failed: {err.decode(errors='replace')}")
        events = store.read("shared", limit=1000).items
        if [e.seq for e in events] != list(range(1, 2 * count + 1)) or len(
            {e.event_id for e in events}
        ) != 2 * count:
            fail("SQL-047", "two processes appending left gaps or repeats")
