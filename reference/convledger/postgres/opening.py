"""Opening a PostgreSQL schema: create, validate or refuse, in one transaction (PGS-020 .. PGS-024).

Opening connects, begins a transaction, takes a transaction-scoped advisory
lock named after the schema (so that two processes opening one new schema at
once do not both create it), reads the catalog, and then:

| the schema                                   | opening   | kind of the refusal |
|----------------------------------------------|-----------|---------------------|
| missing, or without any relation             | creates 1 | —                   |
| version 2, every object as defined           | opens     | —                   |
| version 1, every object as defined           | migrates to 2, then opens | —       |
| a newer version                              | refuses   | ``not_supported``   |
| ``meta`` without a readable version          | refuses   | ``integrity``       |
| relations but no ``meta``                    | refuses   | ``integrity``       |
| an object of its version missing             | refuses   | ``integrity``       |
| an object of its version defined otherwise   | refuses   | ``integrity``       |

A refusal rolls the transaction back, so nothing is created or changed
(PGS-024); the creation, and a migration, commits as a whole or not at all
(PGS-020, PGS-060). A fresh schema is created by one batch of DDL, one round
trip to the server (:func:`convledger.postgres.schema.ddl_batch`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convledger.postgres import rows, schema
from convledger.postgres.errors import (
    AlteredSchemaError,
    PartialSchemaError,
    SchemaTooNewError,
    SchemaVersionError,
    UnversionedSchemaError,
)

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

ADVISORY_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
"""PGS-020: one opener at a time per schema, until its transaction ends."""
READ_VERSION = "SELECT value FROM meta WHERE key = %s"


def open_schema(connection: Connection, name: str) -> str:
    """Create or validate the schema ``name`` in one transaction; ``created`` or ``opened``.

    The connection is in autocommit mode; this begins and ends its own
    transaction and leaves none open.
    """
    connection.execute("BEGIN")
    try:
        outcome = _open(connection, name)
        connection.execute("COMMIT")
    except BaseException:
        rollback(connection)
        raise
    return outcome


def _open(connection: Connection, name: str) -> str:
    connection.execute(ADVISORY_LOCK, (f"convledger.postgres:{name}",))
    relations = tuple(
        str(row[0]) for row in connection.execute(schema.RELATIONS, {"schema": name})
    )
    if not relations:
        create(connection, name)
        return "created"
    if schema.META_TABLE not in relations:
        raise UnversionedSchemaError(
            f"schema {name!r} holds {', '.join(relations)} but no meta table: its version"
            " cannot be known",
            tables=relations,
        )
    version = read_version(connection, name)
    if version > schema.LATEST_VERSION:
        raise SchemaTooNewError(
            f"schema {name!r} is version {version}; this store knows up to"
            f" {schema.LATEST_VERSION}",
            found=version,
            supported=schema.LATEST_VERSION,
        )
    if version not in schema.KNOWN_VERSIONS:
        raise SchemaVersionError(f"schema {name!r} has unknown version {version}",
                                 requirement="PGS-022")
    validate(connection, name, version)
    if version < schema.LATEST_VERSION:
        migrate(connection, name, version)
        return "migrated"
    return "opened"


def create(connection: Connection, name: str) -> None:
    """PGS-020: every object of the latest version and its ``schema_version`` row."""
    from convledger.postgres.driver import psycopg_module

    sql = psycopg_module().sql
    connection.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(name)))
    connection.execute(schema.ddl_batch(schema.LATEST_VERSION).encode("utf-8"))
    connection.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s)",
        (schema.VERSION_KEY, str(schema.LATEST_VERSION)),
    )


MIGRATION_CHUNK = 1000
"""Events read per step while a migration writes their search words."""
EVENTS_AFTER = (
    f"SELECT {rows.COLUMNS} FROM events WHERE (conversation_id, seq) > (%s, %s)"
    " ORDER BY conversation_id, seq LIMIT %s"
)
"""PGS-060: the next events of the whole ledger, in key order (index ``events_pkey``)."""


def migrate(connection: Connection, name: str, version: int) -> None:
    """PGS-060: version 1 to 2 inside the opening transaction: tables, search words, version.

    The caller validated every object of version 1 (PGS-023) and holds the
    advisory lock; a failure at any step rolls all of it back.
    """
    from convledger.postgres import search

    if version != 1:  # pragma: no cover - KNOWN_VERSIONS holds 1 and 2 only
        raise SchemaVersionError(f"no migration from version {version}", requirement="PGS-060")
    for item in schema.V2_ADDED:
        if item.sql:
            connection.execute(item.sql)
    after: tuple[bytes, int] = (b"", 0)
    while True:
        found = connection.execute(EVENTS_AFTER, (*after, MIGRATION_CHUNK)).fetchall()
        search.insert_words(connection, [rows.envelope_of(row) for row in found])
        if len(found) < MIGRATION_CHUNK:
            break
        after = (bytes(found[-1][0]), int(found[-1][1]))
    connection.execute("UPDATE meta SET value = %s WHERE key = %s",
                       (str(schema.LATEST_VERSION), schema.VERSION_KEY))
    validate(connection, name, schema.LATEST_VERSION)


def read_version(connection: Connection, name: str) -> int:
    """PGS-002, PGS-022: the version in ``meta``, a positive decimal integer, or integrity."""
    found = connection.execute(READ_VERSION, (schema.VERSION_KEY,)).fetchone()
    text = None if found is None else found[0]
    if not isinstance(text, str) or not text.isascii() or not text.isdigit() or int(text) < 1:
        raise SchemaVersionError(
            f"schema {name!r}: meta holds no positive decimal schema_version (found {text!r})",
            requirement="PGS-022",
        )
    return int(text)


def problems(connection: Connection, name: str, version: int) -> tuple[list[str], list[str]]:
    """The objects of ``version`` that are missing, and those defined otherwise (PGS-023)."""
    found: dict[tuple[str, str], str] = {}
    for kind, query in schema.SHAPE_QUERIES.items():
        for object_name, shape in connection.execute(query, {"schema": name}):
            found[(kind, str(object_name))] = schema.unqualified(str(shape), name)
    missing, altered = [], []
    for item in schema.VERSIONS[version]:
        shape = found.get((item.type, item.name))
        if shape is None:
            missing.append(f"{item.type} {item.name}")
        elif shape != item.shape:
            altered.append(f"{item.type} {item.name}")
    return missing, altered


def validate(connection: Connection, name: str, version: int) -> None:
    """PGS-023: every object of the version exists with its shape; PGS-006: others are ignored."""
    missing, altered = problems(connection, name, version)
    if missing:
        raise PartialSchemaError(
            f"schema {name!r} (version {version}) lacks {', '.join(missing)}",
            missing=tuple(missing),
        )
    if altered:
        raise AlteredSchemaError(
            f"schema {name!r} (version {version}) defines otherwise {', '.join(altered)}",
            altered=tuple(altered),
        )


def rollback(connection: Connection) -> None:
    """End the open transaction, if the connection still can; a lost one is closed."""
    if connection.closed:
        return
    try:
        connection.execute("ROLLBACK")
    except Exception:
        connection.close()
