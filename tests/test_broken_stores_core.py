"""The conformance checks kill every deliberately broken store of ``broken_stores.py``.

Each broken store runs, at the ``ci`` profile and derandomized, every check
that covers one of the ids it is tagged with; the report must fail at least
those ids. The checks that killed it are printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import pytest

from broken_stores import BROKEN_STORES, Broken
from convledger_conformance.registry import all_checks
from convledger_conformance.report import FAILED
from convledger_conformance.runner import run_suite


@pytest.mark.parametrize("broken", BROKEN_STORES, ids=lambda b: b.store.__name__)
def test_checks_kill_the_broken_store(broken: Broken) -> None:
    """The checks covering a broken store's tagged ids fail at least those ids at ci."""
    selected = [item for item in all_checks() if set(item.ids) & set(broken.catches)]
    report = run_suite(broken.store, profile="ci", checks=selected, derandomize=True)
    failed = {result.id for result in report.requirements if result.status == FAILED}
    killers = {r.name: r.failed_ids for r in report.checks if r.status == FAILED}
    print(f"\n{broken.store.__name__}: killed by {killers}")
    assert killers, f"{broken.store.__name__} survived every check"
    assert set(broken.catches) <= failed


def test_every_broken_store_has_exactly_one_documented_bug() -> None:
    """Each broken store names the ids that must catch it, and they are all active ids."""
    from convledger_conformance.requirements import active_ids

    assert len(BROKEN_STORES) >= 6
    for broken in BROKEN_STORES:
        assert broken.catches and set(broken.catches) <= active_ids()
        assert (broken.store.__doc__ or "").split(":")[0] in broken.catches
