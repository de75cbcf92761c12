"""The conformance checks of chapters PRJ, SPL and SRC pass both reference stores at ci.

The in-memory store declares search absent, so its SRC checks are not run and
CAP-002 holds it to refusing search with ``not_supported``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from convledger.errors import LedgerError
from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger_conformance.registry import Check, all_checks
from convledger_conformance.report import FAILED, NOT_RUN, PASSED
from convledger_conformance.runner import run_suite
from galleries.sqlite import factory_of

MODULES = tuple(f"convledger_conformance.{name}" for name in (
    "projections.checks", "projections.checks_folds", "projections.checks_archives",
    "spills.checks", "search.checks", "sqlite.checks_companions",
    "sqlite.checks_search", "ledger.checks_capabilities",
))


def _checks() -> list[Check]:
    return [item for item in all_checks() if item.run.__module__ in MODULES]


@pytest.mark.parametrize("factory", [MemoryStore, factory_of(SqliteStore)],
                         ids=["memory", "sqlite"])
def test_issue5_checks_pass_the_reference_stores(factory: object) -> None:
    """Every PRJ, SPL and SRC check passes (or, for an absent capability, is not run)."""
    report = run_suite(factory, profile="ci", checks=_checks(), derandomize=True)  # type: ignore[arg-type]
    failed = {r.name: r.status for r in report.checks if r.status == FAILED}
    assert not failed
    ran = {r.name for r in report.checks if r.status == PASSED}
    assert "projection_machine" in ran and "spill_machine" in ran
    if factory is not MemoryStore:
        assert {"search_machine", "sqlite_catch_ups_on_two_handles"} <= ran
    else:
        assert {r.name for r in report.checks if r.status == NOT_RUN} >= {"search_machine"}


def test_memory_store_refuses_search(tmp_path: Path) -> None:
    """CAP-002: the in-memory store declares search absent and refuses it as not_supported."""
    store = MemoryStore()
    for call in (lambda: store.search("c", "word"),  # type: ignore[attr-defined]
                 lambda: store.search("c", "", limit=0)):  # type: ignore[attr-defined]
        with pytest.raises(LedgerError) as caught:
            call()
        assert caught.value.kind == "not_supported"
