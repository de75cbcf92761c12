"""The DDL in ``spec/schemas/postgres-v*.sql`` is the reference's schema and enough (PGS-006).

An implementer reads the spec's DDL files, not ``schema.py``: each must be exactly what
``scripts/write_postgres_ddl.py`` writes from the schema, statement for statement the
reference's ``ddl_batch``, and a schema made by running one file alone, under another
name put in place of ``convledger`` in its first two statements, must open (version 2
as it is, version 1 by migrating, PGS-060), while one changed column is refused
(PGS-023). Every schema made here is dropped, whatever the test's outcome.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conftest import draft
from convledger.errors import IntegrityError
from convledger.postgres import schema

ROOT = Path(__file__).resolve().parent.parent


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "write_postgres_ddl", ROOT / "scripts" / "write_postgres_ddl.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("write_postgres_ddl", module)
    spec.loader.exec_module(module)
    return module


def _text(version: int) -> str:
    return (ROOT / "spec" / "schemas" / f"postgres-v{version}.sql").read_text(encoding="utf-8")


def _statements(text: str) -> list[str]:
    """The file's statements, comments left out: each ends with ';' at the end of a line
    (a function's body holds ';' too, but only inside its dollar quotes)."""
    statements, pending, quoted = [], "", False
    for line in text.splitlines():
        if not pending and (line.startswith("--") or not line.strip()):
            continue
        pending += line + "\n"
        quoted ^= line.count("$$") % 2 == 1
        if not quoted and line.endswith(";"):
            statements.append(pending.strip().removesuffix(";"))
            pending = ""
    assert not pending.strip(), f"an unfinished statement: {pending!r}"
    return statements


def _renamed(text: str, name: str) -> str:
    """The file for a schema named ``name``: the header's rule, its first two statements."""
    quoted = '"' + name.replace('"', '""') + '"'
    renamed = text.replace("CREATE SCHEMA IF NOT EXISTS convledger;",
                           f"CREATE SCHEMA IF NOT EXISTS {quoted};", 1)
    renamed = renamed.replace("SET search_path TO convledger;", f"SET search_path TO {quoted};", 1)
    assert renamed.count(quoted) == 2
    return renamed


@pytest.fixture
def fresh_name(pg_dsn: str) -> Iterator[str]:
    """A schema name no other test uses; the schema is dropped after the test, always."""
    from convledger.postgres import drop_schema

    name = f"convledger_test_ddl_{uuid.uuid4().hex}"
    try:
        yield name
    finally:
        drop_schema(pg_dsn, name)
        psycopg = pytest.importorskip("psycopg")
        with psycopg.connect(pg_dsn, autocommit=True) as connection:
            left = connection.execute(
                "SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
        assert left is None, f"schema {name} was left behind"


def _run(dsn: str, text: str) -> None:
    """The whole file in one transaction on its own connection (PGS-020)."""
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(dsn, autocommit=True) as connection, connection.transaction():
        connection.execute(text.encode("utf-8"))


@pytest.mark.parametrize("version", schema.KNOWN_VERSIONS)
def test_ddl_files_are_what_the_schema_writes(version: int) -> None:
    """The spec's file is the generated one, byte for byte (run the script after a change)."""
    writer = _writer()
    assert writer.ddl_path(version).read_text(encoding="utf-8") == writer.ddl_text(version)


def test_check_mode_agrees() -> None:
    assert _writer().main(["--check"]) == 0


@pytest.mark.parametrize("version", schema.KNOWN_VERSIONS)
def test_statements_are_the_reference_batch(version: int) -> None:
    """PGS-006: the schema and its search_path, then ddl_batch's statements, then meta's row."""
    first, second, *ddl, meta = _statements(_text(version))
    assert (first, second) == ("CREATE SCHEMA IF NOT EXISTS convledger",
                               "SET search_path TO convledger")
    assert [" ".join(sql.split()) for sql in ddl] == [
        " ".join(item.sql.split()) for item in schema.VERSIONS[version] if item.sql]
    assert " ".join(";\n".join(ddl).split()) == " ".join(schema.ddl_batch(version).split())
    assert meta == f"INSERT INTO meta (key, value) VALUES ('schema_version', '{version}')"


@pytest.mark.parametrize("version", schema.KNOWN_VERSIONS)
def test_a_schema_made_from_the_spec_alone_opens(
        pg_dsn: str, fresh_name: str, version: int) -> None:
    """PGS-006, PGS-023, PGS-060: the file alone makes a schema the store opens (v1 migrates)."""
    from convledger.postgres import PostgresStore

    _run(pg_dsn, _renamed(_text(version), fresh_name))
    store = PostgresStore(pg_dsn, schema=fresh_name)
    try:
        assert store.outcome == ("opened" if version == schema.LATEST_VERSION else "migrated")
        store.append("c", [draft("e-1", value="spec ddl")])
        assert [event.event_id for event in store.read("c").items] == ["e-1"]
        assert store.head("c") == 1
    finally:
        store.close()
    reopened = PostgresStore(pg_dsn, schema=fresh_name)
    try:
        assert reopened.outcome == "opened"
    finally:
        reopened.close()


def test_one_changed_column_is_refused(pg_dsn: str, fresh_name: str) -> None:
    """PGS-023: the comparison is real: a column without its NOT NULL is another definition."""
    from convledger.postgres import PostgresStore

    text = _text(2)
    changed = text.replace("\n    upto_seq bigint NOT NULL,", "\n    upto_seq bigint,")
    assert changed.count("\n    upto_seq bigint,") == 1
    _run(pg_dsn, _renamed(changed, fresh_name))
    with pytest.raises(IntegrityError) as refused:
        PostgresStore(pg_dsn, schema=fresh_name)
    assert "table projections" in str(refused.value)
