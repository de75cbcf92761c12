"""``--jobs N``: the checks of a run spread over forked processes, reported as one run.

Each check has its own seed and its own stores, so a derandomized run with
two jobs reports what a run with one reports, check by check, in the same
order; a broken store fails the same checks; ``-x`` stops handing out checks.
The runs that fork go through the command line, a fresh process with no other
thread: a pytest-xdist worker runs execnet's threads, and a process forked
while one of them held a lock hung (the runner now refuses that, tested below).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from convledger.memory import MemoryStore
from convledger_conformance.parallel import default_jobs, longest_first
from convledger_conformance.registry import Check, all_checks
from convledger_conformance.report import FAILED, NOT_RUN, PASSED
from convledger_conformance.runner import run_suite

TESTS = Path(__file__).parent
NAMES = ("append_batch_bounds", "seqs_follow_the_head", "event_ids_unique_in_store",
         "ledger_state_machine", "read_windows", "export_is_the_archive",
         "purge_takes_checkpoints_and_spills", "canon_tool")
SELECTION = " or ".join(NAMES)


def selected() -> list[Check]:
    checks = [item for item in all_checks() if item.name in NAMES]
    assert len(checks) == len(NAMES)
    return checks


def cli_rows(tmp_path: Path, store: str, jobs: int, *extra: str) -> list[tuple[str, ...]]:
    """The checks of a derandomized smoke run of the command line: name, status, message."""
    report = tmp_path / f"report-{jobs}.json"
    run = subprocess.run(
        [sys.executable, "-m", "convledger_conformance", "--store", store, "--profile", "smoke",
         "--derandomize", "-k", SELECTION, "--jobs", str(jobs), "--json", str(report), *extra],
        capture_output=True, text=True, timeout=600, check=False, cwd=TESTS,
    )
    assert run.returncode in (0, 1), run.stderr
    checks = json.loads(report.read_text("utf-8"))["checks"]
    return [(c["name"], c["status"], c["message"], ",".join(c["failedIds"])) for c in checks]


@pytest.mark.parametrize("store", ["convledger.memory:MemoryStore",
                                   "convledger.sqlite:new_file_store"])
def test_two_jobs_report_what_one_job_reports(store: str, tmp_path: Path) -> None:
    """Memory, and the SQLite file factory, whose directories once came from a counter
    the two workers shared (FileExistsError in every check after the fork)."""
    one = cli_rows(tmp_path, store, 1)
    assert {row[2] for row in one if row[1] == NOT_RUN} <= {
        row[2] for row in one if "is not declared" in row[2]}
    assert {row[0] for row in one if row[1] == PASSED} >= set(NAMES)
    assert cli_rows(tmp_path, store, 2) == one


def test_a_broken_store_fails_the_same_checks_with_two_jobs(tmp_path: Path) -> None:
    store = "galleries.ledger:EventIdsUniquePerConversation"
    one = cli_rows(tmp_path, store, 1, "--no-shrink")
    assert FAILED in {row[1] for row in one}
    assert cli_rows(tmp_path, store, 2, "--no-shrink") == one


def test_exitfirst_stops_handing_out_checks(tmp_path: Path) -> None:
    rows = cli_rows(tmp_path, "galleries.ledger:EventIdsUniquePerConversation", 2,
                    "--no-shrink", "-x")
    assert FAILED in {row[1] for row in rows}
    stopped = [row for row in rows if row[1] == NOT_RUN and "is not declared" not in row[2]]
    assert all("stopped at the first failed check" in row[2] for row in stopped)


def test_a_process_running_another_thread_is_not_forked() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait, name="another-thread", daemon=True)
    other.start()
    try:
        with pytest.raises(ValueError, match="another-thread"):
            run_suite(MemoryStore, profile="smoke", checks=selected()[:1], jobs=2)
    finally:
        release.set()
        other.join()


@pytest.mark.parametrize("jobs", [0, -1, True, 1.5])
def test_jobs_must_be_a_whole_number_of_at_least_one(jobs: object) -> None:
    with pytest.raises(ValueError, match="jobs"):
        run_suite(MemoryStore, profile="smoke", checks=selected()[:1], jobs=jobs)  # type: ignore[arg-type]


def test_the_machines_are_handed_out_first() -> None:
    checks = selected()
    order = [checks[index].name for index in longest_first(checks)]
    assert order[0] == "ledger_state_machine"
    assert sorted(order) == sorted(NAMES)
    assert default_jobs() >= 1


def test_the_command_line_refuses_jobs_over_the_wire() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "convledger_conformance", "--command", "true", "--jobs", "2"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert run.returncode == 2 and "--jobs needs --store" in run.stderr


@pytest.mark.parametrize("value", ["0", "two"])
def test_the_command_line_refuses_a_bad_jobs_value(value: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "convledger_conformance", "--jobs", value, "--list"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert run.returncode == 2 and "--jobs" in run.stderr


def test_a_factory_that_does_not_survive_a_fork_is_refused() -> None:
    """fork_safe = False (the PostgreSQL factory's pool of schemas): jobs must be 1."""

    def factory() -> MemoryStore:
        return MemoryStore()

    factory.fork_safe = False  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="fork"):
        run_suite(factory, profile="smoke", checks=selected()[:1], jobs=2)
    run = subprocess.run(
        [sys.executable, "-m", "convledger_conformance", "--store",
         "convledger.postgres:new_schema_store", "--jobs", "2", "-k", "nothing"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert run.returncode == 2 and "survives a fork" in run.stderr, run.stderr
