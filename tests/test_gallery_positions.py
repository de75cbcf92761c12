"""Special events at the first, middle and last seq and past a page: the positions gallery.

``special_events_at_every_position`` kills each broken catch-up; the fold
checks that keep special events in the middle of short ledgers pass them.
"""

from __future__ import annotations

import pytest

from convledger_conformance.registry import all_checks
from galleries import BrokenStore
from galleries.positions import BROKEN
from kill_table import kill_with_report

OLD_FOLD_CHECKS = ("unknown_kinds_in_a_fold", "partial_catch_up_reports_lag",
                   "checkpoint_never_ahead_never_back")


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_positions_check_kills_the_broken_store(broken: BrokenStore) -> None:
    """The focused checks of its id, among them the positions check, fail it."""
    selected = [item for item in all_checks() if item.name == "special_events_at_every_position"]
    row, report = kill_with_report(broken, selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "expected" in failed.message, failed.message


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_fold_checks_alone_miss_it(broken: BrokenStore) -> None:
    """Special events in the middle of short ledgers only: the broken store passes."""
    selected = [item for item in all_checks() if item.name in OLD_FOLD_CHECKS]
    row, _ = kill_with_report(broken, selected, profile="smoke")
    assert not row.failed, row.line()
