"""A process that makes fresh PostgreSQL stores leaves no schema behind, however it ends.

PGS-051, PGS-054: fresh schemas are dropped when their stores close or their
process exits. PGS-069: a process killed with SIGKILL runs no exit hook, so its
guardian drops them; at a normal exit everything left goes in one statement, so
a server with many open stores exits before its client gives up on it.

Each test runs its processes with a prefix of its own
(``CONVLEDGER_PG_SCHEMA_PREFIX``), so it counts only its own schemas while
other runs share the server, and drops whatever it finds at the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

psycopg = pytest.importorskip("psycopg")

from conftest import draft  # noqa: E402
from convledger_conformance.wire.connection import WireConnection  # noqa: E402
from convledger_conformance.wire.store import WireStore  # noqa: E402

WAIT = 120.0
"""Seconds a guardian gets to drop what a killed process left (a bound, not a threshold)."""


@pytest.fixture
def prefix(pg_dsn: str) -> Iterator[str]:
    """A schema prefix of this test's own; whatever carries it is dropped afterwards."""
    name = f"convledger_test_leak{uuid.uuid4().hex[:8]}_"
    yield name
    for schema in _schemas(pg_dsn, name):
        with psycopg.connect(pg_dsn, autocommit=True) as connection:
            connection.execute(psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                psycopg.sql.Identifier(schema)))


def _schemas(dsn: str, prefix: str) -> list[str]:
    pattern = prefix.replace("_", "\\_") + "%"
    with psycopg.connect(dsn, autocommit=True) as connection:
        found = connection.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s ORDER BY 1", (pattern,))
        return [str(row[0]) for row in found]


def _eventually_none(dsn: str, prefix: str) -> list[str]:
    """The schemas left once none is, or after :data:`WAIT` seconds."""
    deadline = time.monotonic() + WAIT
    while (left := _schemas(dsn, prefix)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _server(dsn: str, prefix: str) -> WireConnection:
    command = [sys.executable, "-m", "convledger", "serve-wire", "--store", "postgres",
               "--dsn", dsn]
    return WireConnection(command, env={**os.environ, "CONVLEDGER_PG_SCHEMA_PREFIX": prefix})


def _fill(connection: WireConnection, stores: int) -> None:
    """``stores`` stores left open, one event each."""
    for number in range(stores):
        store = WireStore(connection, connection.request("newStore", {}))
        store.append("c", [draft(f"e{number}", value="left open")])


def test_a_server_killed_with_sigkill_leaves_no_schema(pg_dsn: str, prefix: str) -> None:
    """PGS-069: the guardian drops the schemas of a SIGKILLed server's open stores."""
    connection = _server(pg_dsn, prefix)
    _fill(connection, 3)
    assert len(_schemas(pg_dsn, prefix)) == 3
    os.kill(connection.pid, signal.SIGKILL)
    connection.close()
    assert _eventually_none(pg_dsn, prefix) == []


def test_a_server_ending_with_many_open_stores_drops_them_before_it_exits(
    pg_dsn: str, prefix: str
) -> None:
    """PGS-054, PGS-069: the end of input closes every store; none is left when it exits."""
    connection = _server(pg_dsn, prefix)
    _fill(connection, 12)
    connection.close()  # closes its input, waits 5 s, kills it if it is still running
    assert connection.exit_status() == 0
    assert _schemas(pg_dsn, prefix) == []


PROGRAM = """
import os, signal, sys
from convledger.postgres import new_schema_store
stores = [new_schema_store() for _ in range(3)]
stores[0].close()
print("ready", flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("ending", ["exit", "kill"])
def test_a_process_of_new_schema_store_leaves_no_schema(
    pg_dsn: str, prefix: str, ending: str
) -> None:
    """PGS-051, PGS-069: stores left open are dropped at exit, and by the guardian on SIGKILL."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, ending], capture_output=True, text=True, timeout=WAIT,
        env={**os.environ, "CONVLEDGER_PG_DSN": pg_dsn, "CONVLEDGER_PG_SCHEMA_PREFIX": prefix},
    )
    assert done.stdout == "ready\n", done.stderr
    assert done.returncode == (-signal.SIGKILL if ending == "kill" else 0), done.stderr
    if ending == "exit":
        assert _schemas(pg_dsn, prefix) == []  # dropped before the process ended
    assert _eventually_none(pg_dsn, prefix) == []
