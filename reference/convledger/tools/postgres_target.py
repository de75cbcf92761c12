"""The PostgreSQL side of ``convledger inspect``, ``export`` and ``import`` (PGS-055).

Where these commands take a database file, they also take a PostgreSQL DSN
(``postgresql://...`` or ``postgres://...``), with ``--schema NAME`` (default
``convledger``) naming the schema of the store. ``export`` and ``inspect``
never create or change anything: a schema that does not exist is refused
with ``not_found``, and ``inspect`` reads the catalog and the rows in one
``REPEATABLE READ READ ONLY`` transaction; ``import`` opens the store as any
caller does, creating the schema or migrating version 1 (PGS-020, PGS-060).
"""

from __future__ import annotations

import re

from convledger.errors import NotFoundError
from convledger.store_interface import LedgerStore

DSN_PREFIXES = ("postgresql://", "postgres://")

COUNT_EVENTS = (
    "SELECT conversation_id, count(*), max(seq) FROM events GROUP BY conversation_id"
    " ORDER BY conversation_id"
)


def is_dsn(target: str) -> bool:
    """Whether a command's DB argument names a PostgreSQL database rather than a file."""
    return target.startswith(DSN_PREFIXES)


def shown_dsn(dsn: str) -> str:
    """The DSN without its password, for reports."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", dsn)


def _schema_exists(dsn: str, schema: str) -> bool:
    from convledger.postgres.driver import psycopg_module
    from convledger.postgres.errors import driver_boundary

    psycopg = psycopg_module()
    with driver_boundary("open"), psycopg.connect(dsn, autocommit=True,
                                                  connect_timeout=5) as connection:
        found = connection.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        return found.fetchone() is not None


def open_store(dsn: str, schema: str, *, create: bool) -> LedgerStore:
    """The store in ``schema`` of ``dsn``; without ``create``, a missing schema is not_found."""
    from convledger.postgres import PostgresStore

    if not create and not _schema_exists(dsn, schema):
        raise NotFoundError(f"no schema {schema!r} in {shown_dsn(dsn)}", requirement="PGS-055")
    return PostgresStore(dsn, schema=schema)


def inspect_schema(dsn: str, schema: str) -> dict[str, object]:
    """PGS-055: version, problems and conversations of one schema, read-only in one snapshot."""
    from convledger.errors import LedgerError
    from convledger.postgres import opening
    from convledger.postgres import schema as objects
    from convledger.postgres.driver import psycopg_module
    from convledger.postgres.errors import (
        SchemaVersionError,
        UnversionedSchemaError,
        driver_boundary,
    )
    from convledger.postgres.rows import text_of

    psycopg = psycopg_module()
    facts: dict[str, object] = {"database": shown_dsn(dsn), "schema": schema}
    problems: list[dict[str, str]] = []
    conversations: list[dict[str, object]] = []
    version: int | None = None
    with driver_boundary("inspect"), psycopg.connect(dsn, autocommit=True,
                                                     connect_timeout=5) as connection:
        connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            connection.execute(psycopg.sql.SQL("SET LOCAL search_path TO {}").format(
                psycopg.sql.Identifier(schema)))
            relations = [str(row[0]) for row in connection.execute(
                objects.RELATIONS, {"schema": schema})]
            if not relations:
                raise NotFoundError(f"no store in schema {schema!r}", requirement="PGS-055")
            try:
                if objects.META_TABLE not in relations:
                    raise UnversionedSchemaError(
                        f"schema {schema!r} has no meta table", tables=tuple(relations))
                version = opening.read_version(connection, schema)
                if version not in objects.KNOWN_VERSIONS:
                    raise SchemaVersionError(f"unknown version {version}",
                                                     requirement="PGS-021")
                opening.validate(connection, schema, version)
            except LedgerError as error:
                problems.append({"kind": error.kind, "requirement": str(error.requirement),
                                 "message": str(error)})
            if not problems:
                conversations = [
                    {"conversationId": text_of(cid), "events": int(count), "headSeq": int(head)}
                    for cid, count, head in connection.execute(COUNT_EVENTS)
                ]
        finally:
            connection.execute("ROLLBACK")
    facts.update(schemaVersion=version, latestVersion=objects.LATEST_VERSION, problems=problems,
                 conversations=conversations)
    return facts
