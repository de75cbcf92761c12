"""The SQLite store's ledger, storage layout and transaction scope (chapter sqlite.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import draft, draft_batches, identifiers, wire_events
from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.errors import ConflictError, DuplicateError, LedgerError
from convledger.sqlite import (
    NestedStoreCallError,
    SqliteStore,
    StoreClosedError,
    file_store_factory,
    memory_store_factory,
)
from convledger.sqlite.faults import FaultingConnection
from convledger.sqlite.fixtures import query_plan, scans_events
from convledger.sqlite.rows import (
    APPEND_STATE,
    CLEAR_PENDING,
    INSERT_EVENT,
    INSERT_PENDING,
    INSERT_SEARCH_ROW,
    LEDGER_READS,
    NEXT_SEARCH_ROWID,
    PENDING_EVENTS,
    index_pending,
)
from convledger.store import Capability


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    """A fresh store on a file."""
    opened = SqliteStore(tmp_path / "ledger.sqlite")
    yield opened
    opened.close()


def raw(store: SqliteStore) -> sqlite3.Connection:
    """A second, plain connection to the store's file."""
    return sqlite3.connect(store.path, isolation_level=None)


def indexed(store: SqliteStore) -> sqlite3.Connection:
    """:func:`raw`, after every pending event got its index row (SQL-074's step, done here)."""
    connection = raw(store)
    connection.execute("BEGIN IMMEDIATE")
    index_pending(connection)
    connection.execute("COMMIT")
    return connection


# -- the ledger on a file ------------------------------------------------------------------


@settings(max_examples=15)
@given(conversation=identifiers, batch=draft_batches(max_size=4))
def test_append_then_read_returns_identical_bytes(
    tmp_path_factory: pytest.TempPathFactory, conversation: str, batch: list[EventDraft]
) -> None:
    """SQL-005, ENV-011: any valid drafts come back with the same canonical bytes, after reopen."""
    path = tmp_path_factory.mktemp("roundtrip") / "ledger.sqlite"
    store = SqliteStore(path)
    placed = store.append(conversation, batch)
    assert wire_events(store.read(conversation).items) == wire_events(placed)
    reopened = store.reopen()
    assert wire_events(reopened.read(conversation).items) == wire_events(placed)
    reopened.close()


def test_row_stores_members_exactly(store: SqliteStore) -> None:
    """SQL-005: occurredAt is the exact text, payload canonical JSON text, ignorable 0/1."""
    payload: JsonValue = {"name": "s", "version": 1, "actor": "a", "value": [1.0, 1e21, "é\n"]}
    store.append("c\x00/ü", [
        draft("e-1", payload=payload, occurred_at="2024-05-01T12:00:00.250000+02:00"),
        draft("e-2", kind="state/set", ignorable=True),
    ])
    connection = raw(store)
    found = connection.execute(
        "SELECT conversation_id, seq, event_id, kind, schema_version, occurred_at, payload,"
        " ignorable FROM events ORDER BY seq"
    ).fetchall()
    connection.close()
    assert found[0] == (
        "c\x00/ü", 1, "e-1", "state/set", 1, "2024-05-01T12:00:00.250000+02:00",
        canonical.encode(payload).decode("utf-8"), 0,
    )
    assert found[1][7] == 1


def test_database_refuses_a_repeated_event_id_by_itself(store: SqliteStore) -> None:
    """SQL-004: the unique index on event_id refuses a duplicate written around the store."""
    store.append("a", [draft("same")])
    connection = raw(store)
    with pytest.raises(sqlite3.IntegrityError):
        connection.execute(
            "INSERT INTO events VALUES ('b', 1, 'same', 'state/set', 1, "
            "'2024-01-01T00:00:00Z', '{}', 0, 99)"
        )
    with pytest.raises(sqlite3.IntegrityError):
        connection.execute(
            "INSERT INTO events VALUES ('a', 1, 'other', 'state/set', 1, "
            "'2024-01-01T00:00:00Z', '{}', 0, 99)"
        )
    connection.close()


def test_events_cannot_be_updated(store: SqliteStore) -> None:
    """SQL-006: the schema refuses an UPDATE of an events row."""
    store.append("a", [draft("e")])
    connection = raw(store)
    with pytest.raises(sqlite3.IntegrityError):
        connection.execute("UPDATE events SET kind = 'x'")
    connection.close()
    assert store.read("a").items[0].kind == "state/set"


def test_store_refusals_are_typed(store: SqliteStore) -> None:
    """LED-003, LED-005: duplicates and stale heads are typed; no sqlite3 error escapes."""
    store.append("a", [draft("e1")])
    with pytest.raises(DuplicateError):
        store.append("b", [draft("e1")])
    with pytest.raises(ConflictError) as caught:
        store.append("a", [draft("e2")], expected_head=0)
    assert caught.value.actual == 1
    assert store.head("a") == 1 and store.head("b") == 0


def test_fts_index_follows_appends(store: SqliteStore) -> None:
    """SQL-008: every event's string values are indexed, mapped to conversation and seq."""
    store.append("c", [draft("e1", value="grüße aus Köln"), draft("e2", value={"x": "zebra"})])
    connection = indexed(store)
    hits = connection.execute(
        "SELECT conversation_id, seq FROM events_fts WHERE events_fts MATCH 'kOln'"
    ).fetchall()
    zebra = connection.execute(
        "SELECT seq FROM events_fts WHERE events_fts MATCH 'zebra'"
    ).fetchall()
    connection.close()
    assert hits == [("c", 1)]
    assert zebra == [(2,)]


def test_fts_rows_follow_deletes(store: SqliteStore) -> None:
    """SQL-008: deleting an events row removes exactly its FTS5 row."""
    store.append("c", [draft("e1", value="alpha"), draft("e2", value="beta")])
    connection = indexed(store)
    connection.execute("DELETE FROM events WHERE seq = 1")
    remaining = connection.execute("SELECT seq FROM events_fts").fetchall()
    connection.close()
    assert remaining == [(2,)]


@pytest.mark.parametrize("name", sorted(LEDGER_READS))
def test_every_ledger_read_searches_an_index(store: SqliteStore, name: str) -> None:
    """SQL-007: EXPLAIN QUERY PLAN shows SEARCH on an index, never SCAN of events."""
    connection = raw(store)
    plan = query_plan(connection, LEDGER_READS[name])
    connection.close()
    assert any(line.startswith("SEARCH events USING") for line in plan), plan
    assert not scans_events(plan), plan


def test_own_hits_are_read_in_one_backward_match(store: SqliteStore) -> None:
    """SQL-066, SQL-067: the requester's hits come from one MATCH that FTS5 walks in
    descending rowid order (no sort, no second MATCH); each hit's row of events is found
    by its primary key."""
    from convledger.sqlite.search import HITS_OF_ONE

    store.append("c", [draft(f"e{n}", value=f"word {n}") for n in range(1, 31)])
    connection = raw(store)
    plan = query_plan(connection, HITS_OF_ONE)
    connection.close()
    assert plan[0].startswith("SCAN f VIRTUAL TABLE"), plan
    assert any(line.startswith("SEARCH e USING PRIMARY KEY") for line in plan), plan
    assert not any("TEMP B-TREE" in line for line in plan), plan
    assert sum("VIRTUAL TABLE" in line for line in plan) == 1, plan
    hits = store.search("c", "word", limit=5)
    assert [hit.seq for hit in hits] == [30, 29, 28, 27, 26]


def test_insert_finds_its_search_rowid_by_search(store: SqliteStore) -> None:
    """SQL-007, SQL-067: the next FTS5 rowid is read from the index's last key, not a scan,
    and neither the event's insert nor its index row's reads events."""
    connection = raw(store)
    plan = query_plan(connection, NEXT_SEARCH_ROWID)
    assert any("events_fts" in line and line.startswith("SEARCH") for line in plan), plan
    for statement in (INSERT_EVENT, INSERT_SEARCH_ROW):
        assert not scans_events(query_plan(connection, statement)), statement
    connection.close()


def test_append_writes_one_index_row_per_event_without_a_trigger(store: SqliteStore) -> None:
    """SQL-070: the store writes each event's index row (rowid, text in stored member order,
    scope token, conversation and seq); the file holds no insert trigger."""
    # members given out of canonical order: the text follows the stored (sorted) order
    value: JsonValue = {"z": "zulu", "a": ["alpha", 1, {"m": "mike\x00x"}]}
    store.append("c\x00ü", [draft("e-1", value=value), draft("e-2", value="Köln")])
    connection = indexed(store)
    triggers = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
        " ORDER BY name").fetchall()
    found = connection.execute(
        "SELECT e.seq, f.body, f.scope, f.conversation_id, f.seq FROM events AS e"
        " JOIN events_fts AS f ON f.rowid = e.search_rowid ORDER BY e.seq").fetchall()
    connection.close()
    assert triggers == [("events_are_immutable",), ("events_fts_after_delete",),
                        ("search_pending_after_delete",)]
    scope = "c\x00ü".encode().hex().upper()
    assert found == [(1, "tester slot alpha mike\x00x zulu", scope, "c\x00ü", 1),
                       (2, "tester slot Köln", scope, "c\x00ü", 2)]


# -- capabilities, reopen, close ---------------------------------------------------------


def test_file_store_declares_its_capabilities(store: SqliteStore) -> None:
    """SQL-048: a file store declares persistence, migration, multi_process and every chapter."""
    assert store.capabilities == frozenset({
        Capability.LEDGER, Capability.PERSISTENCE, Capability.MIGRATION,
        Capability.MULTI_PROCESS, Capability.TRANSITIONS, Capability.PURGE,
        Capability.PROJECTIONS, Capability.SPILLS, Capability.SEARCH, Capability.FACT_ROWS,
    })


def test_memory_store_declares_no_persistence() -> None:
    """SQL-048, CAP-002: an in-memory SQLite store declares no persistence and refuses reopen."""
    store = memory_store_factory()()
    assert store.capabilities == frozenset({
        Capability.LEDGER, Capability.TRANSITIONS, Capability.PURGE,
        Capability.PROJECTIONS, Capability.SPILLS, Capability.SEARCH, Capability.FACT_ROWS,
    })
    store.append("c", [draft("e")])
    with pytest.raises(LedgerError) as caught:
        store.reopen()
    assert caught.value.kind == "not_supported"
    assert store.head("c") == 1
    store.close()


def test_reopen_serves_the_same_exports(store: SqliteStore) -> None:
    """LED-015: after reopen the same ledgers export to the same bytes."""
    store.append("c", [draft("e1"), draft("e2")])
    before = store.export_conversation("c")
    reopened = store.reopen()
    assert reopened.export_conversation("c") == before
    reopened.close()


def test_calls_after_close_are_refused(tmp_path: Path) -> None:
    """CAP-003: a closed handle refuses calls with a typed error; closing twice is harmless."""
    store = SqliteStore(tmp_path / "x.sqlite")
    store.close()
    store.close()
    with pytest.raises(StoreClosedError):
        store.head("c")


def test_file_factory_makes_fresh_stores_and_cleans_up() -> None:
    """Factories: each call gives an empty store on a new file, removed on close."""
    make = file_store_factory()
    first, second = make(), make()
    first.append("c", [draft("e")])
    assert second.head("c") == 0
    assert first.path != second.path
    path = Path(first.path)
    reopened = first.reopen()
    assert reopened.head("c") == 1
    reopened.close()
    second.close()
    assert not path.parent.exists()


# -- the transaction scope -----------------------------------------------------------------


def test_companion_rows_commit_with_their_event(store: SqliteStore) -> None:
    """SQL-043: an event and a companion row written through the handle commit together."""
    with store.write_transaction() as tx:
        placed = tx.append("c", [draft("e1")])
        tx.execute(
            "INSERT INTO projections VALUES (?, ?, ?, ?, ?, ?)",
            ("c", "summary", 1, placed[-1].seq, "{}", "2024-01-01T00:00:00Z"),
        )
    connection = raw(store)
    assert connection.execute("SELECT upto_seq FROM projections").fetchall() == [(1,)]
    connection.close()
    assert store.head("c") == 1


def test_failure_in_scope_rolls_back_event_and_companion(store: SqliteStore) -> None:
    """SQL-043, ERR-004: when the block raises, neither the event nor the row remains."""
    with pytest.raises(RuntimeError), store.write_transaction() as tx:
        tx.append("c", [draft("e1")])
        tx.execute(
            "INSERT INTO projections VALUES (?, ?, ?, ?, ?, ?)",
            ("c", "summary", 1, 1, "{}", "2024-01-01T00:00:00Z"),
        )
        raise RuntimeError("fault after both writes")
    assert store.head("c") == 0
    connection = raw(store)
    assert connection.execute("SELECT count(*) FROM projections").fetchone() == (0,)
    connection.close()
    assert store.append("c", [draft("e1")])[0].seq == 1


def test_store_call_inside_its_own_scope_is_refused(store: SqliteStore) -> None:
    """SQL-044: a store call inside its own scope is invalid_input at once; the scope goes on."""
    with store.write_transaction() as tx:
        tx.append("c", [draft("e1")])
        for call in (lambda: store.head("c"), lambda: store.append("c", [draft("e2")]),
                     lambda: store.export_conversation("c"), store.close):
            with pytest.raises(NestedStoreCallError) as caught:
                call()
            assert caught.value.kind == "invalid_input"
        with pytest.raises(NestedStoreCallError), store.write_transaction():
            pass
        assert tx.append("c", [draft("e3")])[0].seq == 2
    assert store.head("c") == 2


def test_handle_validates_like_the_store(store: SqliteStore) -> None:
    """SQL-043: appends through the handle are checked exactly like store.append."""
    with store.write_transaction() as tx:
        with pytest.raises(LedgerError) as caught:
            tx.append("c", [draft("e", kind="no/such-kind")])
        assert caught.value.kind == "invalid_input"
        with pytest.raises(DuplicateError):
            tx.append("c", [draft("d"), draft("d")])
        with pytest.raises(ConflictError):
            tx.append("c", [draft("x")], expected_head=5)
        assert tx.head("c") == 0


def test_handle_refuses_transaction_control_and_use_after_scope(store: SqliteStore) -> None:
    """SQL-043: the handle refuses COMMIT/ROLLBACK, and refuses use after its scope ended."""
    with store.write_transaction() as tx:
        for statement in ("COMMIT", "rollback", "  SAVEPOINT s", "BEGIN"):
            with pytest.raises(NestedStoreCallError):
                tx.execute(statement)
    with pytest.raises(StoreClosedError):
        tx.head("c")


@given(st.lists(st.integers(1, 3), min_size=1, max_size=6))
@settings(max_examples=10)
def test_seqs_stay_contiguous_across_handle_and_store(sizes: list[int]) -> None:
    """LED-002: appends through the store and through handles interleave into 1..n."""
    store = memory_store_factory()()
    counter = 0
    for index, size in enumerate(sizes):
        batch = [draft(f"e{counter + n}") for n in range(size)]
        counter += size
        if index % 2:
            with store.write_transaction() as tx:
                tx.append("c", batch)
        else:
            store.append("c", batch)
    assert [e.seq for e in store.read("c").items] == list(range(1, counter + 1))
    store.close()


def test_windows_beyond_the_largest_seq_are_empty(store: SqliteStore) -> None:
    """LED-011, ERR-006: a window past 2**53 - 1 is an empty page, never a driver error."""
    store.append("c", [draft("e")])
    assert store.read("c", from_seq=2**64).items == ()
    assert [e.seq for e in store.read("c", to_seq=2**70).items] == [1]


def test_failing_connection_hook_leaves_no_new_file(tmp_path: Path) -> None:
    """SQL-022: an open that fails before the schema exists does not leave a new file behind."""
    path = tmp_path / "never.sqlite"

    def broken_hook(connection: sqlite3.Connection) -> None:
        connection.execute("SELECT 1")
        raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError):
        SqliteStore(path, connection_hook=broken_hook)
    assert not path.exists()


def test_connection_factory_makes_the_connection_and_survives_reopen(tmp_path: Path) -> None:
    """``connection_factory`` is the class ``sqlite3.connect`` builds the store's connection with,
    on open and on reopen; a subclass sees the statements the store runs."""

    class Counting(sqlite3.Connection):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            seen.append(sql)
            return super().execute(sql, parameters)

    seen: list[str] = []
    made: list[sqlite3.Connection] = []
    store = SqliteStore(tmp_path / "f.sqlite", connection_factory=Counting,
                        connection_hook=made.append)
    store.append("c", [draft("e-1")])
    assert "COMMIT" in seen
    reopened = store.reopen()
    assert reopened.head("c") == 1
    reopened.close()
    # FLT-001: the store's connection is of a subclass of Counting that adds the fault seam.
    assert [isinstance(connection, Counting) for connection in made] == [True, True]
    assert [isinstance(connection, FaultingConnection) for connection in made] == [True, True]


# -- the append's statements (issue 18: no round trip the promises do not need) ---------------


class _Counting(sqlite3.Connection):
    """A connection that records every statement the store runs through it, unchanged."""

    log: list[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log = []

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        self.log.append(sql)
        return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        self.log.append(sql)
        return super().executemany(sql, parameters)


def _counting_store(path: Path) -> tuple[SqliteStore, list[str]]:
    seen: list[_Counting] = []
    opened = SqliteStore(path, connection_factory=_Counting,
                         connection_hook=lambda c: seen.append(c))  # type: ignore[arg-type]
    seen[0].log.clear()
    return opened, seen[0].log


def test_append_runs_one_read_two_inserts_and_its_commit(tmp_path: Path) -> None:
    """SQL-040, SQL-052, SQL-067, SQL-073, SQL-074: a single append runs BEGIN IMMEDIATE, one
    read (tombstone, head, next index rowid, pending count), the events' and the pending rows'
    inserts and COMMIT; a batch that fills ``search_pending`` indexes the pending events and
    its own instead; no eventId lookup (the unique index refuses a stored one, SQL-004)."""
    store, log = _counting_store(tmp_path / "ledger.sqlite")
    store.append("c", [draft("e1")])
    assert log == ["BEGIN IMMEDIATE", APPEND_STATE, INSERT_EVENT, INSERT_PENDING, "COMMIT"]
    log.clear()
    store.append("c", [draft(f"b{number}") for number in range(100)])
    assert log == ["BEGIN IMMEDIATE", APPEND_STATE, INSERT_EVENT, PENDING_EVENTS,
                   INSERT_SEARCH_ROW, CLEAR_PENDING, INSERT_SEARCH_ROW, "COMMIT"]
    log.clear()
    store.append("c", [draft(f"x{number}") for number in range(100)])
    assert log == ["BEGIN IMMEDIATE", APPEND_STATE, INSERT_EVENT, INSERT_SEARCH_ROW, "COMMIT"]
    store.close()


def test_stored_event_id_inside_a_batch_is_named_and_nothing_is_kept(store: SqliteStore) -> None:
    """LED-003, LED-004: a batch whose third eventId is stored is refused naming it, and a
    caller that catches the refusal inside a write transaction keeps nothing of the batch
    (the rows inserted before the refused one are removed with it)."""
    store.append("other", [draft("taken")])
    with store.write_transaction() as handle:
        with pytest.raises(DuplicateError) as caught:
            handle.append("c", [draft("new-1"), draft("new-2"), draft("taken"), draft("new-4")])
        assert caught.value.identity == "taken"
        assert handle.head("c") == 0
        handle.append("c", [draft("after")])
    assert [e.event_id for e in store.read("c").items] == ["after"]
    connection = raw(store)
    index_rows = connection.execute(
        "SELECT conversation_id, seq FROM events_fts"
        " UNION ALL SELECT conversation_id, seq FROM search_pending").fetchall()
    connection.close()
    assert sorted(index_rows) == [("c", 1), ("other", 1)]


def test_stored_event_id_comes_before_a_live_spill_reference(store: SqliteStore) -> None:
    """ERR-010: a stored eventId (step 5) is answered before a spill event naming a live
    object (step 6): a batch holding a spill event still looks its eventIds up first."""
    store.put_spill("c", b"abc", media_type="text/plain",
                    operation={"operationId": "op", "authorization": {"who": "u"}},
                    reference="r", event_id="spill-event", occurred_at="2024-01-01T00:00:00Z")
    store.append("c", [draft("taken")])
    forged = draft("forged", kind="spill/deleted", payload={"reference": "r", "bytes": 3})
    with pytest.raises(DuplicateError) as caught:
        store.append("c", [forged, draft("taken")])
    assert caught.value.identity == "taken"
    with pytest.raises(LedgerError) as refused:
        store.append("c", [forged])
    assert refused.value.requirement == "SPL-008"
    assert store.head("c") == 2
