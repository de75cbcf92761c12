"""The SQL checks kill every broken store of the SQLite gallery (``galleries/sqlite.py``).

Each broken store runs, at the ``ci`` profile, derandomized and unshrunk, the
checks that cover the ids it is tagged with (never the slow SQLite state
machine: the two stores only it catches are run by ``test_sqlite_machine.py``);
the report must fail at least those ids. The checks that killed it,
and after how many examples, are printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import sqlite3

import pytest

from convledger.envelope import EventDraft
from convledger.sqlite import SqliteStore
from convledger.sqlite.fixtures import query_plan, scans_events
from convledger_conformance.registry import Check, all_checks
from convledger_conformance.report import PASSED
from convledger_conformance.requirements import active_ids
from convledger_conformance.runner import DECLARATION_CHECK, FRESH_CHECK, run_suite
from galleries import BrokenStore
from galleries import sqlite as gallery
from galleries.sqlite import BROKEN, SCANNING_WINDOW, OpensStepByStep, ScanningRead, factory_of
from kill_table import kill

FOCUSED = tuple(broken for broken in BROKEN if not broken.checks)
"""The broken SQLite stores the focused checks catch (the state machine's two excepted)."""

SLOW = ("sqlite_ledger_state_machine", "ledger_state_machine", "ledger_state_machine_with_reopen")
"""The state machines: they catch several of these bugs too, but slowly."""


def _covering(broken: BrokenStore) -> list[Check]:
    """The checks that cover one of the store's tagged ids, the state machines excepted."""
    return [
        item for item in all_checks()
        if set(item.ids) & set(broken.catches) and item.name not in SLOW
    ]


def _failed(broken: BrokenStore) -> set[str]:
    """Run the covering checks against the broken store; print its kill row; the failed ids."""
    row = kill(broken, _covering(broken))
    print(f"\n{row.line()}")
    return set(row.failed)


@pytest.mark.parametrize("broken", FOCUSED, ids=lambda broken: broken.name)
def test_covering_checks_kill_the_broken_sqlite_store(broken: BrokenStore) -> None:
    """The checks covering a broken SQLite store's tagged ids fail at least those ids at ci."""
    failed = _failed(broken)
    assert set(broken.catches) <= failed


@pytest.mark.parametrize("store", [SqliteStore, OpensStepByStep], ids=lambda c: c.__name__)
def test_the_covering_checks_pass_the_unbroken_stores(store: type[SqliteStore]) -> None:
    """Every covering check passes the reference and the step-by-step opening base."""
    checks = {item.name: item for b in FOCUSED for item in _covering(b)}
    report = run_suite(factory_of(store), profile="ci", checks=list(checks.values()),
                       derandomize=True, shrink=False)
    assert {r.name: r.status for r in report.checks} == {
        **{name: PASSED for name in checks}, DECLARATION_CHECK: PASSED, FRESH_CHECK: PASSED
    }


def test_the_scanning_read_really_scans_and_reads_right() -> None:
    """ScanningRead really scans events (SQLite plans its window so) and reads correctly."""
    store = factory_of(ScanningRead)()
    try:
        drafts = [
            EventDraft(event_id=f"e-{n}", kind="state/set", occurred_at="2024-01-01T00:00:00Z",
                       payload={"name": "n", "version": 1, "value": n, "actor": "a"})
            for n in range(5)
        ]
        placed = store.append("c", drafts)
        assert store.read("c", from_seq=2, limit=3).items == placed[1:4]
        connection = sqlite3.connect(store.path)
        try:
            plan = query_plan(connection, SCANNING_WINDOW)
        finally:
            connection.close()
    finally:
        store.close()
    assert scans_events(plan), plan


def test_every_broken_sqlite_store_names_its_one_bug() -> None:
    """Each broken SQLite store's docstring names its first tagged id; every tag is active."""
    assert len(BROKEN) >= 8
    assert len({b.name for b in BROKEN}) == len(BROKEN)
    for broken in BROKEN:
        assert broken.catches and set(broken.catches) <= active_ids()
        doc = getattr(gallery, broken.name).__doc__ or ""
        assert doc.split(":")[0] == broken.catches[0]
