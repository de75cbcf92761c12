"""Every bounded read of the PostgreSQL store is an index scan: the plans (PGS-030, PGS-043).

A schema is filled with 6000 events over 20 conversations, runtime rows and
fact rows, and analyzed. Then the server explains each statement of
``rows.LEDGER_READS`` with its default planner settings: none may scan
``events`` sequentially. The runtime tables and the fact rows hold only a few
rows here, where a sequential scan is cheaper and the planner rightly picks
one; their statements are explained with ``enable_seqscan = off``, which
leaves a sequential scan in the plan only when no index can answer the
statement at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conftest import draft
from convledger.host.rows import ChildLink

psycopg = pytest.importorskip("psycopg")

from convledger.postgres import PostgresStore, rows, runtime_view, schema_store_factory, transaction  # noqa: E402  # noqa: E402
from convledger.runtime import Accept  # noqa: E402

CID = b"c-7"
LEDGER_PARAMETERS: dict[str, tuple[Any, ...]] = {
    "read_window": (CID, 10, 120, 101),
    "head": (CID,),
    "find_event_ids": ([b"c-7-5", b"nowhere"],),
    "export": (CID,),
    "select_for_update": (CID,),
}
RUNTIME_PARAMETERS: dict[str, tuple[Any, ...]] = {
    "run": (CID, b"r1"),
    "admission": (CID, b"k1"),
    "admission_of_input": (CID, b"in1"),
    "message": (CID, b"m1"),
    "run_answered_by": (CID, b"a1"),
    "active_messages": (CID, 1, 5),
    "recoverable_after": (b"", 0, 100),
}


@pytest.fixture(scope="module")
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    made = schema_store_factory(pg_dsn)()
    for number in range(20):
        cid = f"c-{number}"
        made.append(cid, [draft(f"{cid}-{seq}") for seq in range(300)])
        made.transition(cid, Accept("k1", "in1", "r1", "a1", {"text": "hi"}),
                        event_id=f"{cid}-t1", occurred_at="2026-01-01T00:00:00Z")
        made.write_fact_rows(ChildLink(cid, "kid", "spawned", 0, {}), [(cid, [])])
    connection = psycopg.connect(made.settings.dsn, autocommit=True)
    connection.execute(psycopg.sql.SQL("ANALYZE {}.events").format(
        psycopg.sql.Identifier(made.schema)))
    connection.close()
    yield made
    made.close()


def plan(store: PostgresStore, statement: str, parameters: tuple[Any, ...], *,
         seqscan: bool) -> str:
    with psycopg.connect(store.settings.dsn) as connection:
        connection.execute(psycopg.sql.SQL("SET search_path TO {}").format(
            psycopg.sql.Identifier(store.schema)))
        if not seqscan:
            connection.execute("SET enable_seqscan = off")
        cursor = psycopg.ClientCursor(connection)
        cursor.execute(f"EXPLAIN {statement}", parameters)
        return "\n".join(str(row[0]) for row in cursor.fetchall())


@pytest.mark.parametrize("name", sorted(rows.LEDGER_READS))
def test_ledger_reads_never_scan_events(store: PostgresStore, name: str) -> None:
    """PGS-030: each ledger statement is an index scan on a populated, analyzed schema."""
    found = plan(store, rows.LEDGER_READS[name], LEDGER_PARAMETERS[name], seqscan=True)
    print(f"-- {name}\n{found}")
    assert "Seq Scan" not in found and "Index" in found, found


@pytest.mark.parametrize("name", sorted(
    [*runtime_view.RUNTIME_READS, *runtime_view.EXPORT_READS, *transaction.FACT_READS]))
def test_runtime_and_fact_reads_are_answered_by_indexes(store: PostgresStore, name: str) -> None:
    """PGS-043, PGS-030: every lookup of the runtime view and of the fact rows has an index."""
    statement = {**runtime_view.RUNTIME_READS, **runtime_view.EXPORT_READS,
                 **transaction.FACT_READS}[name]
    parameters = RUNTIME_PARAMETERS.get(name, (CID,) * statement.count("%s"))
    found = plan(store, statement, parameters, seqscan=False)
    print(f"-- {name}\n{found}")
    assert "Seq Scan" not in found, found
