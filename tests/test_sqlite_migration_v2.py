"""Migration of version 2 files (release 0.1.0's schema) to version 4 (SQL-070 .. SQL-072, SQL-076).

``tests/fossils/v2-ledger.sqlite`` was written by the version 2 store
(``scripts/make_v2_fossil.py``); ``v2-manifest.json`` holds the exports and
search answers that store gave. A copy must migrate in one transaction and
answer the same, and from then on the store indexes each event itself.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import draft
from convledger.cli import main as cli
from convledger.errors import LedgerError
from convledger.sqlite import SqliteStore, schema
from convledger.sqlite.fixtures import execute_raw, file_digest
from convledger.sqlite.migration import STEPS_FROM_V2

FOSSILS = Path(__file__).resolve().parent / "fossils"
MANIFEST: dict[str, Any] = json.loads((FOSSILS / "v2-manifest.json").read_text("utf-8"))
MIGRATED_AT = "2026-03-01T12:00:00.000Z"


@pytest.fixture
def v2_copy(tmp_path: Path) -> Path:
    """A copy of the version 2 fossil (the fossil itself never changes)."""
    copy = tmp_path / MANIFEST["file"]
    shutil.copyfile(FOSSILS / MANIFEST["file"], copy)
    return copy


def _open(path: Path, **options: Any) -> SqliteStore:
    return SqliteStore(path, clock=lambda: MIGRATED_AT, **options)


def _triggers(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        found = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name").fetchall()
        version = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'")
        return [str(row[0]) for row in found] + [f"version {version.fetchone()[0]}"]
    finally:
        connection.close()


def test_the_v2_fossil_is_the_committed_one() -> None:
    """Fossils are kept forever: the file still has the digest its manifest recorded."""
    digest = hashlib.sha256((FOSSILS / MANIFEST["file"]).read_bytes()).hexdigest()
    assert digest == MANIFEST["sha256"]
    assert _triggers(FOSSILS / MANIFEST["file"]) == [
        "events_are_immutable", "events_fts_after_delete", "events_fts_after_insert",
        "version 2"]


def test_a_v2_file_migrates_and_answers_as_version_2_did(v2_copy: Path) -> None:
    """SQL-072: the copy migrates (no event written), the insert trigger is gone, and every
    export and every recorded search answers exactly as the version 2 store did."""
    store = _open(v2_copy)
    try:
        assert store.outcome == "migrated"
        assert store.migration is not None
        assert (store.migration.from_version, store.migration.conversations) == (2, ())
        for conversation_id, exported in MANIFEST["exports"].items():
            assert store.export_conversation(conversation_id).decode("utf-8") == exported
        for search in MANIFEST["searches"]:
            hits = store.search(search["requester"], search["query"],
                                authorize=(lambda _c: True) if search["grantAll"] else None)
            found = [[hit.conversation_id, hit.seq, hit.occurred_at] for hit in hits]
            assert found == search["hits"], search
    finally:
        store.close()
    assert _triggers(v2_copy) == ["events_are_immutable", "events_fts_after_delete",
                                  "search_pending_after_delete", "version 4"]
    again = _open(v2_copy)
    assert again.outcome == "opened"
    again.close()


def test_after_migration_new_events_are_indexed_by_the_store(v2_copy: Path) -> None:
    """SQL-067, SQL-070: events appended after the migration are searchable (their text whole,
    past a NUL too), newest first after the version 2 rows; a purge removes the hits of rows
    either version indexed (SRC-004)."""
    store = _open(v2_copy)
    try:
        placed = store.append("ledger-only", [draft("v3-1", value="searchable\x00tail words")])
        assert placed[0].seq == 6
        hits = store.search("ledger-only", "searchable")
        assert [hit.seq for hit in hits] == [6, 5, 4, 3, 2, 1]
        assert [hit.seq for hit in store.search("ledger-only", "tail")] == [6]
        assert store.purge("ledger-only").value == "purged"
        assert store.search("conv-alpha", "searchable", authorize=lambda _c: True) == ()
        connection = sqlite3.connect(v2_copy)
        left = connection.execute(
            "SELECT count(*) FROM events_fts WHERE conversation_id = 'ledger-only'").fetchone()
        connection.close()
        assert left == (0,)
    finally:
        store.close()


@pytest.mark.parametrize("step", STEPS_FROM_V2)
def test_failure_after_any_v2_step_leaves_the_version_2_file(v2_copy: Path, step: str) -> None:
    """SQL-036, SQL-072: a failure after any step leaves exactly the version 2 bytes."""
    before = file_digest(v2_copy)

    def fail_at(done: str) -> None:
        if done == step:
            raise RuntimeError(f"injected after {done}")

    with pytest.raises(RuntimeError):
        _open(v2_copy, on_migration_step=fail_at)
    assert file_digest(v2_copy) == before
    store = _open(v2_copy)
    assert store.outcome == "migrated"
    store.close()


def test_a_v2_file_opened_read_only_is_refused_unchanged(v2_copy: Path) -> None:
    """SQL-021: migrating needs writing; a read-only open of a version 2 file is refused."""
    before = file_digest(v2_copy)
    with pytest.raises(LedgerError) as refused:
        SqliteStore(v2_copy, read_only=True)
    assert refused.value.kind == "unavailable"
    assert file_digest(v2_copy) == before


def test_a_v2_file_without_its_insert_trigger_is_refused_not_migrated(v2_copy: Path) -> None:
    """SQL-018: a version 2 file is checked as version 2 before it migrates: its missing
    insert trigger is named, and the file stays as it was."""
    execute_raw(v2_copy, [f"DROP TRIGGER {schema.FTS_INSERT_TRIGGER.name}"])
    before = file_digest(v2_copy)
    with pytest.raises(LedgerError) as refused:
        _open(v2_copy)
    assert refused.value.kind == "integrity"
    assert "events_fts_after_insert" in refused.value.message
    assert file_digest(v2_copy) == before


def test_migrate_tool_on_a_v2_file(v2_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``convledger migrate``: the dry run writes nothing; the run drops the trigger."""
    before = file_digest(v2_copy)
    assert cli(["migrate", str(v2_copy), "--dry-run"]) == 0
    assert "would migrate schema version 2 to 4" in capsys.readouterr().out
    assert file_digest(v2_copy) == before
    assert cli(["migrate", str(v2_copy)]) == 0
    assert "migrated schema version 2 to 4" in capsys.readouterr().out
    assert cli(["migrate", str(v2_copy)]) == 0
    assert "already at schema version 4" in capsys.readouterr().out
