"""Issue 36: the cases the crash command missed or mis-reported, as negative controls.

Each broken server of :mod:`galleries.crash_servers` runs under
``convledger-conformance crash --command`` (a real server process, killed
with SIGKILL) and must be reported failed with the requirement
:data:`~galleries.crash_servers.CONTROLS` names, by a report (JSON and exit
status 1), never a traceback. Each run is small (one to three rounds, a
600-event import). :class:`~galleries.crash_servers.JournalInMemory` is
caught only when a kill lands while a large write spills pages into the file,
so its run is larger and opt-in (``CONVLEDGER_CRASH_DEEP=1``); the reference
servers' passing runs are in ``test_durability.py`` and ``.ci/run``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from convledger_conformance.cli import main
from galleries.crash_servers import CONTROLS

TESTS = Path(__file__).resolve().parent
DEEP = os.environ.get("CONVLEDGER_CRASH_DEEP") == "1"


def _crash(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           *options: str) -> tuple[int, dict[str, Any]]:
    """Run the crash command on the broken server ``name``; its exit status and JSON report."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]))
    report = tmp_path / f"{name}.json"
    server = f"{sys.executable} -m convledger serve-wire --opener galleries.crash_servers:{name}.at"
    status = main(["crash", "--command", server, "--import-events", "600", "--max-delay", "0.3",
                   "--json", str(report), *options])
    return status, json.loads(report.read_text("utf-8"))


def _statuses(report: dict[str, Any]) -> dict[str, str]:
    return {row["id"]: row["status"] for row in report["requirements"]}


@pytest.mark.parametrize(("name", "options"), [
    ("HeadInSecondTransaction", ("--rounds", "3", "--seed", "5")),
    ("InternalOnLargeImport", ("--rounds", "1", "--seed", "5")),
    ("PurgeDeletesAtClose", ("--rounds", "1", "--seed", "5")),
    ("LeasesConversations", ("--rounds", "0", "--clients", "2", "--steps", "0", "--seed", "5")),
])
def test_the_crash_command_reports_the_broken_server(
    name: str, options: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each broken server fails every requirement its control names, in the report."""
    status, report = _crash(name, tmp_path, monkeypatch, *options)
    statuses = _statuses(report)
    assert status == 1
    assert {ident: statuses[ident] for ident in CONTROLS[name]} == dict.fromkeys(
        CONTROLS[name], "failed"), report["failures"] or report["requirements"]


def test_a_round_without_new_writes_is_failed_not_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DUR-008, DUR-015: the round after the first restart acknowledged nothing, and says so
    (before issue 36 such a store passed, its rounds checking only what round 1 wrote)."""
    status, report = _crash("RefusesWritesAfterRestart", tmp_path, monkeypatch,
                            "--rounds", "2", "--seed", "5")
    statuses = _statuses(report)
    assert status == 1
    assert statuses["DUR-008"] == statuses["DUR-015"] == "failed", report["failures"]
    assert report["summary"]["roundAcknowledged"][0] > 0
    assert report["summary"]["roundAcknowledged"][1] == 0
    assert any("round 2" in failure and "acknowledged no new write" in failure
               for failure in report["failures"])


def test_undeclared_capabilities_are_not_applicable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DUR-016: a server of ledger and persistence alone passes, with DUR-004, DUR-006 and
    DUR-007 not_applicable (before issue 36 they were reported passed)."""
    status, report = _crash("LedgerOnly", tmp_path, monkeypatch, "--rounds", "1", "--seed", "5")
    statuses = _statuses(report)
    assert status == 0, report["failures"]
    assert {ident for ident, value in statuses.items() if value == "not_applicable"} == {
        "DUR-004", "DUR-006", "DUR-007"}
    assert {value for ident, value in statuses.items()
            if ident not in ("DUR-004", "DUR-006", "DUR-007")} <= {"passed", "not_run"}
    assert statuses["DUR-001"] == "passed"


@pytest.mark.skipif(not DEEP, reason="opt-in: CONVLEDGER_CRASH_DEEP=1 (about a minute)")
def test_a_file_left_half_written_by_a_kill_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """journal_mode=MEMORY: a kill inside a large write's page spills leaves a half-written
    file, caught as a half-visible import, broken seqs, a head apart from read or a malformed
    file. Measured for issue 36 (3 rounds, one import kill, per seed): 7 of 8 seeds caught,
    against 3 of 8 with the kills placed as before (20 % .. 70 % of the import's time)."""
    caught = 0
    for seed in (1, 2, 3, 4):
        status, report = _crash("JournalInMemory", tmp_path, monkeypatch,
                                "--rounds", "3", "--seed", str(seed), "--import-events", "3000")
        failed = {ident for ident, value in _statuses(report).items() if value == "failed"}
        caught += status == 1 and bool(failed & set(CONTROLS["JournalInMemory"]))
    assert caught >= 2
