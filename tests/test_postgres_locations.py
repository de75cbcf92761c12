"""PGS-056, PGS-057: ``serve-wire --store postgres`` on a location, its cleanup, its crash run.

Real server processes on the machine's PostgreSQL (``CONVLEDGER_PG_DSN``); every
schema a test creates is dropped by the command under test, and checked gone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

from convledger.errors import LedgerError  # noqa: E402 - after the skip without psycopg
from convledger.postgres.factories import drop_schema  # noqa: E402
from convledger.postgres.locations import (  # noqa: E402
    LOCATION_PREFIX,
    SCHEMA_FILE,
    location_schema,
)
from convledger_conformance.cli import main  # noqa: E402
from convledger_conformance.durability.handoff import hand_off_calls  # noqa: E402
from convledger_conformance.durability.target import Target  # noqa: E402
from convledger_conformance.durability.workload import state_draft  # noqa: E402

SQLITE_SERVER = f"{sys.executable} -m convledger serve-wire --store sqlite"


def _server(dsn: str) -> str:
    return f"{sys.executable} -m convledger serve-wire --store postgres --dsn {dsn}"


def _crash_schemas(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        rows = connection.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                  (f"{LOCATION_PREFIX}%",)).fetchall()
    return {row[0] for row in rows}


def _drop(dsn: str, location: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_server(dsn).split(), "--drop-location", str(location)],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def location(pg_dsn: str, tmp_path: Path) -> Iterator[Path]:
    """A location directory; whatever schema it still names afterwards is dropped."""
    yield tmp_path / "location"
    named = tmp_path / "location" / SCHEMA_FILE
    if named.exists() and named.read_text("utf-8").strip().startswith(LOCATION_PREFIX):
        drop_schema(pg_dsn, named.read_text("utf-8").strip())


def test_first_openers_racing_on_one_location_agree_on_one_name(tmp_path: Path) -> None:
    """PGS-056: eight threads name the schema of one new location at once; one name wins."""
    names: list[str] = []
    barrier = threading.Barrier(8)

    def name() -> None:
        barrier.wait()
        names.append(location_schema(str(tmp_path / "racing")))

    threads = [threading.Thread(target=name) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(names) == 8 and len(set(names)) == 1
    assert names[0].startswith(LOCATION_PREFIX) and len(names[0]) == len(LOCATION_PREFIX) + 32
    assert sorted(p.name for p in (tmp_path / "racing").iterdir()) == [SCHEMA_FILE]


def test_two_servers_on_one_location_share_a_schema_the_drop_removes(
    pg_dsn: str, location: Path
) -> None:
    """PGS-056, WIR-041: what one server acknowledged the other reads; PGS-057 drops it."""
    target = Target.command(_server(pg_dsn))
    first, first_store = target.start(location)
    second, second_store = target.start(location)
    try:
        first_store.append("con-shared", [state_draft("evt-1", "1")])
        assert [event.event_id for event in second_store.read("con-shared").items] == ["evt-1"]
    finally:
        first.close()
        second.close()
    schema = (location / SCHEMA_FILE).read_text("utf-8").strip()
    assert schema in _crash_schemas(pg_dsn)
    again, again_store = target.start(location)  # a restarted server finds the same data
    try:
        assert again_store.head("con-shared") == 1
    finally:
        again.close()
    dropped = _drop(pg_dsn, location)
    assert dropped.returncode == 0, dropped.stderr
    assert schema not in _crash_schemas(pg_dsn) and not (location / SCHEMA_FILE).exists()
    assert _drop(pg_dsn, location).returncode == 0  # nothing left to drop: changes nothing


def test_a_location_naming_another_schema_is_refused_and_creates_nothing(
    pg_dsn: str, location: Path
) -> None:
    """PGS-056: a file that names no convledger_crash_ schema: integrity, nothing created."""
    location.mkdir()
    (location / SCHEMA_FILE).write_text("public\n", "utf-8")
    before = _crash_schemas(pg_dsn)
    with pytest.raises(LedgerError) as refused:
        Target.command(_server(pg_dsn)).start(location)
    assert refused.value.kind == "integrity"
    assert _crash_schemas(pg_dsn) == before
    dropped = _drop(pg_dsn, location)  # PGS-057: never drops a schema it did not make
    assert dropped.returncode != 0 and (location / SCHEMA_FILE).exists()


def test_a_failing_cleanup_fails_the_crash_run(tmp_path: Path) -> None:
    """``crash --cleanup``: a cleanup command that exits non-zero fails the run, and says so."""
    report_path = tmp_path / "crash.json"
    status = main(["crash", "--command", SQLITE_SERVER, "--rounds", "0", "--seed", "1",
                   "--import-events", "50", "--cleanup", "false {dir}",
                   "--json", str(report_path)])
    report = json.loads(report_path.read_text("utf-8"))
    assert status == 1
    assert len(report["summary"]["cleanupErrors"]) == 1
    assert "exited 1" in report["summary"]["cleanupErrors"][0]


@pytest.mark.slow
def test_the_crash_command_passes_the_postgres_server_and_leaves_no_schema(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Chapter DUR on ``serve-wire --store postgres``: 2 kills, 2 clients, then no schema left.

    Slow (about 10 s): ``.ci/run`` runs the same command at 4 rounds and 3 clients.
    """
    before = _crash_schemas(pg_dsn)
    report_path = tmp_path / "crash.json"
    status = main(["crash", "--command", _server(pg_dsn),
                   "--cleanup", f"{_server(pg_dsn)} --drop-location {{dir}}",
                   "--rounds", "2", "--seed", "5", "--clients", "2", "--steps", "20",
                   "--max-delay", "0.6", "--import-events", "1000",
                   "--json", str(report_path)])
    report = json.loads(report_path.read_text("utf-8"))
    assert status == 0, report
    assert {row["status"] for row in report["requirements"]} == {"passed"}, report
    summary = report["summary"]
    assert summary["kills"] == 2 and summary["acknowledgedChecks"] > 0
    # 2 clients x 20 steps, then the hand-off's calls (every client sees every other's append)
    assert summary["calls"] == 40 + hand_off_calls(2) and summary["cleanupErrors"] == []
    assert _crash_schemas(pg_dsn) <= before


def test_the_sqlite_drop_removes_the_location_file(tmp_path: Path) -> None:
    """``--store sqlite --drop-location``: the file openStore made and its journals go."""
    target = Target.command(SQLITE_SERVER)
    connection, store = target.start(tmp_path)
    try:
        store.append("con-a", [state_draft("evt-1", "1")])
    finally:
        connection.close()
    assert (tmp_path / "ledger.sqlite").exists()
    dropped = subprocess.run([*SQLITE_SERVER.split(), "--drop-location", str(tmp_path)],
                             capture_output=True, text=True, timeout=120, check=False)
    assert dropped.returncode == 0, dropped.stderr
    assert not any(path.name.startswith("ledger.sqlite") for path in tmp_path.iterdir())
