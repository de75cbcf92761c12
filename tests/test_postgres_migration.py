"""Schema version 1 to 2 of the PostgreSQL store, in the opening transaction (PGS-060).

A version 1 schema is made the way the first slice made it (its DDL, from
``schema.V1_OBJECTS``, and its events written row by row), then opened by
the store: it migrates, the events keep their bytes and become searchable.
A version 1 schema that lacks an object, and a version 2 schema that lacks
one of the objects version 2 added, are refused with ``integrity`` and left
exactly as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conftest import draft
from convledger.envelope import Envelope
from convledger.errors import LedgerError

psycopg = pytest.importorskip("psycopg")

from convledger.postgres import PostgresStore, drop_schema, opening, rows, schema  # noqa: E402


@pytest.fixture
def v1(pg_dsn: str) -> Iterator[tuple[str, str, Any]]:
    """A version 1 schema holding two conversations, and a raw connection to it."""
    name = f"convledger_test_v1_{id(object()):x}"
    connection = psycopg.connect(pg_dsn, autocommit=True)
    connection.execute(psycopg.sql.SQL("CREATE SCHEMA {}").format(psycopg.sql.Identifier(name)))
    connection.execute(psycopg.sql.SQL("SET search_path TO {}").format(
        psycopg.sql.Identifier(name)))
    for item in schema.V1_OBJECTS:
        if item.sql:
            connection.execute(item.sql)
    connection.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    placed = [  # 1200 events: more than one migration chunk
        rows.event_row(Envelope.from_draft(
            draft(f"{cid}-{seq}", value=f"needle{seq % 7} haystack"), cid, seq))
        for cid in ("alpha", "beta\x00") for seq in range(1, 601)
    ]
    with connection.transaction(), connection.cursor() as cursor:
        cursor.executemany(rows.INSERT_EVENT, placed)
    yield pg_dsn, name, connection
    connection.close()
    drop_schema(pg_dsn, name)


def catalog(connection: Any, name: str) -> list[tuple[str, str]]:
    found = connection.execute(
        "SELECT c.relname, c.relkind::text FROM pg_class c JOIN pg_namespace n"
        " ON n.oid = c.relnamespace WHERE n.nspname = %s ORDER BY 1", (name,))
    return [(str(a), str(b)) for a, b in found]


def test_version_1_migrates_to_2_in_the_opening_transaction(v1: tuple[str, str, Any]) -> None:
    """PGS-060: tables, search words of every stored event and the version, then opened."""
    dsn, name, connection = v1
    before = [bytes(row[0]) for row in connection.execute(
        "SELECT payload::bytea FROM events ORDER BY conversation_id, seq")]
    store = PostgresStore(dsn, schema=name)
    try:
        assert store.outcome == "migrated"
        assert connection.execute("SELECT value FROM meta").fetchall() == [("2",)]
        assert opening.problems(connection, name, 2) == ([], [])
        assert connection.execute("SELECT count(*) FROM search_words").fetchone() == (1200,)
        after = [bytes(row[0]) for row in connection.execute(
            "SELECT payload::bytea FROM events ORDER BY conversation_id, seq")]
        assert after == before
        own = [seq for seq in range(600, 0, -1) if seq % 7 == 3]
        hits = store.search("alpha", "needle3", limit=50, authorize=lambda cid: True)
        assert [(hit.conversation_id, hit.seq) for hit in hits] == [("alpha", s) for s in own[:50]]
        page = store.search("alpha", "needle3 HAYSTACK", limit=100, scope=["beta\x00"],
                            authorize=lambda cid: True)
        assert [(hit.conversation_id, hit.seq) for hit in page] == [
            ("alpha", s) for s in own] + [("beta\x00", s) for s in own[:100 - len(own)]]
        assert store.read("beta\x00", limit=3).items[2].seq == 3
    finally:
        store.close()
    reopened = PostgresStore(dsn, schema=name)
    assert reopened.outcome == "opened"
    reopened.close()


@pytest.mark.parametrize("statement", [
    "DROP INDEX runs_active",
    "ALTER TABLE events DROP COLUMN ignorable",
])
def test_a_partial_version_1_is_refused_and_not_migrated(
    v1: tuple[str, str, Any], statement: str
) -> None:
    """PGS-060, PGS-023, PGS-024: integrity, and nothing of version 2 is created."""
    dsn, name, connection = v1
    connection.execute(statement)
    before = catalog(connection, name)
    with pytest.raises(LedgerError) as caught:
        PostgresStore(dsn, schema=name)
    assert caught.value.kind == "integrity" and caught.value.requirement == "PGS-023"
    assert catalog(connection, name) == before
    assert connection.execute("SELECT value FROM meta").fetchall() == [("1",)]


@pytest.mark.parametrize("statement", [
    "DROP INDEX search_words_gin",
    "DROP TABLE spills",
    "ALTER TABLE projections ALTER COLUMN state DROP NOT NULL",
])
def test_a_partial_version_2_is_refused(v1: tuple[str, str, Any], statement: str) -> None:
    """PGS-060, PGS-023: an object version 2 added, missing or altered, is integrity."""
    dsn, name, connection = v1
    PostgresStore(dsn, schema=name).close()
    connection.execute(statement)
    before = catalog(connection, name)
    with pytest.raises(LedgerError) as caught:
        PostgresStore(dsn, schema=name)
    assert caught.value.kind == "integrity" and caught.value.requirement == "PGS-023"
    assert catalog(connection, name) == before


def test_a_failing_migration_rolls_back_whole(v1: tuple[str, str, Any]) -> None:
    """PGS-060: a migration that fails half-way leaves version 1 exactly as it was."""
    dsn, name, connection = v1
    # an object of another version 2 name in the way: CREATE TABLE spills fails mid-migration
    connection.execute("CREATE TABLE spills (x int)")
    before = catalog(connection, name)
    with pytest.raises(LedgerError):
        PostgresStore(dsn, schema=name)
    assert catalog(connection, name) == before
    assert connection.execute("SELECT value FROM meta").fetchall() == [("1",)]
