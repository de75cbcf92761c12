"""The fault seam (chapter FLT) on the reference stores, and the regressions it found.

The sweeps themselves are the suite's checks (``faults_*``); here they run on
the SQLite store at the ``ci`` profile and must all pass (the PostgreSQL
store runs them in ``test_postgres_conformance.py``, with the whole suite),
the seam is tested directly, and each bug a sweep found has its regression test.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from convledger.errors import LedgerError
from convledger.faults import Fault, WritePoint, write_point
from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger.sqlite.faults import planned
from convledger.sqlite.fixtures import file_digest, write_v1_database
from convledger_conformance.faults.plans import KINDS, CountingPlan, FaultInjectable
from convledger_conformance.registry import all_checks
from convledger_conformance.report import NOT_RUN, PASSED
from convledger_conformance.runner import run_suite
from galleries.sqlite import factory_of

FAULT_CHECKS = [item for item in all_checks() if item.name.startswith("faults_")]


class OnePoint:
    """Fails every write point whose statement contains ``text`` with ``fault``."""

    def __init__(self, text: str, fault: Fault) -> None:
        self.text = text
        self.fault = fault
        self.hits = 0

    def at(self, point: WritePoint) -> Fault | None:
        if self.text in point.statement:
            self.hits += 1
            return self.fault
        return None


def test_write_points_are_writes_locks_and_commits() -> None:
    """FLT-002: what counts as a write point, and what does not."""
    assert write_point("INSERT INTO events VALUES (1)") == WritePoint(
        "write", "INSERT INTO events VALUES (1)")
    assert write_point("  commit") == WritePoint("commit", "  commit")
    assert write_point("PRAGMA journal_mode = WAL") is not None
    assert write_point("SELECT 1 FROM conversations WHERE c = %s FOR UPDATE") == WritePoint(
        "lock", "SELECT 1 FROM conversations WHERE c = %s FOR UPDATE")
    for statement in ("BEGIN IMMEDIATE", "ROLLBACK", "SELECT * FROM events", "PRAGMA page_count"):
        assert write_point(statement) is None, statement


def test_the_reference_sqlite_store_passes_every_fault_sweep() -> None:
    """FLT-001 .. FLT-006: every fault check passes SqliteStore at ci."""
    report = run_suite(factory_of(SqliteStore), profile="ci", checks=FAULT_CHECKS)
    statuses = {result.name: result.status for result in report.checks}
    failed = {r.name: r.message for r in report.checks if r.status not in (PASSED,)}
    assert failed == {}, failed
    assert {item.name for item in FAULT_CHECKS} <= set(statuses)


def test_memory_store_offers_no_seam_and_is_not_swept() -> None:
    """MemoryStore has no storage engine whose writes fail: it declares no multi_process."""
    assert not isinstance(MemoryStore(), FaultInjectable)
    report = run_suite(MemoryStore, profile="smoke", checks=FAULT_CHECKS)
    assert {r.status for r in report.checks if r.name.startswith("faults_")} == {NOT_RUN}


def test_inject_none_ends_the_plan(tmp_path: Path) -> None:
    """FLT-001: after inject(None) nothing is asked; a plan counts the points of one append."""
    store = SqliteStore(tmp_path / "a.sqlite")
    try:
        plan = CountingPlan()
        store.inject(plan)
        store.append("c", [_draft("e-1")])
        # SQL-070: the event's row and its index row are two write points
        assert [point.kind for point in plan.points] == ["write", "write", "commit"]
        store.inject(None)
        store.append("c", [_draft("e-2")])
        assert len(plan.points) == 3
    finally:
        store.close()


def test_a_connection_factory_of_the_caller_still_sees_every_statement(tmp_path: Path) -> None:
    """The seam subclasses the caller's ``connection_factory``; that class keeps its calls."""
    seen: list[str] = []

    class Recording(sqlite3.Connection):
        def execute(self, sql: str, parameters: object = (), /) -> sqlite3.Cursor:
            seen.append(sql)
            return super().execute(sql, parameters)  # type: ignore[arg-type]

    store = SqliteStore(tmp_path / "a.sqlite", connection_factory=Recording)
    try:
        store.inject(OnePoint("COMMIT", Fault.DISK_FULL))
        with pytest.raises(LedgerError) as refused:
            store.append("c", [_draft("e-1")])
        assert refused.value.kind == "unavailable"
        store.inject(None)
        assert store.head("c") == 0
        assert "COMMIT" in seen  # the caller's class ran the statements of the store
    finally:
        store.close()


@pytest.mark.parametrize("fault", list(Fault), ids=lambda fault: fault.value)
def test_a_failing_fts5_probe_is_a_storage_refusal_not_missing_fts5(
    tmp_path: Path, fault: Fault
) -> None:
    """Regression (FLT-003, found by the migration sweep: point 3 of 29): an I/O error, a full
    disk or a busy database while probing for FTS5 was refused as ``not_supported`` ("this
    SQLite cannot create FTS5 tables"); it is the storage's refusal, and the file is untouched.
    """
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    before = file_digest(path)
    plan = OnePoint("convledger_fts5_probe", fault)
    with pytest.raises(LedgerError) as refused:
        SqliteStore(path, connection_factory=planned(plan))
    assert plan.hits == 1
    assert refused.value.kind == KINDS[fault]
    assert file_digest(path) == before
    store = SqliteStore(path)  # and without the fault the file migrates
    try:
        assert store.outcome == "migrated"
    finally:
        store.close()


def _draft(event_id: str):  # type: ignore[no-untyped-def]
    from convledger_conformance.support import draft

    return draft(event_id)


def test_every_fault_at_the_wal_switch_of_a_migration_is_absorbed() -> None:
    """Regression (FLT-004, FLT-006, SQL-022; found by the migration sweep at ``thorough``).

    The switch to WAL runs after the migration committed; an I/O error or a
    full disk there refused an open whose file was already migrated. It is now
    tried again like ``busy`` was, so every fault at every write point of the
    migration, the switch included, passes the sweep.
    """
    migration = [item for item in FAULT_CHECKS if item.name == "faults_migration"]
    assert migration, "the migration sweep is registered"
    report = run_suite(factory_of(SqliteStore), profile="thorough", checks=migration)
    failed = {r.name: r.message for r in report.checks if r.status != PASSED}
    assert failed == {}, failed
    assert "faults_migration" in {r.name for r in report.checks if r.status == PASSED}
