"""Chapter DUR: the history checker, the crash command, the reference and the broken stores.

Every broken store of :mod:`galleries.durability` must be caught by the check
its record names (a surviving broken store fails here); the reference SQLite
store passes the same checks, in process (its locator) and over the wire
(``convledger-conformance crash --command``).
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

from conftest import draft
from convledger.sqlite import SqliteStore, new_file_store
from convledger_conformance.cli import main
from convledger_conformance.durability.handoff import hand_off_calls
from convledger_conformance.durability.history import Call, check_history, linearize
from convledger_conformance.registry import all_checks
from convledger_conformance.runner import run_suite
from galleries import BrokenStore
from galleries.durability import BROKEN, AcknowledgesBeforeCommit, KeepsWritesInMemory
from node_kit import built_kit

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
SQLITE_SERVER = f"{sys.executable} -m convledger serve-wire --store sqlite"
DUR_CHECKS = ("killed_store_keeps_what_it_acknowledged", "concurrent_histories_are_linearizable",
              "killed_migration_leaves_a_file_that_opens")


def _append(client: int, at: float, until: float, ids: tuple[str, ...], seqs: tuple[int, ...],
            expected: int | None = None) -> Call:
    return Call(client, "c", "append", at, until, ids, expected, "ok", seqs)


def test_overlapping_appends_linearize_in_either_order() -> None:
    """DUR-010: two overlapping appends may take seqs in either order; a conflict names the head."""
    calls = [
        _append(0, 0.0, 2.0, ("b",), (2,)),
        _append(1, 0.5, 1.5, ("a",), (1,)),
        Call(2, "c", "append", 0.2, 3.0, ("x",), 0, "conflict", 2),
        Call(0, "c", "read", 3.5, 4.0, value=("a", "b")),
        Call(1, "c", "head", 3.6, 4.1, value=2),
    ]
    assert [v.status for v in check_history(calls)] == ["linearizable"]


@pytest.mark.parametrize("calls", [
    [_append(0, 0, 1, ("a",), (1,), 0), _append(1, 0, 1, ("b",), (2,), 0)],
    [_append(0, 0, 1, ("a",), (1,)), Call(1, "c", "head", 2, 3, value=0)],
    [_append(0, 0, 1, ("a",), (1,)), _append(1, 2, 3, ("b",), (1,))],
    [_append(0, 0, 1, ("a",), (1,)), Call(1, "c", "read", 2, 3, value=())],
], ids=["expected-head-twice", "stale-head", "seq-reused", "lost-write-read"])
def test_broken_histories_are_not_linearizable(calls: list[Call]) -> None:
    """DUR-010: each history no order of the ledger model explains is refuted."""
    assert linearize(calls)[0] == "not_linearizable"


def test_a_search_past_its_bound_is_too_long_not_passed() -> None:
    """DUR-013: the bound ends the search with ``too_long``, never ``linearizable``."""
    calls = [_append(n, 0.0, 10.0, (f"e{n}",), (n + 1,)) for n in range(12)]
    calls.append(Call(99, "c", "head", 0.0, 10.0, value=99))
    status, steps, _ = linearize(calls, bound=50)
    assert status == "too_long" and steps > 50
    assert linearize(calls)[0] == "not_linearizable"


def test_the_reference_sqlite_store_passes_in_process() -> None:
    """The reference survives its kills (also inside a v1 migration) and concurrent writers."""
    checks = [item for item in all_checks() if item.name in DUR_CHECKS]
    report = run_suite(new_file_store, profile="smoke", checks=checks, derandomize=True)
    results = {result.name: result for result in report.checks}
    assert all(results[name].status == "passed" for name in DUR_CHECKS), {
        name: results[name].message for name in DUR_CHECKS}
    assert all(report.status_of(f"DUR-0{n:02d}") == "passed" for n in (1, 2, 3, 4, 5, 6, 7, 8,
                                                                       10, 11, 12, 13))


@pytest.mark.slow
def test_the_crash_command_passes_the_sqlite_server(tmp_path: Path) -> None:
    """``crash --command``: 2 kills (inside a large batch, a large import), 2 concurrent servers.

    Slow (about 10 s): ``.ci/run`` runs the same command at 6 rounds and 3 clients.
    """
    report_path = tmp_path / "crash.json"
    status = main(["crash", "--command", SQLITE_SERVER, "--rounds", "2", "--seed", "3",
                   "--clients", "2", "--steps", "20", "--max-delay", "0.6",
                   "--import-events", "1000", "--json", str(report_path)])
    report = json.loads(report_path.read_text("utf-8"))
    assert status == 0, report
    statuses = {row["id"]: row["status"] for row in report["requirements"]}
    assert set(statuses.values()) == {"passed"}, statuses
    summary = report["summary"]
    assert summary["kills"] == 2 and summary["batchKills"] == 1 and summary["importKills"] == 1
    # 2 clients x 20 steps, then the hand-off's calls (every client sees every other's append)
    assert summary["acknowledgedChecks"] > 0
    assert summary["calls"] == 2 * 20 + hand_off_calls(2)


@pytest.mark.parametrize(("server", "clients"), [
    (f"{sys.executable} -m convledger serve-wire --store memory", "0"),
    pytest.param(f"{NODE} {ROOT / 'interop' / 'node' / 'server.js'}", "2",
                 marks=pytest.mark.skipif(NODE is None, reason="node is not on PATH")),
], ids=["memory", "node"])
def test_a_server_without_open_store_is_not_applicable(
    server: str, clients: str, tmp_path: Path
) -> None:
    """WIR-040: a server that keeps nothing is reported not_applicable; the run does not fail."""
    if "server.js" in server:
        built_kit()  # interop/node/server.js runs on the TypeScript kit
    report_path = tmp_path / "crash.json"
    assert main(["crash", "--command", server, "--rounds", "1", "--clients", clients,
                 "--json", str(report_path)]) == 0
    rows = json.loads(report_path.read_text("utf-8"))["requirements"]
    expected = {"not_applicable"} if clients != "0" else {"not_applicable", "not_run"}
    assert {row["status"] for row in rows} == expected
    assert all(row["status"] == "not_applicable" for row in rows if row["id"] == "DUR-001")


@pytest.mark.parametrize("broken", BROKEN, ids=lambda broken: broken.name)
def test_every_broken_store_is_caught(broken: BrokenStore) -> None:
    """Each crash-broken or race-broken store fails the rule its record names."""
    report = run_suite(broken.factory, profile="smoke", checks=broken.selected(),
                       derandomize=True)
    caught = {ident for ident in broken.catches if report.status_of(ident) == "failed"}
    assert caught == set(broken.catches), [
        (result.name, result.status, result.message) for result in report.checks]


@pytest.mark.parametrize("cls", [AcknowledgesBeforeCommit, KeepsWritesInMemory],
                         ids=lambda cls: cls.__name__)
def test_a_store_committing_later_commits_before_close(
    cls: type[SqliteStore], tmp_path: Path
) -> None:
    """Regression: an append right before ``close`` was committed by a thread outliving the store.

    The CAP-005 fresh-store check appends one event and closes at once; the
    commit thread (50 ms later) or the flush timer (1 s later) then appended on
    the closed store and raised ``StoreClosedError`` in its thread, a warning
    of whichever test was running by then. ``close`` now waits for it, so a
    store closed in order keeps what it acknowledged (only a kill loses it).
    """
    path = tmp_path / "ledger.sqlite"
    before = set(threading.enumerate())
    store = cls(path)
    store.append("c", [draft("e1")])
    store.close()
    assert [t for t in threading.enumerate() if t not in before] == []
    reopened = SqliteStore(path)
    try:
        assert reopened.head("c") == 1
    finally:
        reopened.close()
