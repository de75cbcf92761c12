"""The checks kill every broken store of the spills gallery (``galleries/spills.py``).

Each broken store runs, at the ``ci`` profile and derandomized, the focused
checks that cover one of its tagged ids (the state machines excepted: they
catch these bugs too, but slowly); the report must fail at least those ids.
``pytest -s`` prints which checks killed each store and after how many examples
(runs are unshrunk: Hypothesis stops at the first failing example).
"""

from __future__ import annotations

import pytest

from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger_conformance.report import PASSED
from convledger_conformance.requirements import active_ids
from convledger_conformance.runner import run_suite
from galleries import BrokenStore
from galleries.spills import BROKEN
from galleries.sqlite import factory_of
from kill_table import focused, kill


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_focused_checks_kill_the_broken_store(broken: BrokenStore) -> None:
    """The focused checks covering a broken store's tagged ids fail those ids at ci."""
    checks = list(broken.selected())
    assert checks, f"no focused check covers {broken.catches}"
    row = kill(broken, checks)
    print(f"\n{row.line()}")
    assert set(broken.catches) <= row.failed


@pytest.mark.parametrize("factory", [MemoryStore, factory_of(SqliteStore)],
                         ids=["memory", "sqlite"])
def test_the_focused_checks_pass_the_reference(factory: object) -> None:
    """Every check that kills a broken store passes the reference stores it applies to."""
    ids = {item for broken in BROKEN for item in broken.catches}
    report = run_suite(factory, profile="ci", checks=focused(ids), derandomize=True)  # type: ignore[arg-type]
    bad = {r.name: r.status for r in report.checks if r.status not in (PASSED, "not_run")}
    assert not bad


def test_every_broken_store_is_of_this_chapter() -> None:
    """Each broken store is tagged with active ids of chapter SPL, and named once."""
    assert len({b.name for b in BROKEN}) == len(BROKEN)
    for broken in BROKEN:
        assert broken.chapter == "spills" and set(broken.catches) <= active_ids()
        assert all(item.startswith("SPL-") for item in broken.catches)
