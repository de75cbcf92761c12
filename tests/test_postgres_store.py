"""The PostgreSQL store's schema, refusals, typed errors and transactions (chapter PGS).

Every store here is made by ``schema_store_factory`` in a fresh schema that is
dropped when the store closes (PGS-051); the tests read the schema with plain
psycopg connections to see exactly what is stored.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conftest import draft
from convledger import canonical
from convledger.errors import LedgerError
from convledger.handles import open_located
from convledger.host.rows import ChildLink
from convledger.runtime import Accept

psycopg = pytest.importorskip("psycopg")

from convledger.postgres import (  # noqa: E402 - after the skip without psycopg  # noqa: E402
    CAPABILITIES,
    PostgresStore,
    drop_schema,
    opening,
    rows,
    runtime_view,
    schema,
    schema_store_factory,
    transaction,
)

STAMP = "2026-01-01T00:00:00Z"


@pytest.fixture
def make(pg_dsn: str) -> Iterator[Callable[..., PostgresStore]]:
    """A maker of fresh stores; every store it made is closed (and its schema dropped)."""
    made: list[PostgresStore] = []

    def maker(**options: Any) -> PostgresStore:
        store = schema_store_factory(pg_dsn, **options)()
        made.append(store)
        return store

    yield maker
    for store in made:
        store.close()


def raw(store: PostgresStore) -> Any:
    """A plain autocommit connection onto the store's schema."""
    connection = psycopg.connect(store.settings.dsn, autocommit=True)
    connection.execute(psycopg.sql.SQL("SET search_path TO {}").format(
        psycopg.sql.Identifier(store.schema)))
    return connection


def recorded(store: PostgresStore) -> list[str]:
    """The statements the store's connection runs from now on, as it sends them."""
    seen: list[str] = []
    connection = store._connection
    original = connection.execute

    def recording(query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(query))
        return original(query, *args, **kwargs)

    connection.execute = recording  # type: ignore[method-assign]
    return seen


def kind_of(action: Callable[[], object]) -> str:
    with pytest.raises(LedgerError) as caught:
        action()
    return caught.value.kind


def catalog(connection: Any, name: str) -> list[tuple[object, ...]]:
    """Everything of a schema a refused open could change: objects, shapes, meta rows."""
    found: list[tuple[object, ...]] = []
    for query in schema.SHAPE_QUERIES.values():
        found.extend(sorted(connection.execute(query, {"schema": name}).fetchall()))
    if connection.execute(schema.RELATIONS, {"schema": name}).fetchall().count(("meta",)):
        found.extend(connection.execute("SELECT key, value FROM meta ORDER BY key").fetchall())
    return found


def test_the_package_imports_without_psycopg() -> None:
    """PGS-001: import works; constructing a store is not_supported, naming the extra."""
    code = textwrap.dedent("""
        import sys
        sys.modules["psycopg"] = None
        import convledger.postgres
        from convledger.errors import NotSupportedError
        try:
            convledger.postgres.PostgresStore("postgresql://nowhere")
        except NotSupportedError as error:
            assert 'convledger[postgres]' in str(error), error
            print("refused")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "refused"


def test_a_new_schema_is_version_2_with_every_object(make: Callable[..., PostgresStore]) -> None:
    """PGS-002, PGS-006, PGS-020: created in one go, validated on reopen, capabilities (PGS-050)."""
    store = make()
    assert store.outcome == "created" and store.capabilities == CAPABILITIES
    with raw(store) as connection:
        assert connection.execute("SELECT key, value FROM meta").fetchall() == [
            ("schema_version", "2")]
        assert opening.problems(connection, store.schema, 2) == ([], [])
        connection.execute("CREATE TABLE extra_table (x int)")  # PGS-006: other objects ignored
    reopened = store.reopen()
    assert isinstance(reopened, PostgresStore) and reopened.outcome == "opened"
    reopened.close()


def test_identifiers_are_bytea_and_rows_round_trip(make: Callable[..., PostgresStore]) -> None:
    """PGS-003: U+0000 in ids; payload canonical text; export bytes as stored (ENV-011)."""
    store = make()
    cid, value = "c\x00ü", {"b": [1.0, "\x00"], "a": "é"}
    placed = store.append(cid, [draft("e\x001", value=value)])
    assert store.read(cid).items == placed
    with raw(store) as connection:
        row = connection.execute("SELECT conversation_id, event_id, payload, ignorable"
                                 " FROM events").fetchone()
    assert row[0] == cid.encode() and row[1] == b"e\x001"
    assert row[2] == canonical.encode(placed[0].payload).decode() and row[3] is False
    reopened = store.reopen()
    assert reopened.export_conversation(cid) == reopened.export_conversation(cid)
    assert reopened.read(cid).items == placed
    reopened.close()


def test_pages_and_exports_decode_each_row_as_envelope_of(
    make: Callable[..., PostgresStore],
) -> None:
    """PGS-003, LED-007: a page's payloads decoded together (``codec.decode_stored_page``)
    are each row's ``rows.envelope_of``, value for value and type for type (1.5 stays a
    float, 2**53 - 1 an int), in a window of short numbers only and one with long ones."""
    store = make()
    cid = "pages\x00ü"
    values: list[Any] = [
        "é\x00\u2028", [], {}, {"z": [1, {"y": None}], "a": True}, 1.5, 0, "a" * 3000,
        [0.25, -7, "\ud7ff"], 2**53 - 1, -(2**53 - 1), 1e-7, {"n": 123456789012345},
    ]
    placed = store.append(cid, [draft(f"p{i}", value=value, ignorable=i % 3 == 0)
                                for i, value in enumerate(values)])
    with raw(store) as connection:
        found = connection.execute(rows.READ_WINDOW,
                                   (rows.key(cid), 1, rows.MAX_SEQ, 100)).fetchall()
        exported = rows.export_events(connection, cid)
    each = [rows.envelope_of(row) for row in found]
    for window in (slice(0, 8), slice(0, len(values))):  # short numbers only, then long ones
        page = store.read(cid, from_seq=1, limit=window.stop).items
        assert list(page) == each[window] == list(placed[window])
        assert repr([e.payload for e in page]) == repr([e.payload for e in each[window]])
    assert exported == each and repr(exported) == repr(each)


def test_the_database_refuses_repeated_event_ids_and_updates(
    make: Callable[..., PostgresStore],
) -> None:
    """PGS-004, PGS-005: the constraint and the trigger hold whatever the store checks."""
    store = make()
    store.append("a", [draft("same")])
    assert kind_of(lambda: store.append("b", [draft("same")])) == "duplicate"
    with raw(store) as connection:
        with pytest.raises(psycopg.errors.UniqueViolation):
            connection.execute("INSERT INTO events SELECT 'z', 1, event_id, kind, schema_version,"
                               " occurred_at, payload, ignorable FROM events")
        with pytest.raises(psycopg.errors.RestrictViolation):
            connection.execute("UPDATE events SET payload = '0'")


BREAKS = [
    ("UPDATE meta SET value = '3'", "not_supported", "PGS-021"),
    ("DELETE FROM meta", "integrity", "PGS-022"),
    ("UPDATE meta SET value = 'one'", "integrity", "PGS-022"),
    ("DROP TABLE meta", "integrity", "PGS-022"),
    ("DROP INDEX runs_active", "integrity", "PGS-023"),
    ("ALTER TABLE events ALTER COLUMN payload DROP NOT NULL", "integrity", "PGS-023"),
    ("DROP TRIGGER events_immutable ON events", "integrity", "PGS-023"),
]


@pytest.mark.parametrize(("statement", "kind", "requirement"), BREAKS)
def test_a_broken_schema_is_refused_and_left_unchanged(
    make: Callable[..., PostgresStore], statement: str, kind: str, requirement: str
) -> None:
    """PGS-021, PGS-022, PGS-023, PGS-024: each refusal has its kind and changes nothing."""
    store = make()
    with raw(store) as connection:
        connection.execute(statement)
        before = catalog(connection, store.schema)
        with pytest.raises(LedgerError) as caught:
            PostgresStore(store.settings.dsn, schema=store.schema)
        assert caught.value.kind == kind and caught.value.requirement == requirement
        assert catalog(connection, store.schema) == before


def test_the_server_unreachable_and_a_lost_connection_are_unavailable(
    make: Callable[..., PostgresStore],
) -> None:
    """PGS-013, PGS-014: a closed port; a terminated backend, then a new connection."""
    with pytest.raises(LedgerError) as error:
        PostgresStore("postgresql://postgres@127.0.0.1:1/x", connect_timeout=1)
    assert error.value.kind == "unavailable"
    store = make()
    store.append("c", [draft("e1")])
    with raw(store) as connection:
        pid = store._connection.info.backend_pid
        connection.execute("SELECT pg_terminate_backend(%s)", (pid,))
    assert kind_of(lambda: store.head("c")) == "unavailable"
    assert store.head("c") == 1  # the next call reconnected


def test_lock_and_statement_timeouts(make: Callable[..., PostgresStore]) -> None:
    """PGS-011: a lock not granted in time is conflict; PGS-013: a statement timeout unavailable."""
    store = make(lock_timeout=0.2)
    store.append("c", [draft("e1")])
    slow = PostgresStore(store.settings.dsn, schema=store.schema, lock_timeout=5,
                         statement_timeout=0.2)
    try:
        with raw(store) as holder:
            holder.execute("BEGIN")
            holder.execute("SELECT 1 FROM conversations FOR UPDATE")
            assert kind_of(lambda: store.append("c", [draft("e2")])) == "conflict"
            assert kind_of(lambda: slow.append("c", [draft("e3")])) == "unavailable"
            holder.execute("ROLLBACK")
        assert store.head("c") == 1 and slow.append("c", [draft("e4")])[0].seq == 2
    finally:
        slow.close()


def test_serialization_failures_are_retried_then_conflict(
    make: Callable[..., PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PGS-012: a retried transaction leaves one write; a failing one nothing, as conflict."""
    store = make()
    real = transaction.append_checked
    failures = [psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)  # written, then the failure: the retry must roll it back
        if failures:
            raise failures.pop()("injected")
        return result

    monkeypatch.setattr(transaction, "append_checked", flaky)
    assert [e.seq for e in store.append("c", [draft("e1"), draft("e2")])] == [1, 2]
    assert [e.seq for e in store.read("c").items] == [1, 2]
    failures.extend([psycopg.errors.SerializationFailure] * 5)
    assert kind_of(lambda: store.append("c", [draft("e3")])) == "conflict"
    assert store.head("c") == 2


def test_exports_and_snapshots_read_in_one_read_only_snapshot(
    make: Callable[..., PostgresStore],
) -> None:
    """PGS-031: the export's statements run after BEGIN .. REPEATABLE READ READ ONLY."""
    store = make()
    store.append("c", [draft("e1")])
    seen = recorded(store)
    store.export_conversation("c")
    assert seen[0] == "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" and seen[-1] == "COMMIT"


def test_a_transition_and_an_append_read_in_as_few_round_trips_as_they_decide(
    make: Callable[..., PostgresStore],
) -> None:
    """PGS-040, PGS-041: after the lock, a transition reads the tombstone and the head in one
    statement, decides its swap from that row and proves it by the row the write gives back;
    TRN-022's lookups are one statement per id, both ordinals one; the append reads tombstone,
    head and stored eventIds in one statement."""
    store = make()
    seen = recorded(store)
    store.transition("c", Accept("k1", "in1", "r1", "a1", {"text": "hi"}), event_id="t1",
                     occurred_at=STAMP)
    reads = runtime_view.RUNTIME_READS
    assert seen.count(reads["opening"]) == 1
    for single in ("purged", "head", "head_version", "message", "admission_of_input",
                   "run_answered_by"):
        assert reads[single] not in seen, single
    assert seen.count(reads["message_in_use"]) == 2  # inputId, assistantMessageId
    assert seen.count(reads["last_ordinals"]) == 1
    assert seen.count(rows.APPEND_STATE) == 1
    assert rows.READ_HEAD not in seen and rows.FIND_EVENT_IDS not in seen
    seen.clear()
    store.append("c", [draft("e1")])
    assert seen.count(rows.APPEND_STATE) == 1 and reads["purged"] not in seen
    assert store.load_run("c", "r1") is not None and store.head("c") == 2


def test_message_in_use_answers_as_its_three_lookups(make: Callable[..., PostgresStore]) -> None:
    """TRN-022 on PostgreSQL: ``MESSAGE_IN_USE`` answers as the definition's three lookups and
    as the in-memory state, for ids taken each way."""
    from convledger.memory import MemoryStore
    from convledger.runtime.view import message_in_use
    from test_runtime_rules import Driver
    from test_sqlite_runtime import scenario

    store = make()
    memory, postgres = Driver(MemoryStore()), Driver(store)  # type: ignore[arg-type]
    for _, step in scenario():
        step(memory), step(postgres)
    state = memory.store._runtime["c1"]
    ids = [f"{prefix}{n}" for prefix in ("in", "a", "r", "k") for n in range(1, 9)]
    ids += ["s1", "nobody", "IN1", "in1 "]
    with raw(store) as connection:
        view = runtime_view.PgRuntimeView(connection, "c1")
        answers = {i: view.message_in_use(i) for i in ids}
        assert answers == {i: message_in_use(view, i) for i in ids}
    assert answers == {i: state.message_in_use(i) for i in ids}
    assert {i for i, taken in answers.items() if taken} >= {"in1", "a1", "s1"}
    assert sum(answers.values()) < len(ids) - 4


def test_an_import_is_all_or_nothing(make: Callable[..., PostgresStore]) -> None:
    """PGS-032: a clashing eventId refuses the whole archive and leaves no row."""
    source, target = make(), make()
    source.append("c", [draft("e1"), draft("e2")])
    archive = source.export_conversation("c")
    target.append("other", [draft("e2")])
    assert kind_of(lambda: target.import_conversation(archive)) == "duplicate"
    with raw(target) as connection:
        assert connection.execute("SELECT count(*) FROM events").fetchone() == (1,)
    assert target.head("c") == 0


def test_transitions_purge_and_fact_rows_write_in_one_transaction(
    make: Callable[..., PostgresStore],
) -> None:
    """PGS-040, PGS-041, PGS-042, PGS-044, PGS-045: rows and events in one transaction."""
    failing: list[str] = ["event"]

    def probe(label: str) -> None:
        if label in failing:
            raise RuntimeError(f"fault after {label}")

    store = make(fault_probe=probe)
    accept = Accept("k1", "in1", "r1", "a1", {"text": "hi"})
    with pytest.raises(RuntimeError):
        store.transition("c", accept, event_id="t1", occurred_at=STAMP)
    assert store.head("c") == 0 and store.load_run("c", "r1") is None  # PGS-040
    failing.clear()
    store.transition("c", accept, event_id="t1", occurred_at=STAMP)
    with raw(store) as connection:  # PGS-042: the record column, the other columns derived
        record, state, assistant = connection.execute(
            "SELECT record, state, assistant_message_id FROM runs").fetchone()
        run = store.load_run("c", "r1")
        assert run is not None and record == canonical.encode(run.to_json()).decode()
        assert (state, assistant) == (run.state.value, b"a1")
    assert kind_of(lambda: store.purge("c")) == "conflict"  # TRN-091: an active run
    late = store.open_handle()
    store.write_fact_rows(ChildLink("p", "kid", "spawned", 0, {}), [("p", [draft("f1")])])
    assert kind_of(lambda: store.write_fact_rows(  # PGS-045: a clash writes no row
        ChildLink("p", "kid2", "spawned", 0, {}), [("p", [draft("f1")])])) == "duplicate"
    assert [link.child_conversation_id for link in store.child_links("p")] == ["kid"]
    assert str(store.purge("p").value) == "purged"
    assert kind_of(lambda: late.append("p", [draft("f2")])) == "purged"  # PGS-041
    with raw(store) as connection:  # PGS-044: every row gone but the link and the tombstone
        for table, column in [*((t, c) for t, c in __import__(
                "convledger.postgres.runtime", fromlist=["x"]).PURGE_TABLES)]:
            found = connection.execute(f"SELECT count(*) FROM {table} WHERE {column} = 'p'")
            assert found.fetchone() == (0,), table
        assert connection.execute("SELECT count(*) FROM children").fetchone() == (1,)
        assert connection.execute("SELECT count(*) FROM purged").fetchone() == (1,)
    late.close()


def test_the_factory_drops_its_schema_and_locators_reach_the_same_store(pg_dsn: str) -> None:
    """PGS-051: dropped on close, also after reopen; PGS-052: the locator's opener."""
    store = schema_store_factory(pg_dsn)()
    store.append("c", [draft("e1")])
    locator = store.locator()
    assert locator.opener == "convledger.postgres:open_located_store"
    other = open_located(locator)
    assert other.head("c") == 1
    other.close()
    reopened = store.reopen()
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        assert connection.execute(schema.RELATIONS, {"schema": store.schema}).fetchall()
        reopened.close()
        assert connection.execute(schema.RELATIONS, {"schema": store.schema}).fetchall() == []
    assert kind_of(lambda: open_located(locator)) == "not_found"
    drop_schema(pg_dsn, store.schema)  # harmless twice
