"""The conformance checks kill every broken runtime store of ``broken_runtime_stores.py``.

Each broken store runs, at the ``ci`` profile and derandomized, the focused
checks that cover one of the ids it is tagged with (state machines excluded:
their shrinking is slow); the report must fail at least those ids. ``pytest
-s`` prints which checks killed each store.
"""

from __future__ import annotations

import pytest

from broken_runtime_stores import BROKEN_RUNTIME_STORES
from broken_stores import Broken
from convledger_conformance.registry import all_checks
from convledger_conformance.report import FAILED
from convledger_conformance.runner import run_suite


def _focused(broken: Broken) -> list[object]:
    return [
        item for item in all_checks()
        if set(item.ids) & set(broken.catches) and "machine" not in item.name
    ]


@pytest.mark.parametrize("broken", BROKEN_RUNTIME_STORES, ids=lambda b: b.store.__name__)
def test_focused_checks_kill_the_broken_runtime_store(broken: Broken) -> None:
    """The focused checks covering a broken runtime store's tagged ids fail those ids at ci."""
    checks = _focused(broken)
    assert checks, f"no focused check covers {broken.catches}"
    report = run_suite(broken.store, profile="ci", checks=checks, derandomize=True)  # type: ignore[arg-type]
    killers = {r.name: r.failed_ids for r in report.checks if r.status == FAILED}
    print(f"\n{broken.store.__name__}: killed by {killers}")
    failed = {r.id for r in report.requirements if r.status == FAILED}
    assert set(broken.catches) <= failed
