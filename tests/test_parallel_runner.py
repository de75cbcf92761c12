"""``--jobs N``: the checks of a run spread over forked processes, reported as one run.

Each check has its own seed and its own stores, so a derandomized run with
two jobs reports what a run with one reports, check by check, in the same
order; a broken store fails the same checks; ``-x`` stops handing out checks.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from convledger.memory import MemoryStore
from convledger.sqlite import new_file_store
from convledger_conformance.parallel import default_jobs, longest_first
from convledger_conformance.registry import Check, all_checks
from convledger_conformance.report import FAILED, NOT_RUN, PASSED
from convledger_conformance.runner import run_suite
from galleries.ledger import EventIdsUniquePerConversation

NAMES = ("append_batch_bounds", "seqs_follow_the_head", "event_ids_unique_in_store",
         "ledger_state_machine", "read_windows", "export_is_the_archive",
         "purge_takes_checkpoints_and_spills", "canon_tool")


def selected() -> list[Check]:
    checks = [item for item in all_checks() if item.name in NAMES]
    assert len(checks) == len(NAMES)
    return checks


def rows(jobs: int, factory: object = MemoryStore, **options: object) -> list[tuple[str, ...]]:
    report = run_suite(factory, profile="smoke", checks=selected(), derandomize=True,  # type: ignore[arg-type]
                       jobs=jobs, **options)  # type: ignore[arg-type]
    return [(r.name, r.status, r.message, ",".join(r.failed_ids)) for r in report.checks]


def test_two_jobs_report_what_one_job_reports() -> None:
    one = rows(1)
    assert one == rows(2)
    assert {row[1] for row in one} == {PASSED}
    assert [row[0] for row in one][2:] == [item.name for item in selected()]


def test_the_sqlite_file_factory_survives_a_fork() -> None:
    """Forked workers share the factory's state: each store still gets a directory of its own.

    Regression: a counter of directory names, copied into both workers, made them
    create the same directory (FileExistsError in every check after the fork).
    """
    one = rows(1, new_file_store)
    assert {row[1] for row in one} == {PASSED}
    assert rows(2, new_file_store) == one


def test_a_broken_store_fails_the_same_checks_with_two_jobs() -> None:
    one = rows(1, EventIdsUniquePerConversation, shrink=False)
    assert FAILED in {row[1] for row in one}
    assert rows(2, EventIdsUniquePerConversation, shrink=False) == one


def test_exitfirst_stops_handing_out_checks() -> None:
    report = run_suite(EventIdsUniquePerConversation, profile="smoke", checks=selected(),
                       derandomize=True, shrink=False, jobs=2, stop_at_first=True)
    statuses = [r.status for r in report.checks]
    assert FAILED in statuses
    stopped = [r for r in report.checks if r.status == NOT_RUN]
    assert all("stopped at the first failed check" in r.message for r in stopped)
    assert len(report.checks) == len(selected()) + 2


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
