"""Every read is fresh across handles and processes: the freshness checks kill each store
that caches reads.

The ledger's own freshness check (``handles_read_fresh``: head, read, export)
passes these stores; ``every_read_fresh_across_handles`` (runtime reads,
checkpoints, spills, search) fails each store that caches per handle and
passes each that caches per process, which ``every_read_fresh_across_processes``
fails.
"""

from __future__ import annotations

import pytest

from convledger.sqlite import SqliteStore
from convledger_conformance.registry import all_checks
from galleries import BrokenStore
from galleries.freshness import BROKEN, PER_PROCESS
from galleries.sqlite import files_of
from kill_table import kill_with_report

ACROSS_HANDLES = ("handles_read_fresh", "every_read_fresh_across_handles")
"""The freshness checks that were there before the check across processes."""


def _checks(*names: str) -> list[object]:
    found = [item for item in all_checks() if item.name in names]
    assert sorted(item.name for item in found) == sorted(names)
    return found


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_freshness_check_kills_the_broken_store(broken: BrokenStore) -> None:
    """The check fails LED-019, naming the read, the write before it and both answers."""
    row, report = kill_with_report(broken, list(broken.selected()), profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)
    (failed,) = [result for result in report.checks if result.status == "failed"]
    assert "right after" in failed.message and "expected" in failed.message, failed.message


@pytest.mark.parametrize("broken", PER_PROCESS, ids=lambda b: b.name)
def test_the_process_check_names_read_write_process_and_answers(broken: BrokenStore) -> None:
    """The failure names the read, the write and the other process; expected is not actual."""
    _, report = kill_with_report(broken, list(broken.selected()), profile="smoke")
    (failed,) = [result for result in report.checks if result.status == "failed"]
    message = failed.message
    assert "in process #1 (another process" in message, message
    assert "through the first handle in this process right after" in message, message
    expected = message.split("expected ", 1)[1].split(", got ", 1)
    assert len(expected) == 2 and expected[0] != expected[1], message


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_ledger_freshness_check_alone_misses_it(broken: BrokenStore) -> None:
    """head, read and export stay fresh in these stores: the new checks are needed."""
    row, _ = kill_with_report(broken, _checks("handles_read_fresh"), profile="smoke")
    assert not row.failed, row.line()


@pytest.mark.parametrize("broken", PER_PROCESS, ids=lambda b: b.name)
def test_a_process_wide_cache_survives_the_checks_across_handles(broken: BrokenStore) -> None:
    """Every handle of one process shares the cache, so only another process sees it stale."""
    row, report = kill_with_report(broken, _checks(*ACROSS_HANDLES), profile="smoke")
    assert not row.failed and report.ok, row.line()


def test_the_reference_passes() -> None:
    """The SQLite store (multi_process, persistence, every capability) passes both checks."""
    selected = _checks("every_read_fresh_across_handles", "every_read_fresh_across_processes")
    row, report = kill_with_report(BROKEN[0], selected, factory=files_of(SqliteStore),
                                   profile="smoke")
    assert not row.failed and report.ok, row.line()
    assert [result.status for result in report.checks][-2:] == ["passed", "passed"]
