"""Opening an SQLite file: create, validate, refuse (spec chapter sqlite.md, SQL-010 .. SQL-022).

Every refusal test hashes the file before and after: a refused open leaves it
byte-identical (SQL-022).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import draft
from convledger.errors import LedgerError
from convledger.sqlite import (
    AlteredSchemaError,
    Fts5PartialError,
    Fts5UnavailableError,
    Fts5UnknownError,
    NotADatabaseError,
    PartialSchemaError,
    ReadOnlyDatabaseError,
    SchemaTooNewError,
    SchemaVersionError,
    SqliteStore,
    UnversionedSchemaError,
)
from convledger.sqlite.fixtures import deny_fts5, execute_raw, file_digest, write_v1_database
from convledger.sqlite.opening import diagnose
from convledger.sqlite.schema import FTS_INSERT_TRIGGER, LATEST_VERSION


@pytest.fixture
def v2_file(tmp_path: Path) -> Iterator[Path]:
    """A valid version 2 file holding one event, closed."""
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(path)
    store.append("c", [draft("e1")])
    store.close()
    yield path


def refuse_unchanged(
    path: Path, error: type[LedgerError], kind: str, **options: object
) -> LedgerError:
    """Open ``path``; expect ``error`` of ``kind``; prove the file did not change."""
    before = file_digest(path)
    with pytest.raises(error) as caught:
        SqliteStore(path, **options)  # type: ignore[arg-type]
    assert caught.value.kind == kind
    assert file_digest(path) == before
    return caught.value


# -- creating and opening ------------------------------------------------------------


def test_missing_file_is_created_at_the_latest_version(tmp_path: Path) -> None:
    """SQL-010: a missing file is created at schema version 4 with 16 KiB pages and WAL."""
    path = tmp_path / "new.sqlite"
    store = SqliteStore(path)
    assert store.outcome == "created"
    store.close()
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() \
        == (str(LATEST_VERSION),)
    assert connection.execute("PRAGMA page_size").fetchone() == (16384,)
    assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    connection.close()


def test_the_fts5_probe_runs_before_the_page_size_is_set(tmp_path: Path) -> None:
    """SQL-010, SQL-017 (issue 34): the file gets 16 KiB pages, the ``temp`` schema of the
    FTS5 probe SQLite's default ones (its probe costs half the CPU so); the probe comes
    first among the statements of the open and still refuses a connection without FTS5."""
    seen: list[str] = []

    class Tracing(sqlite3.Connection):
        def execute(self, sql: str, parameters: object = (), /) -> sqlite3.Cursor:
            seen.append(sql)
            return super().execute(sql, parameters)  # type: ignore[arg-type]

    store = SqliteStore(tmp_path / "new.sqlite", connection_factory=Tracing)
    try:
        connection = store._connection
        assert connection.execute("PRAGMA main.page_size").fetchone() == (16384,)
        default = sqlite3.connect(":memory:").execute("PRAGMA page_size").fetchone()
        assert connection.execute("PRAGMA temp.page_size").fetchone() == default
    finally:
        store.close()
    probe = next(i for i, sql in enumerate(seen) if "convledger_fts5_probe" in sql)
    assert probe < seen.index("PRAGMA page_size = 16384") < seen.index("BEGIN IMMEDIATE")
    refused = tmp_path / "refused.sqlite"
    with pytest.raises(Fts5UnavailableError):
        SqliteStore(refused, connection_hook=deny_fts5)
    assert not refused.exists()  # SQL-022


def test_empty_file_is_created_at_version_2(tmp_path: Path) -> None:
    """SQL-010: an existing empty file gets the version 2 schema."""
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    store = SqliteStore(path)
    assert store.outcome == "created"
    assert store.append("c", [draft("e")])[0].seq == 1
    store.close()


def test_valid_version_2_file_opens_without_change_of_data(v2_file: Path) -> None:
    """SQL-011: a valid version 2 file opens as it is and serves its ledger."""
    store = SqliteStore(v2_file)
    assert store.outcome == "opened"
    assert store.head("c") == 1
    store.close()


def test_schema_with_other_whitespace_still_opens(tmp_path: Path) -> None:
    """SQL-011: only white space may differ from the definitions."""
    path = tmp_path / "spaced.sqlite"
    SqliteStore(path).close()
    execute_raw(path, [
        "PRAGMA writable_schema = ON",
        "UPDATE sqlite_master SET sql = replace(sql, ' ', '   ') WHERE name = 'projections'",
    ])
    store = SqliteStore(path)
    assert store.outcome == "opened"
    store.close()


def test_diagnosis_of_a_valid_file_has_no_problem(v2_file: Path) -> None:
    """SQL-011: diagnose reports version 2, FTS5 ok and no problem for a valid file."""
    connection = sqlite3.connect(v2_file)
    diagnosis = diagnose(connection)
    connection.close()
    assert (diagnosis.version, diagnosis.problems, diagnosis.fts_status) == (4, (), "ok")


# -- refusals of the schema -----------------------------------------------------------


def test_newer_version_is_refused_unchanged(v2_file: Path) -> None:
    """SQL-012: a newer schema version is refused as not_supported, file unchanged."""
    execute_raw(v2_file, ["UPDATE meta SET value = '5' WHERE key = 'schema_version'"])
    error = refuse_unchanged(v2_file, SchemaTooNewError, "not_supported")
    assert isinstance(error, SchemaTooNewError)
    assert (error.found, error.supported) == (5, 4)


@pytest.mark.parametrize("value", ["two", "0", "-1", "2.0", " 2"])
def test_unreadable_version_is_refused_unchanged(v2_file: Path, value: str) -> None:
    """SQL-013: a schema_version that is not a positive decimal integer is refused."""
    execute_raw(v2_file, [f"UPDATE meta SET value = '{value}' WHERE key = 'schema_version'"])
    refuse_unchanged(v2_file, SchemaVersionError, "integrity")


def test_missing_version_row_is_refused_unchanged(v2_file: Path) -> None:
    """SQL-013: a meta table without schema_version is refused."""
    execute_raw(v2_file, ["DELETE FROM meta"])
    refuse_unchanged(v2_file, SchemaVersionError, "integrity")


def test_tables_without_meta_are_refused_unchanged(tmp_path: Path) -> None:
    """SQL-014: tables but no meta table: unversioned, refused, file unchanged."""
    path = tmp_path / "foreign.sqlite"
    execute_raw(path, ["CREATE TABLE events (x)", "CREATE TABLE heads (y)"])
    error = refuse_unchanged(path, UnversionedSchemaError, "integrity")
    assert isinstance(error, UnversionedSchemaError)
    assert error.tables == ("events", "heads")


@pytest.mark.parametrize("name", ["events_by_event_id", "spills", "events_are_immutable"])
def test_missing_core_object_is_refused_unchanged(v2_file: Path, name: str) -> None:
    """SQL-015: a missing table, index or trigger is refused and named."""
    kind = {"events_by_event_id": "INDEX", "spills": "TABLE"}.get(name, "TRIGGER")
    execute_raw(v2_file, [f"DROP {kind} {name}"])
    error = refuse_unchanged(v2_file, PartialSchemaError, "integrity")
    assert isinstance(error, PartialSchemaError)
    assert error.missing == (name,)


def test_missing_version_1_table_is_refused_unchanged(tmp_path: Path) -> None:
    """SQL-015: a version 1 file without one of its tables is refused before migrating."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    execute_raw(path, ["DROP TABLE admissions"])
    error = refuse_unchanged(path, PartialSchemaError, "integrity")
    assert isinstance(error, PartialSchemaError)
    assert error.missing == ("admissions",)


def test_altered_table_is_refused_unchanged(v2_file: Path) -> None:
    """SQL-016: a table with another definition (an extra column) is refused."""
    execute_raw(v2_file, ["ALTER TABLE schedules ADD COLUMN extra TEXT"])
    error = refuse_unchanged(v2_file, AlteredSchemaError, "integrity")
    assert isinstance(error, AlteredSchemaError)
    assert error.altered == ("schedules",)


def test_version_1_file_with_version_2_objects_is_refused_unchanged(tmp_path: Path) -> None:
    """SQL-016: a version 1 file that already holds version 2 objects is refused."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    execute_raw(path, ["CREATE TABLE events (anything)"])
    refuse_unchanged(path, AlteredSchemaError, "integrity")


# -- FTS5 --------------------------------------------------------------------------------


def test_fts5_unavailable_refuses_a_new_file_and_leaves_none(tmp_path: Path) -> None:
    """SQL-017, SQL-022: without FTS5 a new file is refused and not left behind."""
    path = tmp_path / "never.sqlite"
    with pytest.raises(Fts5UnavailableError) as caught:
        SqliteStore(path, connection_hook=deny_fts5)
    assert caught.value.kind == "not_supported"
    assert not path.exists()


def test_fts5_unavailable_refuses_a_version_2_file_unchanged(v2_file: Path) -> None:
    """SQL-017: a version 2 file is refused when FTS5 is unavailable, never opened without it."""
    refuse_unchanged(v2_file, Fts5UnavailableError, "not_supported", connection_hook=deny_fts5)


def test_fts5_unavailable_refuses_migration_unchanged(tmp_path: Path) -> None:
    """SQL-017, SQL-036: a version 1 file is not migrated without FTS5 and stays as it was."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    refuse_unchanged(path, Fts5UnavailableError, "not_supported", connection_hook=deny_fts5)


def test_denying_fts5_really_prevents_fts5_tables(tmp_path: Path) -> None:
    """SQL-017: the hook the tests use makes creating an FTS5 table fail on that connection."""
    connection = sqlite3.connect(tmp_path / "probe.sqlite")
    deny_fts5(connection)
    with pytest.raises(sqlite3.DatabaseError):
        connection.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    connection.execute("CREATE TABLE plain (x)")
    connection.close()


@pytest.mark.parametrize(
    ("statement", "missing"),
    [
        ("DROP TRIGGER events_fts_after_delete", ("events_fts_after_delete",)),
        ("DROP TABLE events_fts_docsize", ("events_fts_docsize",)),
        ("DROP TABLE events_fts_idx", ("events_fts_idx",)),
        (
            "DROP TABLE events_fts",
            ("events_fts", "events_fts_data", "events_fts_idx", "events_fts_content",
             "events_fts_docsize", "events_fts_config"),
        ),
    ],
)
def test_partial_fts5_index_is_refused_unchanged(
    v2_file: Path, statement: str, missing: tuple[str, ...]
) -> None:
    """SQL-018: a missing FTS5 table, shadow table or trigger is refused and named."""
    execute_raw(v2_file, [statement])
    error = refuse_unchanged(v2_file, Fts5PartialError, "integrity")
    assert isinstance(error, Fts5PartialError)
    assert error.missing == missing


@pytest.mark.parametrize(
    "definition",
    [
        "fts5(body, scope, conversation_id UNINDEXED, seq UNINDEXED, tokenize = 'porter')",
        "fts5(body, conversation_id UNINDEXED, seq UNINDEXED, "
        "tokenize = 'unicode61 remove_diacritics 2')",
        "fts5(body, scope, conversation_id UNINDEXED, seq UNINDEXED, content = '', "
        "tokenize = 'unicode61 remove_diacritics 2')",
    ],
)
def test_unknown_fts5_table_is_refused_unchanged(v2_file: Path, definition: str) -> None:
    """SQL-019: an FTS5 table with other columns, options or tokenizer is refused."""
    execute_raw(v2_file, ["DROP TABLE events_fts", f"CREATE VIRTUAL TABLE events_fts USING "
                          f"{definition}"])
    refuse_unchanged(v2_file, Fts5UnknownError, "integrity")


def test_altered_fts5_trigger_is_refused_unchanged(v2_file: Path) -> None:
    """SQL-019: an FTS5 trigger with another body is refused."""
    execute_raw(v2_file, [
        "DROP TRIGGER events_fts_after_delete",
        "CREATE TRIGGER events_fts_after_delete AFTER DELETE ON events BEGIN SELECT 1; END",
    ])
    error = refuse_unchanged(v2_file, Fts5UnknownError, "integrity")
    assert isinstance(error, Fts5UnknownError)
    assert error.altered == ("events_fts_after_delete",)


@pytest.mark.parametrize("body", [FTS_INSERT_TRIGGER.sql, "CREATE TRIGGER events_fts_after_insert"
                                  " AFTER INSERT ON events BEGIN SELECT 1; END"])
def test_version_3_holding_the_insert_trigger_is_refused_unchanged(v2_file: Path,
                                                                   body: str) -> None:
    """SQL-071: a version 3 file holding ``events_fts_after_insert`` (version 2's trigger, or
    any trigger of that name) is refused: the store indexes each event itself (SQL-070), so
    the trigger would index it twice or otherwise."""
    execute_raw(v2_file, [body])
    error = refuse_unchanged(v2_file, Fts5UnknownError, "integrity")
    assert isinstance(error, Fts5UnknownError)
    assert error.altered == ("events_fts_after_insert",)


# -- files that are not databases, read-only files -----------------------------------------


@pytest.mark.parametrize(
    "content", [b"not a database at all\n" * 50, b"SQLite format 3\x00" + b"\xff" * 200]
)
def test_file_that_is_not_a_database_is_refused_unchanged(tmp_path: Path, content: bytes) -> None:
    """SQL-020: a file that is not an SQLite database is refused as integrity, unchanged."""
    path = tmp_path / "text.sqlite"
    path.write_bytes(content)
    refuse_unchanged(path, NotADatabaseError, "integrity")


def test_read_only_open_of_version_1_is_refused_unchanged(tmp_path: Path) -> None:
    """SQL-021: a version 1 file opened read-only cannot migrate: unavailable, unchanged."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    refuse_unchanged(path, ReadOnlyDatabaseError, "unavailable", read_only=True)


def test_read_only_open_of_empty_file_is_refused_unchanged(tmp_path: Path) -> None:
    """SQL-021: an empty file opened read-only cannot be created: unavailable, unchanged."""
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    refuse_unchanged(path, ReadOnlyDatabaseError, "unavailable", read_only=True)


def test_write_through_read_only_handle_is_refused(v2_file: Path) -> None:
    """SQL-021: an append through a read-only handle is unavailable and stores nothing."""
    store = SqliteStore(v2_file, read_only=True)
    before = store.export_conversation("c")
    with pytest.raises(ReadOnlyDatabaseError) as caught:
        store.append("c", [draft("e2")])
    assert caught.value.kind == "unavailable"
    assert store.export_conversation("c") == before
    store.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
def test_file_without_write_permission_is_refused_unchanged(v2_file: Path) -> None:
    """SQL-021: a file the process may not write is refused for writing, unchanged."""
    v2_file.chmod(0o444)
    try:
        refuse_unchanged(v2_file, ReadOnlyDatabaseError, "unavailable")
        store = SqliteStore(v2_file, read_only=True)
        assert store.head("c") == 1
        store.close()
    finally:
        v2_file.chmod(0o644)


def test_foreign_objects_are_ignored(v2_file: Path) -> None:
    """SQL-002: objects with other names may exist; the store ignores them."""
    execute_raw(v2_file, ["CREATE TABLE application_notes (note TEXT)",
                          "CREATE INDEX notes_by_note ON application_notes (note)"])
    store = SqliteStore(v2_file)
    assert store.head("c") == 1
    store.close()


@pytest.mark.parametrize(
    ("option", "value"),
    [("synchronous", "OFF"), ("synchronous", "full"), ("busy_timeout", -1),
     ("busy_timeout", "5")],
)
def test_bad_settings_are_refused_before_touching_the_file(
    tmp_path: Path, option: str, value: object
) -> None:
    """SQL-041, SQL-042: impossible settings are invalid_input and create no file."""
    path = tmp_path / "never.sqlite"
    opener: Callable[..., SqliteStore] = SqliteStore
    with pytest.raises(LedgerError) as caught:
        opener(path, **{option: value})
    assert caught.value.kind == "invalid_input"
    assert not path.exists()


def test_the_switch_to_wal_waits_for_another_opener(tmp_path: Path) -> None:
    """SQL-030, SQL-041: a busy answer to the WAL switch is retried until the busy timeout.

    Two handles racing to open one version 1 file could fail: while one held
    the write lock of its migration and waited to commit, SQLite answered the
    other's ``PRAGMA journal_mode = WAL`` with SQLITE_BUSY at once (about 1 in
    100 races; found by .ci/run). Here the other handle's lock is held on
    purpose, and the connection has no busy handler of its own, so only the
    store's retry can make the switch succeed once the lock is released.
    """
    import threading
    import time

    from convledger.sqlite.journal import use_wal as _use_wal

    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    waiting = sqlite3.connect(path, isolation_level=None, timeout=0, check_same_thread=False)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        waiting.execute("PRAGMA journal_mode = WAL")
    outcome: list[BaseException | None] = []

    def switch() -> None:
        try:
            _use_wal(waiting, 10.0)
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=switch)
    thread.start()
    time.sleep(0.2)
    holder.execute("COMMIT")
    thread.join(timeout=20)
    holder.close()
    assert outcome == [None]
    assert waiting.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    waiting.close()
