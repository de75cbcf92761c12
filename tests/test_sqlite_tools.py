"""``convledger inspect``, ``migrate``, ``export`` and ``import`` on SQLite files.

Exit codes are those of ``convledger.cli``: 0 success, 1 problems found,
2 refused input, 3 the database or a file could not be opened or written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import draft
from convledger.cli import main
from convledger.envelope import Envelope
from convledger.sqlite import SqliteStore, schema
from convledger.sqlite.fixtures import (
    execute_raw,
    file_digest,
    write_v1_database,
    write_v3_database,
)


@pytest.fixture
def v2_file(tmp_path: Path) -> Path:
    """A version 2 file with two conversations, one id holding NUL."""
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(path)
    store.append("a\x00ü", [draft("e1"), draft("e2")])
    store.append("b", [draft("e3")])
    store.close()
    return path


def run(*argv: str) -> int:
    """Run the command line in this process; return its exit code."""
    return main(list(argv))


# -- inspect ----------------------------------------------------------------------------


def test_inspect_reports_version_fts_and_conversations(
    v2_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """inspect: version 4, FTS5 ok, each conversation with events and head; exit 0."""
    before = file_digest(v2_file)
    assert run("inspect", str(v2_file), "--json") == 0
    facts = json.loads(capsys.readouterr().out)
    assert (facts["schemaVersion"], facts["fts5"], facts["problems"]) == (4, "ok", [])
    assert facts["conversations"] == [
        {"conversationId": "a\x00ü", "events": 2, "headSeq": 2},
        {"conversationId": "b", "events": 1, "headSeq": 1},
    ]
    assert file_digest(v2_file) == before


def test_inspect_text_shows_ids_escaped(v2_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """inspect: the text report shows a NUL in an id as an escape, one line per conversation."""
    assert run("inspect", str(v2_file)) == 0
    out = capsys.readouterr().out
    assert "schema version: 4" in out
    assert '"a\\u0000ü": 2 events, head seq 2' in out


def test_inspect_version_1_without_migrating(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """inspect: a version 1 file is reported from its heads and left unchanged."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    before = file_digest(path)
    assert run("inspect", str(path), "--json") == 0
    facts = json.loads(capsys.readouterr().out)
    assert (facts["schemaVersion"], facts["fts5"]) == (1, "absent")
    assert facts["searchPending"] is None  # no search_pending before version 4
    assert len(facts["conversations"]) == 3
    assert file_digest(path) == before


def test_inspect_reports_problems_with_exit_1(v2_file: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """inspect: a partial FTS5 index is reported with its kind and id; exit 1."""
    execute_raw(v2_file, ["DROP TRIGGER events_fts_after_delete"])
    assert run("inspect", str(v2_file), "--json") == 1
    facts = json.loads(capsys.readouterr().out)
    assert facts["fts5"] == "partial"
    assert [(p["kind"], p["requirement"]) for p in facts["problems"]] == [("integrity", "SQL-018")]
    assert (facts["searchPending"], facts["searchPendingOrphans"]) == (None, None)  # not read


def inspected(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """The JSON report of ``inspect`` on ``path`` (exit 0 required)."""
    assert run("inspect", str(path), "--json") == 0
    facts: dict[str, object] = json.loads(capsys.readouterr().out)
    return facts


def test_inspect_counts_pending_events_and_orphan_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """inspect: SQL-073's pending events are counted; a row of search_pending naming no
    event (SQL-075) is counted apart; the file is not changed."""
    path = tmp_path / "pending.sqlite"
    store = SqliteStore(path)
    store.append("a", [draft("e1"), draft("e2")])
    store.append("b", [draft("e3")])
    store.close()
    assert schema.SEARCH_PENDING_LIMIT > 3  # the three events stay pending (SQL-074)
    facts = inspected(path, capsys)
    assert (facts["searchPending"], facts["searchPendingOrphans"]) == (3, 0)
    execute_raw(path, [
        "INSERT INTO search_pending (search_rowid, conversation_id, seq) VALUES (900, 'ghost', 1)",
        "INSERT INTO search_pending (search_rowid, conversation_id, seq) VALUES (901, 'a', 7)",
    ])
    before = file_digest(path)
    facts = inspected(path, capsys)
    assert (facts["searchPending"], facts["searchPendingOrphans"]) == (3, 2)
    assert run("inspect", str(path)) == 0
    assert "search pending: 3 events; orphan rows (naming no event): 2" in capsys.readouterr().out
    assert file_digest(path) == before


def test_inspect_pending_is_zero_for_empty_and_migrated_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """inspect: a fresh empty file and a version 3 file migrated to 4 (its events indexed,
    SQL-076) have no pending row; before migrating, version 3 has none to read (null)."""
    fresh = tmp_path / "fresh.sqlite"
    SqliteStore(fresh).close()
    facts = inspected(fresh, capsys)
    assert (facts["searchPending"], facts["searchPendingOrphans"]) == (0, 0)
    old = tmp_path / "v3.sqlite"
    write_v3_database(old, [Envelope.from_draft(draft(f"e{seq}"), "a", seq) for seq in (1, 2)])
    facts = inspected(old, capsys)
    assert (facts["schemaVersion"], facts["searchPending"]) == (3, None)
    assert facts["searchPendingOrphans"] is None
    SqliteStore(old).close()  # opening for writing migrates (SQL-076)
    facts = inspected(old, capsys)
    assert (facts["schemaVersion"], facts["searchPending"], facts["searchPendingOrphans"]) == (
        4, 0, 0)
    assert run("inspect", str(old)) == 0
    assert "search pending: 0 events; orphan rows (naming no event): 0" in (
        capsys.readouterr().out)


@pytest.mark.parametrize("content", [None, b"plain text, not a database" * 20])
def test_inspect_of_missing_or_foreign_file_exits_3(
    tmp_path: Path, content: bytes | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """inspect: a missing file or one that is not a database cannot be opened: exit 3."""
    path = tmp_path / "x.sqlite"
    if content is not None:
        path.write_bytes(content)
    before = file_digest(path)
    assert run("inspect", str(path)) == 3
    expected_kind = "unavailable" if content is None else "integrity"
    assert expected_kind in capsys.readouterr().err
    assert file_digest(path) == before


# -- migrate ----------------------------------------------------------------------------


def test_migrate_dry_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """migrate --dry-run: reports the conversations that would migrate; the file is unchanged."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    before = file_digest(path)
    assert run("migrate", str(path), "--dry-run") == 0
    out = capsys.readouterr().out
    assert "would migrate schema version 1 to 4" in out
    assert "conversations: 3" in out
    assert file_digest(path) == before


def test_migrate_migrates_then_has_nothing_to_do(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """migrate: migrates a version 1 file; a second run finds version 4."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    assert run("migrate", str(path)) == 0
    assert "migrated schema version 1 to 4" in capsys.readouterr().out
    assert run("migrate", str(path)) == 0
    assert "already at schema version 4" in capsys.readouterr().out
    store = SqliteStore(path, read_only=True)
    assert store.head("c-1") == 1
    store.close()


def test_migrate_refusal_exits_with_its_code(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """migrate: a newer version is refused (not_supported, exit 3), file unchanged."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    execute_raw(path, ["UPDATE meta SET value = '9'"])
    before = file_digest(path)
    for extra in ((), ("--dry-run",)):
        assert run("migrate", str(path), *extra) == 3
        assert "not_supported (SQL-012)" in capsys.readouterr().err
    assert file_digest(path) == before


def test_migrate_of_a_missing_file_exits_3(tmp_path: Path) -> None:
    """migrate: a missing file is not created; exit 3."""
    path = tmp_path / "missing.sqlite"
    assert run("migrate", str(path)) == 3
    assert not path.exists()


# -- export and import ---------------------------------------------------------------------


def test_export_then_import_round_trips(v2_file: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """export/import: an exported archive imports into a new file and re-exports identically."""
    archive = tmp_path / "a.json"
    assert run("export", str(v2_file), '"a\\u0000ü"', "--json-id", "-o", str(archive)) == 0
    target = tmp_path / "target.sqlite"
    assert run("import", str(target), str(archive)) == 0
    assert "imported 2 events" in capsys.readouterr().out
    again = tmp_path / "again.json"
    assert run("export", str(target), '"a\\u0000ü"', "--json-id", "-o", str(again)) == 0
    assert again.read_bytes() == archive.read_bytes()


def test_export_to_stdout_as_a_real_process(v2_file: Path) -> None:
    """export: without -o the archive bytes go to standard output, nothing else."""
    result = subprocess.run(
        [sys.executable, "-m", "convledger", "export", str(v2_file), "b"],
        capture_output=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    store = SqliteStore(v2_file, read_only=True)
    assert result.stdout == store.export_conversation("b")
    store.close()


@pytest.mark.parametrize(
    ("argv", "code", "kind"),
    [
        (("export", "{db}", "nobody"), 2, "not_found"),
        (("export", "{db}", "not json", "--json-id"), 2, "invalid_input"),
        (("export", "{v1}", "c-1"), 3, "unavailable"),
        (("import", "{db}", "{archive}"), 2, "conflict"),
        (("import", "{db}", "{garbage}"), 2, "invalid_input"),
    ],
)
def test_refusals_print_their_kind_and_exit_code(
    v2_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...], code: int, kind: str,
) -> None:
    """export/import: refusals print the error kind and exit 2 (input) or 3 (database)."""
    v1 = tmp_path / "v1.sqlite"
    write_v1_database(v1)
    archive = tmp_path / "b.json"
    assert run("export", str(v2_file), "b", "-o", str(archive)) == 0
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b'{"not": "an archive"}')
    before = file_digest(v2_file), file_digest(v1)
    paths = {"db": str(v2_file), "v1": str(v1), "archive": str(archive), "garbage": str(garbage)}
    assert run(*(part.format(**paths) for part in argv)) == code
    assert f": {kind} (" in capsys.readouterr().err
    assert (file_digest(v2_file), file_digest(v1)) == before


def test_import_of_an_unreadable_file_exits_3(v2_file: Path, tmp_path: Path) -> None:
    """import: an archive file that cannot be read exits 3."""
    assert run("import", str(v2_file), str(tmp_path / "missing.json")) == 3
