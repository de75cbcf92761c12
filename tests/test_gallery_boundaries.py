"""The generated boundary checks kill every store of the boundaries gallery; the corpus cannot.

Each broken store refuses one value exactly at its limit. The hostile corpus
sends only values past a limit, so it passes them all (the blind spot of issue
20); the boundary checks generated from ``spec/limits.json`` fail each.
"""

from __future__ import annotations

import pytest

from convledger_conformance.hostile.checks import run_corpus
from convledger_conformance.registry import all_checks
from galleries import BrokenStore
from galleries.boundaries import BROKEN
from kill_table import kill_with_report


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_boundary_checks_kill_the_broken_store(broken: BrokenStore) -> None:
    """The generated boundaries_* checks alone fail the broken store's tagged id."""
    selected = [item for item in all_checks() if item.name.startswith("boundaries_")]
    row, report = kill_with_report(broken, selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)
    messages = [result.message for result in report.checks if result.status == "failed"]
    assert any("exactly at" in message for message in messages), messages


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_hostile_corpus_alone_misses_it(broken: BrokenStore) -> None:
    """The corpus (values past each limit only) passes it: the boundary checks are needed."""
    store = broken.factory()
    tally = run_corpus(store, "smoke")
    assert not tally.failures, tally.failures
