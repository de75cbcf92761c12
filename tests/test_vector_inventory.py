"""The runner fails when a shipped vector file is replayed by no check."""

from __future__ import annotations

from pathlib import Path

from convledger.memory import MemoryStore
from convledger_conformance.registry import all_checks
from convledger_conformance.report import FAILED, PASSED, Report
from convledger_conformance.runner import run_suite, vector_inventory
from convledger_conformance.vectors.files import INVENTORY_CHECK, consumed, shipped_files


def test_every_shipped_vector_file_is_consumed() -> None:
    """Each file under the package's vectors/ folder is replayed by a registered check."""
    assert shipped_files() == consumed()
    assert vector_inventory().status == PASSED


def test_a_stray_vector_file_fails_the_inventory(tmp_path: Path) -> None:
    """A file no check replays (a new trace file, a stray note) fails, and is named."""
    for name in sorted(consumed()):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    (tmp_path / "traces" / "new-corpus.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("x")
    result = vector_inventory(tmp_path)
    assert result.status == FAILED
    assert "traces/new-corpus.json" in result.message and "notes.txt" in result.message


def test_a_run_of_the_whole_suite_reports_the_inventory(memory_smoke_report: Report) -> None:
    """The whole suite carries the inventory pseudo-check; a chosen subset does not."""
    report = memory_smoke_report
    statuses = {item.name: item.status for item in report.checks}
    assert statuses[INVENTORY_CHECK] == PASSED and report.ok
    (one,) = [item for item in all_checks() if item.name == "read_windows"]
    subset = run_suite(MemoryStore, profile="smoke", checks=[one], derandomize=True)
    assert INVENTORY_CHECK not in {item.name for item in subset.checks}
