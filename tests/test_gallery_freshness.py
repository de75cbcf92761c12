"""Every read is fresh across handles: the freshness check kills each store that caches reads.

The ledger's own freshness check (``handles_read_fresh``: head, read, export)
passes these stores; ``every_read_fresh_across_handles`` (runtime reads,
checkpoints, spills, search) fails each.
"""

from __future__ import annotations

import pytest

from convledger.sqlite import SqliteStore
from convledger_conformance.registry import all_checks
from galleries import BrokenStore
from galleries.freshness import BROKEN
from galleries.sqlite import files_of
from kill_table import kill_with_report


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_freshness_check_kills_the_broken_store(broken: BrokenStore) -> None:
    """The check fails LED-019, naming the read, the write before it and both answers."""
    row, report = kill_with_report(broken, list(broken.selected()), profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "right after" in failed.message and "expected" in failed.message, failed.message


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_ledger_freshness_check_alone_misses_it(broken: BrokenStore) -> None:
    """head, read and export stay fresh in these stores: the new check is needed."""
    selected = [item for item in all_checks() if item.name == "handles_read_fresh"]
    row, _ = kill_with_report(broken, selected, profile="smoke")
    assert not row.failed, row.line()


def test_the_reference_passes() -> None:
    """The SQLite store (multi_process, persistence, every capability) passes the check."""
    selected = [item for item in all_checks() if item.name == "every_read_fresh_across_handles"]
    row, report = kill_with_report(BROKEN[0], selected, factory=files_of(SqliteStore),
                                   profile="smoke")
    assert not row.failed and report.ok, row.line()
