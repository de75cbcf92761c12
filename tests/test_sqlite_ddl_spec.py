"""The DDL in ``spec/schemas/sqlite-v*.sql`` is the reference's schema, and it is enough (SQL-011).

An implementer reads the spec's DDL files, not ``schema.py``: each must be exactly what
``scripts/write_sqlite_ddl.py`` writes from the schema, statement for statement equal to it
after SQL-011's normalization, and a database made by running one file alone must open
(version 4 as it is, versions 1 to 3 by migrating), while one changed column is refused.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import draft
from convledger.errors import IntegrityError
from convledger.sqlite import SqliteStore, schema

ROOT = Path(__file__).resolve().parent.parent


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "write_sqlite_ddl", ROOT / "scripts" / "write_sqlite_ddl.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("write_sqlite_ddl", module)
    spec.loader.exec_module(module)
    return module


def _statements(text: str) -> list[str]:
    """The file's statements, whole (a trigger's body holds ';' too), comments left out."""
    statements, pending = [], ""
    for line in text.splitlines():
        if not pending and (line.startswith("--") or not line.strip()):
            continue
        pending += line + "\n"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().removesuffix(";"))
            pending = ""
    assert not pending.strip(), f"an unfinished statement: {pending!r}"
    return statements


def _database_from(path: Path, text: str) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(f"PRAGMA page_size = {schema.NEW_FILE_PAGE_SIZE}")
    connection.executescript("BEGIN;\n" + text + "\nCOMMIT;")
    connection.close()


def _version(path: Path) -> str:
    connection = sqlite3.connect(path)
    try:
        row = connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return str(row[0])
    finally:
        connection.close()


@pytest.mark.parametrize("version", schema.KNOWN_VERSIONS)
def test_ddl_files_are_what_the_schema_writes(version: int) -> None:
    """The spec's file is the generated one, byte for byte (run the script after a change)."""
    writer = _writer()
    assert writer.ddl_path(version).read_text(encoding="utf-8") == writer.ddl_text(version)


def test_check_mode_agrees() -> None:
    assert _writer().main(["--check"]) == 0


@pytest.mark.parametrize("version", schema.KNOWN_VERSIONS)
def test_statements_equal_the_schema_after_normalization(version: int) -> None:
    """SQL-011: each statement normalizes to the schema's, in order; then the meta row."""
    text = (ROOT / "spec" / "schemas" / f"sqlite-v{version}.sql").read_text(encoding="utf-8")
    *ddl, meta = _statements(text)
    assert [schema.normalize_sql(sql) for sql in ddl] == [
        schema.normalize_sql(sql) for sql in schema.creation_script(version)]
    assert meta == f"INSERT INTO meta (key, value) VALUES ('schema_version', '{version}')"


@pytest.mark.parametrize("version", schema.KNOWN_VERSIONS)
def test_a_database_made_from_the_spec_alone_opens(tmp_path: Path, version: int) -> None:
    """SQL-010, SQL-011: the file alone makes a database the store opens (older: migrates)."""
    path = tmp_path / f"v{version}.db"
    _database_from(path, (ROOT / "spec" / "schemas" / f"sqlite-v{version}.sql").read_text())
    store = SqliteStore(path)
    try:
        store.append("c", [draft("e-1", value="spec ddl")])
        assert [hit.seq for hit in store.search("c", "ddl")] == [1]
        assert store.head("c") == 1
    finally:
        store.close()
    assert _version(path) == str(schema.LATEST_VERSION)


def test_one_changed_column_is_refused(tmp_path: Path) -> None:
    """SQL-016: the comparison is real: a column without its NOT NULL is another definition."""
    text = (ROOT / "spec" / "schemas" / "sqlite-v4.sql").read_text()
    changed = text.replace("seq INTEGER NOT NULL)", "seq INTEGER)")
    assert changed != text
    path = tmp_path / "changed.db"
    _database_from(path, changed)
    with pytest.raises(IntegrityError) as refused:
        SqliteStore(path)
    assert "search_pending" in str(refused.value)


@pytest.mark.parametrize(("spelled", "plain"), [
    ("CREATE TABLE t ( a INT ,\n\tb INT )", "CREATE TABLE t(a INT,b INT)"),
    ("  CREATE   INDEX i ON t (a)  ", "CREATE INDEX i ON t(a)"),
    ("CREATE TABLE t(a TEXT DEFAULT ' x ')", "CREATE TABLE t(a TEXT DEFAULT ' x ')"),
])
def test_normalization_is_the_rule_sql_011_states(spelled: str, plain: str) -> None:
    """SQL-011: trim, one space for each run of white space, none beside '(' ')' ','."""
    assert schema.normalize_sql(spelled) == schema.normalize_sql(plain)
