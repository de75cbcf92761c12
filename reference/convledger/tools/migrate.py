"""``convledger migrate DB [--dry-run]``: migrate a version 1, 2 or 3 database to version 4.

Opening a version 1, 2 or 3 file for writing migrates it anyway (SQL-030); this tool
does it explicitly and says what happened. ``--dry-run`` runs the same
migration inside a write transaction and rolls it back, so it proves the
migration would succeed and reports what it would write, while the file stays
byte for byte as it was (it needs the write lock, as the migration would).

Exit status: 0 when the file is (or would be) at version 4, 2 when a version 1
row cannot migrate (SQL-037 is reported as ``integrity``), 3 when the file
cannot be opened, is refused (SQL-012 .. SQL-021), or does not exist.
"""

from __future__ import annotations

import argparse
import os

from convledger.errors import LedgerError
from convledger.kinds import default_registry
from convledger.sqlite import schema
from convledger.sqlite.errors import StorageFailureError, driver_boundary
from convledger.sqlite.migration import MigrationReport
from convledger.sqlite.migration import migrate as migrate_connection
from convledger.sqlite.opening import Settings, connect, diagnose, rollback
from convledger.sqlite.store import SqliteStore
from convledger.sqlite.tooling import EXIT_OK, report_refusal, shown


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``migrate`` subcommand."""
    parser = subparsers.add_parser(
        "migrate",
        help="migrate a schema version 1 database to version 2",
        description=(
            "Migrate DB from schema version 1 to 2 in one transaction (one runtime/baseline "
            "event per conversation). --dry-run reports what would change and writes nothing. "
            "Exit 0 on success, 2 when rows cannot migrate, 3 when the file cannot be opened."
        ),
    )
    parser.add_argument("database", metavar="DB", help="the SQLite database file")
    parser.add_argument(
        "--dry-run", action="store_true", help="run the migration, roll it back, report it"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Migrate (or dry-run) ``args.database``; return the exit code."""
    path = args.database
    try:
        if not os.path.isfile(path):
            raise StorageFailureError(f"no database file at {path!r}", requirement="ERR-006")
        if args.dry_run:
            version, report = dry_run(path)
        else:
            version, report = migrate(path)
    except LedgerError as error:
        return report_refusal("migrate", error)
    for line in describe(path, version, report, dry=args.dry_run):
        print(line)
    return EXIT_OK


def migrate(path: str) -> tuple[int, MigrationReport | None]:
    """Open the file for writing, which migrates it; the version found and the report."""
    store = SqliteStore(path)
    try:
        report = store.migration
        found = schema.LATEST_VERSION if report is None else report.from_version
        return found, report
    finally:
        store.close()


def dry_run(path: str) -> tuple[int, MigrationReport | None]:
    """Migrate inside a transaction, then roll back: the version found and the report."""
    with driver_boundary(f"migrate --dry-run {path}"):
        connection = connect(Settings(path=path))
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                diagnosis = diagnose(connection)
                if diagnosis.problems:
                    raise diagnosis.problems[0]
                if diagnosis.empty or diagnosis.version is None:
                    raise StorageFailureError(
                        f"{path!r} is an empty database, not a version 1 one",
                        requirement="SQL-010",
                    )
                if diagnosis.version is None or diagnosis.version >= schema.LATEST_VERSION:
                    return schema.LATEST_VERSION, None
                registry = default_registry()
                settings = Settings(path=path)
                report = migrate_connection(
                    connection,
                    from_version=diagnosis.version,
                    registry=registry,
                    clock=settings.clock,
                    new_event_id=settings.new_event_id,
                )
                return report.from_version, report
            finally:
                rollback(connection)
        finally:
            connection.close()


def describe(path: str, version: int, report: MigrationReport | None, *, dry: bool) -> list[str]:
    """The report, one fact per line."""
    if report is None:
        return [f"{path}: already at schema version {version}; nothing to do"]
    verb = "would migrate" if dry else "migrated"
    if report.from_version in (2, 3):
        lines = [f"{path}: {verb} schema version {report.from_version} to {schema.LATEST_VERSION}"]
        if report.from_version == 2:
            lines.append(
                f"  trigger {'to drop' if dry else 'dropped'}: {schema.FTS_INSERT_TRIGGER.name}"
                " (the store indexes each event itself, SQL-070)")
        lines.append(
            f"  table {'to create' if dry else 'created'}: {schema.PENDING_TABLE.name}"
            " (events waiting for their index row, SQL-073)")
        if dry:
            lines.append("  dry run: nothing was written")
        return lines
    added = schema.V2_LEDGER + schema.V2_RUNTIME + schema.V4_OBJECTS
    created = ", ".join(item.name for item in added if item.type == "table")
    lines = [
        f"{path}: {verb} schema version 1 to {schema.LATEST_VERSION}",
        f"  tables {'to create' if dry else 'created'}: {created}, {schema.FTS_TABLE.name}",
        f"  conversations: {len(report.conversations)}, each with one runtime/baseline event "
        f"at seq 1 dated {report.migrated_at}",
    ]
    lines.extend(f"    {shown(conversation)}" for conversation in report.conversations)
    if dry:
        lines.append("  dry run: nothing was written")
    return lines
