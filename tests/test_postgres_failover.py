"""Failover of the PostgreSQL store: a multi-host DSN, a lost connection, the settling of a write.

The default run uses the machine's server only: a DSN that names a port where
nothing listens before it (PGS-070), and a connection terminated by the server
under the store (PGS-013, ERR-013), after which the next call reconnects and
the refused batch is settled (DUR-020). The real failover (a primary killed
with SIGKILL, its synchronous standby promoted, three times) is
``scripts/pg_failover.py --small``, run by ``pytest -m pg_faults`` and by
``.ci/run``.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import draft
from convledger.errors import LedgerError
from convledger.settle import settle_append

psycopg = pytest.importorskip("psycopg")

from convledger.postgres import PostgresStore, schema_store_factory  # noqa: E402

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pg_failover.py"


def _dead_port() -> int:
    """A port of 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def multi_host(dsn: str) -> str:
    """PGS-070: libpq's key=value form, a dead host first, then ``dsn``'s server."""
    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    host, port = parts.get("host", "127.0.0.1"), parts.get("port", "5432")
    return psycopg.conninfo.make_conninfo(
        user=str(parts.get("user", "postgres")), dbname=str(parts.get("dbname", "postgres")),
        host=f"127.0.0.1,{host}", port=f"{_dead_port()},{port}",
        target_session_attrs="read-write")


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    made = schema_store_factory(multi_host(pg_dsn), connect_timeout=2.0)()
    assert isinstance(made, PostgresStore)
    yield made
    made.close()


def test_a_multi_host_dsn_reaches_the_host_that_takes_writes(store: PostgresStore) -> None:
    """PGS-070: the first host refuses connections; the store opens and writes on the second."""
    placed = store.append("c", [draft("e1"), draft("e2")])
    assert [e.seq for e in placed] == [1, 2]
    assert store.head("c") == 2


def test_no_statement_timeout_by_default(store: PostgresStore) -> None:
    """PGS-072: the reference runs without ``statement_timeout`` unless its caller sets one."""
    assert store.settings.statement_timeout is None
    with store._gate("test") as connection:  # the setting of the server session itself
        row = connection.execute("SHOW statement_timeout").fetchone()
    assert row is not None and row[0] == "0"


def test_a_lost_connection_is_unavailable_then_reconnects_and_settles(
    store: PostgresStore, pg_dsn: str
) -> None:
    """PGS-013, PGS-071, ERR-013, DUR-020: terminated, refused, reconnected, settled.

    The store does not retry the lost call itself (PGS-071): the batch is not stored until
    settling appends it.
    """
    store.append("c", [draft("before")])
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = %s AND pid <> pg_backend_pid()",
            (f"convledger:{store.schema}"[:63],)).fetchall()
    assert ended and all(row[0] for row in ended)
    batch = [draft("lost-1"), draft("lost-2")]
    with pytest.raises(LedgerError) as refused:
        store.append("c", batch)
    assert refused.value.kind == "unavailable"
    settled = settle_append(store, "c", batch, from_seq=2)  # the next call reconnects
    assert settled.outcome == "appended"
    assert [e.seq for e in settled.envelopes] == [2, 3]
    again = settle_append(store, "c", batch, from_seq=2)  # settled twice: found, not stored again
    assert again.outcome == "committed" and again.envelopes == settled.envelopes
    assert store.head("c") == 3


@pytest.mark.pg_faults
def test_nothing_acknowledged_is_lost_across_failovers() -> None:
    """``scripts/pg_failover.py --small``: 3 kills and promotions, every DUR figure clean.

    PGS-070 (the writers' multi-host DSN), PGS-071 (commits lost with the primary are
    indeterminate and settled), PGS-072 (no ``statement_timeout``).
    """
    done = subprocess.run([sys.executable, str(SCRIPT), "--small"], capture_output=True,
                          text=True, timeout=900)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "primary kills and promotions: 3;" in out, out
    assert re.search(r"acknowledged writes checked: [1-9]\d* batches", out), out
    assert re.search(r"unsettled 0\b", out), out
    assert re.search(r"lost 0; partial 0; seq gaps 0; duplicated eventIds 0; stored but not"
                     r" acknowledged 0;", out), out
    assert out.rstrip().endswith("every indeterminate write settled"), out
