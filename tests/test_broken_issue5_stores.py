"""The conformance checks kill every broken store of ``broken_issue5_stores.py``.

Each broken store runs, at the ``ci`` profile and derandomized, the focused
checks that cover one of its tagged ids (the state machines excepted: they
catch these bugs too, but slowly); the report must fail at least those ids.
``pytest -s`` prints which checks killed each store and after how many examples
(runs are unshrunk: Hypothesis stops at the first failing example).
"""

from __future__ import annotations

import pytest

from broken_issue5_stores import BROKEN_ISSUE5_STORES, BrokenIssue5
from broken_sqlite_stores import factory_of
from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger_conformance.registry import Check, all_checks
from convledger_conformance.report import PASSED
from convledger_conformance.runner import run_suite
from kill_table import kill


def _focused(ids: set[str]) -> list[Check]:
    return [item for item in all_checks() if set(item.ids) & ids and "machine" not in item.name]


@pytest.mark.parametrize("broken", BROKEN_ISSUE5_STORES, ids=lambda b: b.name)
def test_focused_checks_kill_the_broken_store(broken: BrokenIssue5) -> None:
    """The focused checks covering a broken store's tagged ids fail those ids at ci."""
    checks = _focused(set(broken.catches))
    assert checks, f"no focused check covers {broken.catches}"
    row = kill(broken, checks)
    print(f"\n{row.line()}")
    assert set(broken.catches) <= row.failed


@pytest.mark.parametrize("factory", [MemoryStore, factory_of(SqliteStore)],
                         ids=["memory", "sqlite"])
def test_the_focused_checks_pass_the_reference(factory: object) -> None:
    """Every check that kills a broken store passes the reference stores it applies to."""
    ids = {item for broken in BROKEN_ISSUE5_STORES for item in broken.catches}
    report = run_suite(factory, profile="ci", checks=_focused(ids), derandomize=True)  # type: ignore[arg-type]
    bad = {r.name: r.status for r in report.checks if r.status not in (PASSED, "not_run")}
    assert not bad
