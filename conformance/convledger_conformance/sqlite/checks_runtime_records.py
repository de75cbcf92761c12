"""Checks of chapter SQL, runtime part: records, their columns, bounded reads (SQL-051, SQL-054 ..).

Every runtime row holds its canonical TRN record and its columns mirror it
(SQL-051, SQL-054); the bounded reads and a transition's lookups never read
``events`` and search the index the chapter names (SQL-055, SQL-057), judged
by the statements a handle executes and their query plans. The helpers and
what these checks need of the store are those of
:mod:`convledger_conformance.sqlite.checks_runtime`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.runtime.records import Admission, Message, Run
from convledger.runtime.transitions import Accept
from convledger.sqlite import SqliteStore
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import plain
from convledger_conformance.sqlite.checks_runtime import (
    _CONTROL,
    RUNTIME_TABLES,
    Traced,
    active_script,
    applied,
    finished_script,
    runtime_store,
    tracing,
)
from convledger_conformance.support import fail

# -- the records and their columns (SQL-051, SQL-054) -----------------------------------------


COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "heads": (("conversation_id", "conversationId"), ("version", "version")),
    "runs": (("conversation_id", "conversationId"), ("run_id", "runId"),
             ("ordinal", "ordinal"), ("state", "state"), ("updated_at", "updatedAt")),
    "admissions": (("conversation_id", "conversationId"),
                   ("idempotency_key", "idempotencyKey"), ("run_id", "runId"),
                   ("ordinal", "ordinal"), ("admitted_at", "admittedAt")),
    "messages": (("conversation_id", "conversationId"), ("position", "position"),
                 ("message_id", "messageId"), ("active", "active"), ("created_at", "createdAt")),
}
"""Each runtime column and the record member it mirrors (SQL-054, SQL-051 for state)."""


def _runtime_rows(path: str | Path, conversation: str) -> dict[str, list[dict[str, object]]]:
    connection = plain(path)
    connection.row_factory = sqlite3.Row
    try:
        return {
            table: [dict(row) for row in connection.execute(
                f"SELECT * FROM {table} WHERE conversation_id = ? ORDER BY record",
                (conversation,))]
            for table in RUNTIME_TABLES
        }
    finally:
        connection.close()


def _check_rows(store: SqliteStore, conversation: str, last_at: str, what: str) -> None:
    stored = _runtime_rows(store.path, conversation)
    snapshot = store.load_snapshot(conversation)
    export = canonical.decode(store.export_conversation(conversation))
    assert isinstance(export, dict) and isinstance(export["companions"], dict)
    companion = export["companions"].get("runtime")
    assert isinstance(companion, dict)
    expected: dict[str, set[bytes]] = {
        "heads": {canonical.encode(snapshot.head.to_json())},
        "runs": {canonical.encode(item) for item in _list(companion, "runs")},
        "admissions": {canonical.encode(item) for item in _list(companion, "admissions")},
        "messages": {canonical.encode(item) for item in _list(companion, "messages")},
    }
    for table, rows in stored.items():
        records: set[bytes] = set()
        for row in rows:
            text = row["record"]
            if not isinstance(text, str):
                fail("SQL-054", f"{what}: a {table} record is not text")
            value = canonical.decode(text.encode("utf-8"))
            if canonical.encode(value).decode("utf-8") != text:
                fail("SQL-054", f"{what}: a {table} record is not canonical JSON: {text!r}")
            records.add(text.encode("utf-8"))
            assert isinstance(value, dict)
            for column, member in COLUMNS[table]:
                mirrored = value.get(member)
                if isinstance(mirrored, bool):
                    mirrored = int(mirrored)
                if row[column] != mirrored:
                    requirement = "SQL-051" if column == "state" else "SQL-054"
                    fail(requirement, f"{what}: {table}.{column} is {row[column]!r}, its record "
                         f"says {mirrored!r}")
            if table == "heads" and row["updated_at"] != last_at:
                fail("SQL-054", f"{what}: heads.updated_at is {row['updated_at']!r}, not the "
                     f"time of the last transition {last_at!r}")
        if records != expected[table]:
            fail("SQL-054", f"{what}: the {table} records differ from the store's own records")
    for run in snapshot.active_runs:
        if store.load_run(conversation, run.run_id) != run:
            fail("SQL-054", f"{what}: load_run and load_snapshot disagree on {run.run_id!r}")
    for table, parse in (("runs", Run.from_json), ("messages", Message.from_json),
                         ("admissions", Admission.from_json)):
        for text in expected[table]:
            parse(canonical.decode(text))  # records of chapter TRN (TRN-011)


def _list(companion: dict[str, JsonValue], member: str) -> list[JsonValue]:
    value = companion.get(member)
    return value if isinstance(value, list) else []


@check("SQL-051", "SQL-054", capability=Capability.MIGRATION)
def check_sqlite_runtime_records(ctx: CheckContext) -> None:
    """SQL-051, SQL-054: every runtime row holds its canonical TRN record and mirrors it.

    Rows written by transitions and rows written by an import of their export
    hold the store's own records, as canonical JSON, with ``runs.state`` and
    every other column equal to the record's member, and ``heads.updated_at``
    the time of the last transition.
    """
    ids = ("SQL-051", "SQL-054")
    with runtime_store(ctx, ids) as store:
        script = [*finished_script(), *active_script("+")]
        applied(store, "c\x00ü", script, ids)
        last_at = f"2026-02-01T00:00:{len(script):02d}Z"
        _check_rows(store, "c\x00ü", last_at, "after transitions")
        archive = store.export_conversation("c\x00ü")
        with runtime_store(ctx, ids) as target:
            target.import_conversation(archive)
            _check_rows(target, "c\x00ü", last_at, "after an import")
            if _runtime_rows(target.path, "c\x00ü") != _runtime_rows(store.path, "c\x00ü"):
                fail("SQL-054", "an import wrote other rows than the transitions it replays")


# -- bounded reads (SQL-055, SQL-057) -------------------------------------------------------------


_NAMES_EVENTS = re.compile(r"\bevents\b", re.IGNORECASE)
_RUNTIME_TABLE = re.compile(r"\b(heads|runs|admissions|messages)\b", re.IGNORECASE)


def _plans(path: str | Path, statements: Sequence[str]) -> dict[str, list[str]]:
    connection = plain(path)
    try:
        return {sql: [str(row[3]) for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}")]
                for sql in statements}
    finally:
        connection.close()


def _searches_only(plans: dict[str, list[str]], requirement: str, what: str) -> None:
    for sql, plan in plans.items():
        for line in plan:
            if line.startswith("SCAN") and _RUNTIME_TABLE.search(line):
                fail(requirement, f"{what}: {sql!r} scans: {plan!r}")


def _uses(plans: dict[str, list[str]], index: str, requirement: str, what: str) -> None:
    if not any(line.startswith("SEARCH") and re.search(rf"\bINDEX {index}\b", line)
               for plan in plans.values() for line in plan):
        fail(requirement, f"{what}: no statement searched {index}: {plans!r}")


@check("SQL-055", "SQL-057", capability=Capability.MIGRATION)
def check_sqlite_bounded_reads(ctx: CheckContext) -> None:
    """SQL-055, SQL-057: the bounded reads and a transition's lookups are searches, never events.

    The statements each operation really executes (trace callback) must not
    name ``events``, must never be planned as a scan of a runtime table, and
    must search the index the chapter names for them.
    """
    ids = ("SQL-055", "SQL-057")
    with runtime_store(ctx, ids) as store:
        for number in range(4):
            applied(store, f"c-{number}", [*finished_script(), *active_script("+")], ids,
                    prefix=f"p{number}")
        trace: Traced = []
        traced = type(store)(store.path, connection_hook=tracing(trace))
        try:
            reads: list[tuple[str, Callable[[], object], str]] = [
                ("load_run", lambda: traced.load_run("c-1", "r-1+"), ""),
                ("list_active_runs", lambda: traced.list_active_runs("c-1"), "runs_active"),
                ("load_snapshot", lambda: traced.load_snapshot("c-2"), "messages_active"),
                ("scan_recoverable", lambda: traced.scan_recoverable(limit=2), "runs_recoverable"),
            ]
            for name, call, index in reads:
                del trace[:]
                call()
                statements = [sql for sql in trace if not _CONTROL.match(sql)]
                if not statements:
                    fail("SQL-055", f"{name} executed no statement")
                if any(_NAMES_EVENTS.search(sql) for sql in statements):
                    fail("SQL-055", f"{name} read events: {statements!r}")
                plans = _plans(store.path, statements)
                _searches_only(plans, "SQL-055", name)
                if index:
                    _uses(plans, index, "SQL-055", name)
            del trace[:]
            applied(traced, "c-3", [Accept("k-new", "in-new", "r-new", "a-new", {"text": "n"})],
                    ids, prefix="lookup")
            lookups = [sql for sql in trace if "json_extract" in sql and sql.lstrip().upper()
                       .startswith("SELECT")]
            plans = _plans(store.path, lookups)
            _searches_only(plans, "SQL-057", "a transition's identity lookups")
            _uses(plans, "admissions_by_input", "SQL-057", "the admission of an input")
            _uses(plans, "runs_by_assistant", "SQL-057", "the run of an answer")
        finally:
            traced.close()
