"""``convledger export DB CONVERSATION [-o FILE]`` and ``convledger import DB FILE``.

``export`` writes the canonical archive of one conversation (ARC-001), read in
one read transaction (SQL-045), to FILE or standard output. It opens the
database read-only, so a version 1 file is refused (run ``convledger migrate``
first). Conversation ids may hold characters a command line cannot carry
(NUL); ``--json-id`` reads CONVERSATION as a JSON string literal instead.

``import`` reads an archive from FILE (``-`` for standard input) and writes
it into DB, creating the file when it does not exist and migrating a version 1
file (SQL-030).

DB may also be a PostgreSQL DSN (``postgresql://...``), with ``--schema``
naming the store's schema (PGS-055): ``export`` then refuses a schema that
does not exist with ``not_found``; ``import`` creates it.

Exit status: 0 success; 2 a refused archive, id or conversation (the error
kind is printed: ``not_found``, ``conflict``, ``duplicate``, ``invalid_input``
...); 3 the database or a file could not be opened, read or written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from convledger.errors import InvalidInputError, LedgerError
from convledger.sqlite.store import SqliteStore
from convledger.sqlite.tooling import (
    EXIT_OK,
    report_os_error,
    report_refusal,
    shown,
)
from convledger.store_interface import LedgerStore
from convledger.tools import postgres_target


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` and ``import`` subcommands."""
    export = subparsers.add_parser(
        "export",
        help="write the canonical archive of one conversation",
        description=(
            "Write the canonical archive of CONVERSATION in DB to FILE or standard output. "
            "Exit 0 on success, 2 when refused (e.g. not_found), 3 when DB cannot be opened."
        ),
    )
    export.add_argument("database", metavar="DB",
                        help="the SQLite database file, or a PostgreSQL DSN")
    export.add_argument("--schema", default="convledger",
                        help="with a DSN: the schema of the store (default: convledger)")
    export.add_argument("conversation", metavar="CONVERSATION", help="the conversation id")
    export.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    export.add_argument(
        "--json-id", action="store_true", help="CONVERSATION is a JSON string literal"
    )
    export.set_defaults(run=run_export)
    load = subparsers.add_parser(
        "import",
        help="import an archive into a database",
        description=(
            "Import the archive in FILE (- for standard input) into DB, which must not hold "
            "that conversation yet. Exit 0 on success, 2 when the archive is refused, 3 when "
            "DB or FILE cannot be opened."
        ),
    )
    load.add_argument("database", metavar="DB",
                      help="the SQLite database file, or a PostgreSQL DSN")
    load.add_argument("--schema", default="convledger",
                      help="with a DSN: the schema of the store (default: convledger)")
    load.add_argument("archive", metavar="FILE", help="the archive file, or - for stdin")
    load.set_defaults(run=run_import)


def run_export(args: argparse.Namespace) -> int:
    """Export one conversation; return the exit code."""
    try:
        conversation_id = _conversation_id(args.conversation, as_json=args.json_id)
        store = _open(args, create=False)
        try:
            data = store.export_conversation(conversation_id)
        finally:
            store.close()
    except LedgerError as error:
        return report_refusal("export", error)
    try:
        if args.output is None:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            with open(args.output, "wb") as file:
                file.write(data)
    except OSError as error:
        return report_os_error("export", f"write {args.output or 'standard output'}", error)
    return EXIT_OK


def run_import(args: argparse.Namespace) -> int:
    """Import one archive; return the exit code."""
    try:
        if args.archive == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.archive, "rb") as file:
                data = file.read()
    except OSError as error:
        return report_os_error("import", f"read {args.archive}", error)
    created = not postgres_target.is_dsn(args.database) and not Path(args.database).exists()
    try:
        store = _open(args, create=True)
        try:
            report = store.import_conversation(data)
        finally:
            store.close()
    except LedgerError as error:
        if created:  # a refused import into a new file leaves no file behind (ERR-004)
            _remove_database(Path(args.database))
        return report_refusal("import", error)
    print(
        f"imported {report.events} events of conversation {shown(report.conversation_id)} "
        f"into {_shown_target(args)} (head seq {report.head_seq})"
    )
    return EXIT_OK


def _remove_database(path: Path) -> None:
    """Remove a database file this command created, with its WAL and shared-memory files."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _open(args: argparse.Namespace, *, create: bool) -> LedgerStore:
    """The store DB names: a SQLite file (read-only for export) or a PostgreSQL schema."""
    if postgres_target.is_dsn(args.database):
        return postgres_target.open_store(args.database, args.schema, create=create)
    return SqliteStore(args.database, read_only=not create)


def _shown_target(args: argparse.Namespace) -> str:
    if postgres_target.is_dsn(args.database):
        return f"{postgres_target.shown_dsn(args.database)} schema {args.schema}"
    return str(args.database)


def _conversation_id(text: str, *, as_json: bool) -> str:
    if not as_json:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, str):
        raise InvalidInputError(
            f"--json-id needs a JSON string literal, got {text!r}",
            requirement="ENV-005",
            field="conversationId",
        )
    return value
