"""Every bounded read of the PostgreSQL store uses an index: plans (PGS-030, PGS-043, PGS-064).

A schema is filled with 6000 events over 20 conversations, runtime rows and
fact rows, and analyzed. Then the server explains each statement of
``rows.LEDGER_READS`` with its default planner settings: none may scan
``events`` sequentially. The runtime tables and the fact rows hold only a few
rows here, where a sequential scan is cheaper and the planner rightly picks
one; their statements are explained with ``enable_seqscan = off``, which
leaves a sequential scan in the plan only when no index can answer the
statement at all. The reads of the search words are explained with the
settings of the store's search transaction (``enable_seqscan = off``, PGS-064):
they must use the GIN index ``search_words_gin``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conftest import draft
from convledger.host.rows import ChildLink

psycopg = pytest.importorskip("psycopg")

from convledger.postgres import (  # noqa: E402
    PostgresStore,
    companions,
    rows,
    runtime_view,
    schema_store_factory,
    search,
    transaction,
)
from convledger.runtime import Accept  # noqa: E402

CID = b"c-7"
LEDGER_PARAMETERS: dict[str, tuple[Any, ...]] = {
    "read_window": (CID, 10, 120, 101),
    "head": (CID,),
    "find_event_ids": ([b"c-7-5", b"nowhere"],),
    "append_state": (CID, CID, [b"c-7-5", b"nowhere"]),
    "export": (CID,),
    "select_for_update": (CID,),
}
RUNTIME_PARAMETERS: dict[str, tuple[Any, ...]] = {
    "run": (CID, b"r1"),
    "admission": (CID, b"k1"),
    "admission_of_input": (CID, b"in1"),
    "message": (CID, b"m1"),
    "run_answered_by": (CID, b"a1"),
    "message_in_use": (CID, b"m1", CID, b"m1", CID, b"m1"),
    "active_messages": (CID, 1, 5),
    "recoverable_after": (b"", 0, 100),
}


@pytest.fixture(scope="module")
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    made = schema_store_factory(pg_dsn)()
    for number in range(20):
        cid = f"c-{number}"
        made.append(cid, [draft(f"{cid}-{seq}", value=f"word{seq % 10} common {seq}")
                          for seq in range(300)])
        made.transition(cid, Accept("k1", "in1", "r1", "a1", {"text": "hi"}),
                        event_id=f"{cid}-t1", occurred_at="2026-01-01T00:00:00Z")
        made.write_fact_rows(ChildLink(cid, "kid", "spawned", 0, {}), [(cid, [])])
    connection = psycopg.connect(made.settings.dsn, autocommit=True)
    for table in ("events", "search_words"):
        connection.execute(psycopg.sql.SQL("ANALYZE {}.{}").format(
            psycopg.sql.Identifier(made.schema), psycopg.sql.Identifier(table)))
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
    # append_state also asks the tombstone: on the tiny, never analyzed ``purged`` the planner
    # may scan; that lookup's index is proven with scans off (RUNTIME_READS["purged"] below)
    scans = [line for line in found.splitlines() if "Seq Scan" in line]
    assert not [line for line in scans if "Seq Scan on purged" not in line], found
    assert "Index" in found, found


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


SEARCH_PARAMETERS: dict[str, dict[str, Any]] = {
    "hit_seqs": {"query": search.tsquery_of(("word7",), "c-7"), "conversation": CID,
                 "limit": 20},
    "conversations_with_hits": {"query": search.tsquery_of(("word7", "17"))},
}


@pytest.mark.parametrize("name", sorted(search.SEARCH_READS))
def test_search_reads_use_the_gin_index(store: PostgresStore, name: str) -> None:
    """PGS-064, PGS-065, PGS-030: the words are found through search_words_gin, never a scan."""
    # the store's search transaction turns sequential scans off (search.NO_SEQUENTIAL_SCAN)
    found = plan(store, search.SEARCH_READS[name], SEARCH_PARAMETERS[name],  # type: ignore[arg-type]
                 seqscan=False)
    print(f"-- {name}\n{found}")
    assert "Seq Scan" not in found and "search_words_gin" in found, found
    hits = store.search("c-7", "word7 17", authorize=lambda cid: True)
    assert [(hit.conversation_id, hit.seq) for hit in hits][:3] == [("c-7", 18), ("c-0", 18),
                                                                   ("c-1", 18)]


@pytest.mark.parametrize("name", sorted(companions.COMPANION_READS))
def test_companion_reads_are_answered_by_keys(store: PostgresStore, name: str) -> None:
    """PGS-030, PGS-061, PGS-067: checkpoints and spills are read by their primary keys."""
    statement = companions.COMPANION_READS[name]
    found = plan(store, statement, (CID,) * statement.count("%s"), seqscan=False)
    print(f"-- {name}\n{found}")
    assert "Seq Scan" not in found and "_pkey" in found, found


def test_hit_events_are_read_by_key(store: PostgresStore) -> None:
    """PGS-064: a page of hits is joined to events by primary key."""
    found = plan(store, search.HIT_EVENTS, (CID, [17, 117]), seqscan=True)
    assert "Seq Scan" not in found and "events_pkey" in found, found
