"""Special events at the first, middle and last seq and past a page: the positions gallery.

``special_events_at_every_position`` kills each broken catch-up; the fold
checks that keep special events in the middle of short ledgers pass them.
"""

from __future__ import annotations

import pytest

from convledger_conformance.registry import all_checks
from galleries import BrokenStore
from galleries.positions import BROKEN
from kill_table import focused, kill_with_report

FOLD_STORES = [b for b in BROKEN if not {"TRN-104", "TRN-094"} & set(b.catches)]
"""The catch-ups (the transition-fold stores follow, with their own tests)."""
OLD_FOLD_CHECKS = ("unknown_kinds_in_a_fold", "partial_catch_up_reports_lag",
                   "checkpoint_never_ahead_never_back")


@pytest.mark.parametrize("broken", FOLD_STORES, ids=lambda b: b.name)
def test_the_positions_check_kills_the_broken_store(broken: BrokenStore) -> None:
    """The focused checks of its id, among them the positions check, fail it."""
    selected = [item for item in all_checks() if item.name == "special_events_at_every_position"]
    row, report = kill_with_report(broken, selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "expected" in failed.message, failed.message


@pytest.mark.parametrize("broken", FOLD_STORES, ids=lambda b: b.name)
def test_the_fold_checks_alone_miss_it(broken: BrokenStore) -> None:
    """Special events in the middle of short ledgers only: the broken store passes."""
    selected = [item for item in all_checks() if item.name in OLD_FOLD_CHECKS]
    row, _ = kill_with_report(broken, selected, profile="smoke")
    assert not row.failed, row.line()


TRANSITION_STORES = [b for b in BROKEN if "TRN-104" in b.catches]


def test_the_other_import_checks_miss_the_page_edge() -> None:
    """The other focused checks of TRN-104 (no state machine) pass the page-edge store.

    (The shipped transition vectors end on a transition, so they catch FoldStopsBeforeTheLastEvent
    already; nothing but the new check put a transition at seq 1001.)
    """
    (broken,) = [b for b in TRANSITION_STORES if b.name == "FoldSkipsTheFirstOfTheSecondPage"]
    selected = [item for item in focused(("TRN-104",))
                if item.name != "transitions_at_every_position"]
    row, _ = kill_with_report(broken, selected, profile="ci")
    assert not row.failed, row.line()


@pytest.mark.parametrize("broken", TRANSITION_STORES, ids=lambda b: b.name)
def test_the_transition_positions_check_kills_the_broken_store(broken: BrokenStore) -> None:
    """transitions_at_every_position fails TRN-104, naming the seqs of the transitions."""
    selected = [item for item in all_checks() if item.name == "transitions_at_every_position"]
    row, report = kill_with_report(broken, selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "transitions at seqs 1, 1000, 1001 and 1021" in failed.message, failed.message


def test_the_reference_passes_the_transition_positions() -> None:
    """MemoryStore and SqliteStore pass the check."""
    from convledger.memory import MemoryStore
    from convledger.sqlite import SqliteStore
    from galleries.sqlite import files_of

    selected = [item for item in all_checks() if item.name == "transitions_at_every_position"]
    for factory in (MemoryStore, files_of(SqliteStore)):
        row, report = kill_with_report(TRANSITION_STORES[0], selected, factory=factory,
                                       profile="smoke")
        assert report.ok and not row.failed, row.line()


def test_the_purge_positions_check_kills_the_broken_purge() -> None:
    """purge_at_every_position fails TRN-094; the other purge checks (small ledgers) pass it."""
    (broken,) = [b for b in BROKEN if b.name == "PurgesAllButTheLastPage"]
    selected = [item for item in all_checks() if item.name == "purge_at_every_position"]
    row, report = kill_with_report(broken, selected, profile="smoke")
    assert set(broken.catches) <= set(row.failed), row.line()
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "after the purge of a conversation of 1001 events: expected" in failed.message, (
        failed.message)
    others = [item for item in focused(("TRN-093", "TRN-094"))
              if item.name != "purge_at_every_position"]
    row, _ = kill_with_report(broken, others, profile="smoke")
    assert not row.failed, row.line()
