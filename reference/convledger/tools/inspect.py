"""``convledger inspect DB [--json]``: what a database file holds, read-only.

Reports the schema version, page size and journal mode, the FTS5 status
(``ok``, ``unavailable``, ``partial``, ``unknown``, or ``absent`` before
version 2; versions 2 to 4 have it), every problem an open would refuse
with (SQL-012 .. SQL-019), for a version 4 file the events waiting in
``search_pending`` for their index row and the pending rows that name no event
(SQL-073 .. SQL-075; ``null`` before version 4 or when the file has problems), and
each conversation with its event count and head seq. A version 1 file lists
its conversations from ``heads``; they have no events until it migrates.

DB may also be a PostgreSQL DSN (``postgresql://...``) with ``--schema``
(PGS-055): the schema's version, its problems and its conversations, read in
one read-only snapshot.

The file is opened read-only and never changed. Exit status: 0 when the file
is a valid database of a known version, 1 when it has problems, 3 when it
cannot be opened (not a database, missing).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3

from convledger.errors import LedgerError
from convledger.sqlite import rows, schema
from convledger.sqlite.errors import StorageFailureError, driver_boundary
from convledger.sqlite.opening import Diagnosis, Settings, connect, diagnose, rollback
from convledger.sqlite.tooling import EXIT_OK, EXIT_PROBLEMS, report_refusal, shown
from convledger.tools import postgres_target


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``inspect`` subcommand."""
    parser = subparsers.add_parser(
        "inspect",
        help="show the schema version, FTS5 status and conversations of a database",
        description=(
            "Open DB read-only and report its schema version, FTS5 status, problems, the "
            "events pending in the search index and pending rows naming no event, and its "
            "conversations (events, head seq). Exit 0 when valid, 1 when it has problems, "
            "3 when it cannot be opened."
        ),
    )
    parser.add_argument("database", metavar="DB",
                        help="the SQLite database file, or a PostgreSQL DSN")
    parser.add_argument("--schema", default="convledger",
                        help="with a DSN: the schema of the store (default: convledger)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Inspect ``args.database``; return the exit code."""
    try:
        if postgres_target.is_dsn(args.database):
            facts = postgres_target.inspect_schema(args.database, args.schema)
        else:
            facts = inspect_database(args.database)
    except LedgerError as error:
        return report_refusal("inspect", error)
    if args.json:
        print(json.dumps(facts, ensure_ascii=False, indent=2, sort_keys=True))
    else:
        for line in describe(facts):
            print(line)
    return EXIT_PROBLEMS if facts["problems"] else EXIT_OK


def inspect_database(path: str) -> dict[str, object]:
    """Everything the report shows, read in one read transaction."""
    if not os.path.isfile(path):
        raise StorageFailureError(f"no database file at {path!r}", requirement="ERR-006")
    with driver_boundary(f"inspect {path}"):
        connection = connect(Settings(path=path, read_only=True))
        try:
            connection.execute("BEGIN")
            try:
                return _facts(connection, path, diagnose(connection))
            finally:
                rollback(connection)
        finally:
            connection.close()


def _facts(connection: sqlite3.Connection, path: str, diagnosis: Diagnosis) -> dict[str, object]:
    healthy = not diagnosis.problems
    return {
        "database": path,
        "schemaVersion": diagnosis.version,
        "latestVersion": schema.LATEST_VERSION,
        "pageSize": connection.execute("PRAGMA page_size").fetchone()[0],
        "journalMode": connection.execute("PRAGMA journal_mode").fetchone()[0],
        "fts5": diagnosis.fts_status,
        "problems": [
            {"kind": problem.kind, "requirement": problem.requirement, "message": problem.message}
            for problem in diagnosis.problems
        ],
        "conversations": _conversations(connection, diagnosis.version) if healthy else [],
        **_pending(connection, diagnosis.version if healthy else None),
    }


def _pending(connection: sqlite3.Connection, version: int | None) -> dict[str, int | None]:
    """SQL-073 .. SQL-075: the events waiting for their index row, and the rows of
    ``search_pending`` naming no event (a search ignores them); ``None`` when not read."""
    if version is None or version < 4:
        return {"searchPending": None, "searchPendingOrphans": None}
    pending, orphans = connection.execute(rows.PENDING_COUNTS).fetchone()
    return {"searchPending": int(pending), "searchPendingOrphans": int(orphans)}


def _conversations(connection: sqlite3.Connection, version: int | None) -> list[dict[str, object]]:
    if version == 1:
        heads = connection.execute("SELECT conversation_id FROM heads ORDER BY conversation_id")
        return [{"conversationId": row[0], "events": 0, "headSeq": 0} for row in heads]
    found: list[dict[str, object]] = []
    after = ""
    while (row := connection.execute(rows.NEXT_CONVERSATION, (after,)).fetchone()) is not None:
        after = row[0]
        count, head = connection.execute(rows.COUNT_EVENTS, (after,)).fetchone()
        found.append({"conversationId": after, "events": count, "headSeq": head})
    return found


def describe(facts: dict[str, object]) -> list[str]:
    """The text report, one fact per line."""
    version = facts["schemaVersion"]
    latest = facts["latestVersion"]  # the engine's: SQLite's (SQL-002) or PostgreSQL's (PGS-002)
    assert isinstance(latest, int)
    note = "" if not isinstance(version, int) or version > latest else (
        " (current)" if version == latest
        else f" (migrates to {latest} when opened for writing)")
    lines = [
        f"database: {facts['database']}",
        f"schema version: {version if version is not None else 'none'}{note}",
    ]
    if "schema" in facts:  # a PostgreSQL schema (PGS-055)
        lines.insert(1, f"schema: {facts['schema']}")
    else:
        lines += [
            f"page size: {facts['pageSize']} bytes; journal mode: {facts['journalMode']}",
            f"fts5: {facts['fts5']}",
            _pending_line(facts),
        ]
    problems = facts["problems"]
    assert isinstance(problems, list)
    lines.append(f"problems: {len(problems) or 'none'}")
    lines.extend(f"  {p['kind']} ({p['requirement']}): {p['message']}" for p in problems)
    conversations = facts["conversations"]
    assert isinstance(conversations, list)
    lines.append(f"conversations: {len(conversations)}")
    lines.extend(
        f"  {shown(item['conversationId'])}: {item['events']} events, head seq {item['headSeq']}"
        for item in conversations
    )
    return lines


def _pending_line(facts: dict[str, object]) -> str:
    """The text line of the search index's pending rows (SQL-073 .. SQL-075)."""
    pending, orphans = facts["searchPending"], facts["searchPendingOrphans"]
    if pending is None:
        return "search pending: not read (no search_pending before version 4, or problems)"
    return f"search pending: {pending} events; orphan rows (naming no event): {orphans}"
