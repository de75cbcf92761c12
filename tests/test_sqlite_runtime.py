"""Runtime transitions, bounded reads and purge on the SQLite store (SQL-050 .. SQL-056).

The rules themselves are tested on the in-memory store (``test_runtime_rules``);
here the SQLite store must answer exactly as the in-memory store does for the
same transitions, write nothing when a transition fails anywhere inside its
transaction, serve the bounded reads from its indexes without touching
``events``, and fence purged conversations for every connection and process.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import draft
from convledger import canonical
from convledger.errors import (
    ConflictError,
    DuplicateError,
    IntegrityError,
    InvalidInputError,
    LedgerError,
    PurgedError,
)
from convledger.memory import MemoryStore
from convledger.runtime import (
    Accept,
    Compact,
    Interrupt,
    Operation,
    Outcome,
    Recover,
    Status,
    Terminal,
)
from convledger.runtime.operations import PurgeOutcome, RecoveryCursor, recovery_order
from convledger.runtime.records import Head
from convledger.runtime.view import HeadWrite, message_in_use
from convledger.sqlite import SqliteStore
from convledger.sqlite import runtime as sql_runtime
from convledger.sqlite.fixtures import query_plan, write_v1_database
from convledger.sqlite.runtime_view import RUNTIME_READS, SqlRuntimeView
from test_runtime_rules import Driver

AT = "2026-11-29T10:00:00Z"
TABLES = ("heads", "runs", "admissions", "messages", "events", "purged")


class Boom(Exception):
    """The injected fault."""


class Faults:
    """A fault probe that raises at its ``armed``-th call (counting from 1), else records."""

    def __init__(self) -> None:
        self.armed: int | None = None
        self.calls: list[str] = []

    def __call__(self, label: str) -> None:
        self.calls.append(label)
        if self.armed is not None and len(self.calls) == self.armed:
            raise Boom(label)


def open_store(path: Path, **options: object) -> SqliteStore:
    """A file store with a deterministic clock (the purge time)."""
    return SqliteStore(path, synchronous="NORMAL", clock=lambda: AT, **options)  # type: ignore[arg-type]


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the runtime tables, the ledger and the FTS5 index, in key order."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        found = {
            table: sorted(connection.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in TABLES
        }
        found["events_fts"] = connection.execute(
            "SELECT rowid, body, scope, conversation_id, seq FROM events_fts ORDER BY rowid"
        ).fetchall()
        return found
    finally:
        connection.close()


Step = Callable[[Driver], Outcome]


def scenario() -> list[tuple[str, Step]]:
    """Every transition type: checkpoint, operation, coalescing, absorption, compaction,
    interrupt, requeue, abandon, policy stop, a duplicate key, and a run left running."""

    def compact(d: Driver) -> Outcome:
        history = d.history()
        return d(Compact(d.version(), history[0][1], history[3][1], "s1", {"text": "summary"}))

    def recover(action: str, evidence: dict[str, object]) -> Step:
        return lambda d: d(Recover("r5", d.run("r5").revision, action, evidence))  # type: ignore[arg-type]

    return [
        ("accept 1", lambda d: d.accept(1)),
        ("acquire r1", lambda d: d.acquire("r1")),
        ("checkpoint r1", lambda d: d.checkpoint("r1")),
        ("operation r1", lambda d: d(Operation("r1", d.fence("r1"), {"name": "tool"}))),
        ("accept 2", lambda d: d.accept(2)),
        ("accept 3 coalesces", lambda d: d.accept(3)),
        ("accept 2 again", lambda d: d.accept(2)),
        ("finish r1", lambda d: d.finish("r1")),
        ("acquire r2", lambda d: d.acquire("r2")),
        ("accept 4", lambda d: d.accept(4)),
        ("finish r2 absorbing r4", lambda d: d.finish("r2", absorb=("r4",))),
        ("compact", compact),
        ("accept 5", lambda d: d.accept(5)),
        ("acquire r5", lambda d: d.acquire("r5")),
        ("interrupt r5", lambda d: d(Interrupt("r5"))),
        ("requeue r5", recover("requeue", {"replaySafe": True})),
        ("acquire r5 again", lambda d: d.acquire("r5", "w2")),
        ("abandon r5", recover("abandon", {})),
        ("accept 6", lambda d: d.accept(6)),
        ("acquire r6", lambda d: d.acquire("r6")),
        ("policy stop r6", lambda d: d.finish("r6", "policy_stop")),
        ("accept 7", lambda d: d.accept(7)),
        ("acquire r7", lambda d: d.acquire("r7")),
        ("checkpoint r7", lambda d: d.checkpoint(
            "r7", {"id": "d7", "status": "streaming", "parts": ["ü\u0000"]}
        )),
    ]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """The database file of one test."""
    return tmp_path / "runtime.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    """A fresh file store."""
    opened = open_store(path)
    yield opened
    opened.close()


def played(store: SqliteStore | MemoryStore, conversation_id: str = "c1") -> Driver:
    """The scenario applied to ``store``."""
    d = Driver(store, conversation_id)  # type: ignore[arg-type]
    for _, step in scenario():
        step(d)
    return d


# -- transitions: the same answers as the in-memory store -------------------------------------


def test_every_transition_answers_as_the_memory_store(store: SqliteStore) -> None:
    """TRN-001, SQL-053: every step's outcome and the export equal the in-memory store's."""
    memory = Driver(MemoryStore())
    sqlite = Driver(store)  # type: ignore[arg-type]
    statuses = []
    for name, step in scenario():
        expected, got = step(memory), step(sqlite)
        assert got == expected, name
        statuses.append(got.status)
    assert Status.DUPLICATE in statuses
    assert store.export_conversation("c1") == memory.store.export_conversation("c1")


def test_message_in_use_answers_as_its_three_lookups(store: SqliteStore) -> None:
    """TRN-022: the one statement of ``message_in_use`` answers as the definition's three
    lookups (a message, an admitted input, a run's answer) and as the in-memory state, for ids
    taken each way (an input still queued has no message yet, a queued run's answer neither)."""
    memory = Driver(MemoryStore())
    sqlite = Driver(store)  # type: ignore[arg-type]
    for _, step in scenario():
        step(memory), step(sqlite)
    state = memory.store._runtime["c1"]
    ids = [f"{prefix}{n}" for prefix in ("in", "a", "r", "k") for n in range(1, 9)]
    ids += ["s1", "nobody", "IN1", "in1 "]
    with store._transaction("test", write=False) as connection:
        view = SqlRuntimeView(connection, "c1")
        answers = {i: view.message_in_use(i) for i in ids}
        assert answers == {i: message_in_use(view, i) for i in ids}
    assert answers == {i: state.message_in_use(i) for i in ids}
    assert {i for i, taken in answers.items() if taken} >= {"in1", "a1", "s1"}
    assert sum(answers.values()) < len(ids) - 4


def test_conflict_not_found_and_refusals_write_nothing(store: SqliteStore, path: Path) -> None:
    """TRN-001, TRN-004: conflict, not_found, duplicate and refusals append and change nothing."""
    d = played(store)
    before = dump(path)
    stale = d.fence("r7")
    stale_terminal = Terminal("r7", stale.__class__(stale.owner, stale.revision - 1,
                                                     stale.fencing_token), "success", {})
    assert d(stale_terminal).status is Status.CONFLICT
    assert d(Terminal("r7", stale.__class__("intruder", stale.revision, stale.fencing_token),
                      "success", {})).status is Status.CONFLICT
    compacted = d(Compact(d.version() - 1, "s1", "s1", "s2", {"text": "x"}))
    assert (compacted.status, compacted.version) == (Status.CONFLICT, d.version())
    assert d(Interrupt("no-such-run")).status is Status.NOT_FOUND
    assert Driver(store, "c-none")(Interrupt("r1")).status is Status.NOT_FOUND  # type: ignore[arg-type]
    assert d.accept(1).status is Status.DUPLICATE
    with pytest.raises(InvalidInputError):
        d(Recover("r7", d.run("r7").revision, "requeue", {}))
    with pytest.raises(InvalidInputError):
        d(Accept("k-new", "in1", "r-new", "a-new", {"text": "reused input id"}))
    assert dump(path) == before


def test_repeated_event_id_is_a_duplicate_and_writes_nothing(
    store: SqliteStore, path: Path
) -> None:
    """TRN-008: an applied transition whose eventId is stored is refused duplicate, atomically."""
    d = played(store)
    before = dump(path)
    with pytest.raises(DuplicateError):
        d(Accept("k8", "in8", "r8", "a8", {"text": "x"}), event_id="c1-e1")
    assert dump(path) == before


def test_rows_mirror_their_records(store: SqliteStore, path: Path) -> None:
    """SQL-051, SQL-054: every column of a runtime row agrees with its canonical record."""
    played(store)
    connection = sqlite3.connect(path)
    try:
        for conversation_id, version, updated_at, text in connection.execute(
            "SELECT * FROM heads"
        ):
            record = canonical.decode(text.encode("utf-8"))
            assert record == {"conversationId": conversation_id, "version": version}
            assert canonical.encode(record).decode("utf-8") == text
            assert updated_at == AT
        columns = {
            "runs": ("runId", "ordinal", "state", "updatedAt"),
            "admissions": ("idempotencyKey", "runId", "ordinal", "admittedAt"),
            "messages": ("position", "messageId", "active", "createdAt"),
        }
        for table, members in columns.items():
            rows = connection.execute(f"SELECT * FROM {table}").fetchall()
            assert rows
            for row in rows:
                record = canonical.decode(str(row[-1]).encode("utf-8"))
                assert isinstance(record, dict)
                assert canonical.encode(record).decode("utf-8") == row[-1]
                expected = [record[name] for name in members]
                assert [row[0], *row[1:-1]] == [record["conversationId"], *[
                    int(value) if isinstance(value, bool) else value for value in expected
                ]]
    finally:
        connection.close()


# -- fault injection after every write (TRN-004) ----------------------------------------------


def test_a_fault_after_any_write_leaves_nothing(path: Path) -> None:
    """TRN-004: a failure after each write of each transition rolls back every row and event."""
    faults = Faults()
    store = open_store(path, fault_probe=faults)
    d = Driver(store)  # type: ignore[arg-type]
    labels: set[str] = set()
    try:
        for name, step in scenario():
            attempt = 1
            while True:
                before = dump(path)
                faults.calls.clear()
                faults.armed = attempt
                try:
                    step(d)
                except Boom as boom:
                    labels.add(str(boom))
                    assert dump(path) == before, f"{name}: fault after {boom} left rows"
                    attempt += 1
                    continue
                break
            assert len(faults.calls) == attempt - 1, name
    finally:
        store.close()
    assert labels == {"head", "run", "admission", "message", "event"}


# -- bounded reads (TRN-080 .. TRN-083, SQL-055) -----------------------------------------------


def test_bounded_reads_never_touch_events(path: Path) -> None:
    """TRN-080, SQL-055: the four bounded reads run statements, none of them on ``events``."""
    statements: list[str] = []
    store = open_store(path, connection_hook=lambda c: c.set_trace_callback(statements.append))
    try:
        played(store)
        statements.clear()
        assert store.load_run("c1", "r7") is not None
        assert store.load_run("c1", "r-none") is None
        assert [run.run_id for run in store.list_active_runs("c1")] == ["r7"]
        snapshot = store.load_snapshot("c1")
        assert snapshot.head.version > 0 and snapshot.messages
        page = store.scan_recoverable(limit=1)
        assert [run.run_id for run in page.runs] == ["r7"]
        assert page.next is None
        assert store.scan_recoverable(after=RecoveryCursor("c1", 7)).runs == ()
        assert statements
        assert not [s for s in statements if "events" in s.lower()]
    finally:
        store.close()


@pytest.mark.parametrize("name", sorted(RUNTIME_READS))
def test_runtime_statements_search_indexes(store: SqliteStore, name: str) -> None:
    """SQL-055: each bounded lookup is a SEARCH of a key or index, never a scan."""
    plan = query_plan(store._connection, RUNTIME_READS[name])
    searches = [line for line in plan if line.startswith("SEARCH")]
    assert searches, plan
    assert not [line for line in plan if line.startswith("SCAN") and "CONSTANT" not in line]
    assert not [line for line in plan if "events" in line]


def test_expression_and_partial_indexes_are_used(store: SqliteStore) -> None:
    """SQL-051, SQL-055: the identity lookups and active reads use the version 2 indexes."""
    expected = {
        "admission_of_input": "admissions_by_input",
        "run_answered_by": "runs_by_assistant",
        "active_runs": "runs_active",
        "recoverable_after": "runs_recoverable",
        "first_active_message": "messages_active",
        "active_messages": "messages_active",
        "history": "messages_active",
        "last_ordinals": "admissions_by_ordinal",
        "message_in_use": "runs_by_assistant",
    }
    for name, index in expected.items():
        plan = query_plan(store._connection, RUNTIME_READS[name])
        assert any(f"INDEX {index}" in line for line in plan), (name, plan)
    # the one statement of TRN-022's three lookups searches all three indexes
    plan = query_plan(store._connection, RUNTIME_READS["message_in_use"])
    for index in ("messages_by_id", "admissions_by_input", "runs_by_assistant"):
        assert any(index in line for line in plan), (index, plan)


def test_scan_recoverable_pages_in_code_point_order(store: SqliteStore) -> None:
    """TRN-083, TRN-085: keyset pages over many conversations by code point, then ordinal."""
    ids = ["z", "a", "a\x00b", "a\x00", "ä", "\u20ac", "\U0001f600", "A", "ab"]
    memory = MemoryStore()
    for target in (store, memory):
        for conversation_id in ids:
            d = Driver(target, conversation_id)  # type: ignore[arg-type]
            d.accept(1)
            d.acquire("r1")
            d.accept(2)
            d.finish("r1")
            d.acquire("r2")
            d.accept(3)
    expected = sorted(
        (run for c in ids for run in memory.list_active_runs(c) if run.state.owned),
        key=recovery_order,
    )
    for limit in (1, 2, 4, 100):
        seen = []
        cursor: RecoveryCursor | None = None
        while True:
            page = store.scan_recoverable(after=cursor, limit=limit)
            seen.extend(page.runs)
            assert len(page.runs) <= limit
            if page.next is None:
                break
            cursor = page.next
        assert seen == expected
        assert [r.conversation_id for r in seen] == sorted(ids, key=lambda c: c.encode())


def test_malformed_stored_record_is_integrity(store: SqliteStore, path: Path) -> None:
    """SQL-054: a stored record that is not a TRN record is refused with kind integrity."""
    played(store)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("UPDATE runs SET record = '{\"runId\":\"r7\"}' WHERE run_id = 'r7'")
    connection.close()
    with pytest.raises(IntegrityError):
        store.load_run("c1", "r7")
    with pytest.raises(IntegrityError):
        store.list_active_runs("c1")


def test_head_swap_decides_from_the_row_it_reads(path: Path) -> None:
    """SQL-053: the head compare-and-swap refuses a stale expected version on both paths."""
    open_store(path).close()
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        sql_runtime.swap_head(connection, HeadWrite(Head("c", 1), 0), AT)
        with pytest.raises(ConflictError) as caught:
            sql_runtime.swap_head(connection, HeadWrite(Head("c", 1), 0), AT)
        assert caught.value.actual == 1
        with pytest.raises(ConflictError) as caught:
            sql_runtime.swap_head(connection, HeadWrite(Head("c", 1), 0), AT)
        with pytest.raises(ConflictError) as caught:  # head is 1, not 2: never a silent no-op
            sql_runtime.swap_head(connection, HeadWrite(Head("c", 2), 2), AT)
        assert caught.value.actual == 1
        sql_runtime.swap_head(connection, HeadWrite(Head("c", 2), 1), AT)
        assert connection.execute("SELECT version FROM heads").fetchall() == [(2,)]
        connection.execute("ROLLBACK")
    finally:
        connection.close()


# -- purge (TRN-090 .. TRN-095, SQL-050, SQL-052, SQL-056) -------------------------------------


def finished(store: SqliteStore, conversation_id: str = "c1") -> Driver:
    """The scenario with its last run ended: nothing is active."""
    d = played(store, conversation_id)
    d.finish("r7")
    return d


def test_purge_refused_while_active_then_deletes_and_tombstones(
    store: SqliteStore, path: Path
) -> None:
    """TRN-090, TRN-091, SQL-056: active runs refuse; else every row goes, one tombstone stays."""
    d = played(store)
    played(store, "other")
    before = dump(path)
    with pytest.raises(ConflictError):
        store.purge("c1")
    assert dump(path) == before
    d.finish("r7")
    assert store.purge("c1") is PurgeOutcome.PURGED
    assert store.purge("c1") is PurgeOutcome.ALREADY_PURGED
    after = dump(path)
    for table in ("heads", "runs", "admissions", "messages", "events"):
        assert after[table] and not [row for row in after[table] if row[0] == "c1"], table
    assert not [row for row in after["events_fts"] if row[3] == "c1"]
    assert after["purged"] == [("c1", AT)]
    assert store.head("c1") == 0 and store.list_active_runs("other")


def test_purged_conversation_takes_nothing_more(store: SqliteStore, path: Path) -> None:
    """TRN-092, SQL-052: append, transition and import of a purged conversation are refused."""
    d = finished(store)
    archive = store.export_conversation("c1")
    store.purge("c1")
    before = dump(path)
    with pytest.raises(PurgedError):
        store.append("c1", [draft("e-new")])
    with pytest.raises(PurgedError):
        d.accept(99)
    with pytest.raises(PurgedError):
        store.import_conversation(archive)
    with store.write_transaction() as handle, pytest.raises(PurgedError):
        handle.append("c1", [draft("e-new")])
    assert dump(path) == before


def test_connection_opened_before_purge_is_fenced(path: Path) -> None:
    """TRN-095, SQL-052: a second handle opened before the purge is refused after it."""
    first, second = open_store(path), open_store(path)
    try:
        finished(first)
        assert second.head("c1") > 0
        assert first.purge("c1") is PurgeOutcome.PURGED
        with pytest.raises(PurgedError):
            second.append("c1", [draft("late")])
        with pytest.raises(PurgedError):
            Driver(second).accept(42)  # type: ignore[arg-type]
        assert second.purge("c1") is PurgeOutcome.ALREADY_PURGED
    finally:
        first.close()
        second.close()


CHILD = textwrap.dedent(
    """
    import sys
    from convledger.envelope import EventDraft
    from convledger.errors import LedgerError
    from convledger.sqlite import SqliteStore
    store = SqliteStore(sys.argv[1])
    print("ready", store.head("c1"), flush=True)
    sys.stdin.readline()
    try:
        store.append("c1", [EventDraft(
            event_id="child-1", kind="state/set", occurred_at="2026-11-29T10:00:00Z",
            payload={"actor": "a", "name": "slot", "value": 1, "version": 1})])
        print("appended", flush=True)
    except LedgerError as error:
        print(error.kind, flush=True)
    store.close()
    """
)


def test_process_opened_before_purge_is_fenced(path: Path) -> None:
    """TRN-095, SQL-052: another process that opened the file before the purge is refused."""
    store = open_store(path)
    try:
        finished(store)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, os.fspath(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert child.stdout is not None and child.stdin is not None
        ready = child.stdout.readline().split()
        assert ready[0] == "ready" and int(ready[1]) > 0
        assert store.purge("c1") is PurgeOutcome.PURGED
        answer, _ = child.communicate("go\n", timeout=60)
        assert answer.strip() == "purged"
        assert store.head("c1") == 0
    finally:
        store.close()


# -- archives (TRN-103 .. TRN-107) -------------------------------------------------------------


def test_import_reexports_identically_and_keeps_every_key(tmp_path: Path, path: Path) -> None:
    """TRN-105, TRN-106: import then export gives the same bytes; every key answers duplicate."""
    source = open_store(path)
    try:
        finished(source)
        archive = source.export_conversation("c1")
    finally:
        source.close()
    target = open_store(tmp_path / "target.sqlite")
    try:
        target.import_conversation(archive)
        assert target.export_conversation("c1") == archive
        document = canonical.decode(archive)
        assert isinstance(document, dict)
        companions = document["companions"]
        assert isinstance(companions, dict) and isinstance(companions["runtime"], dict)
        admissions = companions["runtime"]["admissions"]
        assert isinstance(admissions, list) and len(admissions) == 7
        d = Driver(target)  # type: ignore[arg-type]
        d.count = 1000
        for admission in admissions:
            assert isinstance(admission, dict)
            outcome = d(Accept(str(admission["idempotencyKey"]), "other-input", "other-run",
                               "other-answer", {"text": "again"}))
            assert outcome.status is Status.DUPLICATE
            assert outcome.admitted is not None
            assert (outcome.admitted.input_id, outcome.admitted.run_id,
                    outcome.admitted.assistant_message_id) == (
                admission["inputId"], admission["runId"], admission["assistantMessageId"])
        assert target.export_conversation("c1") == archive
        assert d.accept(8).status is Status.APPLIED  # transitions go on after an import
    finally:
        target.close()


def test_import_into_memory_and_back_is_identical(store: SqliteStore) -> None:
    """TRN-105: the SQLite and in-memory stores exchange runtime archives unchanged."""
    finished(store)
    archive = store.export_conversation("c1")
    memory = MemoryStore()
    memory.import_conversation(archive)
    assert memory.export_conversation("c1") == archive


def test_runtime_reads_refuse_bad_arguments(store: SqliteStore) -> None:
    """TRN-083: bad cursors and limits are invalid_input before any read."""
    with pytest.raises(LedgerError) as caught:
        store.scan_recoverable(limit=0)
    assert caught.value.kind == "invalid_input"


# -- migrated conversations (SQL-037, TRN-100) -------------------------------------------------


def migrated_steps() -> list[tuple[str, str, Step]]:
    """Transitions on the sample version 1 conversations after migration."""
    nul = "c\x00ü"

    def recover(action: str, evidence: dict[str, object]) -> Step:
        return lambda d: d(Recover("r-ü", d.run("r-ü").revision, action, evidence))  # type: ignore[arg-type]

    def finish(run_id: str) -> Step:
        return lambda d: d(Terminal(run_id, d.fence(run_id), "success", {"text": "answer"}))

    return [
        (nul, "repeat the migrated key", lambda d: d(Accept("k\x00ü", "x", "y", "z", {}))),
        (nul, "accept behind the running run", lambda d: d.accept(2)),
        (nul, "acquire is blocked by the running run", lambda d: d.acquire("r2")),
        (nul, "checkpoint the migrated run", lambda d: d.checkpoint("r-ü")),
        (nul, "recover the migrated run", recover("requeue", {"replaySafe": True})),
        (nul, "acquire it again", lambda d: d.acquire("r-ü", "w-2")),
        (nul, "finish it", finish("r-ü")),
        (nul, "acquire the next", lambda d: d.acquire("r2")),
        ("c-1", "repeat a migrated key", lambda d: d(Accept("k-1", "x", "y", "z", {}))),
        ("c-1", "acquire the migrated queued run", lambda d: d.acquire("r-2")),
        ("c-1", "finish it", finish("r-2")),
        ("c-1", "compact the migrated history", lambda d: d(Compact(
            d.version(), "in-1", "a-2", "s-1", {"text": "summary"}))),
        ("c-empty", "accept on a head-only conversation", lambda d: d.accept(1)),
    ]


def test_transitions_continue_on_migrated_conversations(tmp_path: Path) -> None:
    """SQL-037, TRN-100: migrated rows are TRN records; transitions go on exactly as in memory."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    store = open_store(path, new_event_id=iter(f"base-{n}" for n in range(9)).__next__)
    memory = MemoryStore()
    try:
        assert store.outcome == "migrated"
        conversations = ("c\x00ü", "c-1", "c-empty")
        for conversation_id in conversations:
            memory.import_conversation(store.export_conversation(conversation_id))
        assert [run.run_id for run in store.scan_recoverable().runs] == ["r-ü"]
        drivers = {c: (Driver(store, c), Driver(memory, c)) for c in conversations}  # type: ignore[arg-type]
        statuses = set()
        for conversation_id, name, step in migrated_steps():
            on_file, in_memory = drivers[conversation_id]
            expected = step(in_memory)
            assert step(on_file) == expected, name
            statuses.add(expected.status)
        assert statuses == {Status.APPLIED, Status.DUPLICATE, Status.CONFLICT}
        target = MemoryStore()
        for conversation_id in conversations:
            archive = store.export_conversation(conversation_id)
            assert archive == memory.export_conversation(conversation_id)
            target.import_conversation(archive)  # TRN-104: the ledger rebuilds the rows
    finally:
        store.close()


def test_head_swap_from_a_stale_read_is_refused_by_the_row_it_writes(path: Path) -> None:
    """SQL-053: a swap decided from a read that no longer holds writes nothing: the update
    at the read version gives back no row (RETURNING), never a row count, and is refused."""
    open_store(path).close()
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        sql_runtime.swap_head(connection, HeadWrite(Head("c", 1), 0), AT, read=(None,))
        sql_runtime.swap_head(connection, HeadWrite(Head("c", 2), 1), AT, read=(1,))
        with pytest.raises(ConflictError) as caught:  # the caller's read says 1; the row is 2
            sql_runtime.swap_head(connection, HeadWrite(Head("c", 2), 1), AT, read=(1,))
        assert caught.value.actual == 2
        assert connection.execute("SELECT version FROM heads").fetchall() == [(2,)]
        connection.execute("ROLLBACK")
    finally:
        connection.close()


def test_stored_records_decode_strictly_unless_canonical(store: SqliteStore, path: Path) -> None:
    """SQL-054: a record read back is decoded by the fast decoder only when its text is
    canonical; other text is decoded strictly: white space is read, a repeated member is
    refused with kind integrity."""
    played(store)
    expected = store.load_run("c1", "r7")
    connection = sqlite3.connect(path, isolation_level=None)
    (text,) = connection.execute("SELECT record FROM runs WHERE run_id = 'r7'").fetchone()
    spaced = text.replace(",", ", ")
    connection.execute("UPDATE runs SET record = ? WHERE run_id = 'r7'", (spaced,))
    assert store.load_run("c1", "r7") == expected
    repeated = text[:-1] + ',"runId":"r7"}'
    connection.execute("UPDATE runs SET record = ? WHERE run_id = 'r7'", (repeated,))
    connection.close()
    with pytest.raises(IntegrityError):
        store.load_run("c1", "r7")


def test_a_transition_reads_the_tombstone_and_the_head_once(path: Path) -> None:
    """SQL-052, SQL-053: an applied transition reads the tombstone and the head in its first
    statement (the append's read asks the tombstone again in the same statement as the ledger's
    head), decides its swap from that heads row, and proves it by the row the write gives back:
    no second read of ``heads``, no eventId lookup, TRN-022's lookups one statement per id and
    both ordinals one statement."""
    log: list[str] = []

    class Counting(sqlite3.Connection):
        def execute(self, sql: str, parameters: object = (), /) -> sqlite3.Cursor:
            log.append(sql)
            return super().execute(sql, parameters)  # type: ignore[arg-type]

    store = open_store(path, connection_factory=Counting)
    try:
        log.clear()
        Driver(store, "c1").accept(1)  # type: ignore[arg-type]
        assert log.count(RUNTIME_READS["opening"]) == 1
        assert RUNTIME_READS["purged"] not in log
        assert RUNTIME_READS["head_version"] not in log
        assert RUNTIME_READS["head"] not in log
        assert log.count(RUNTIME_READS["message_in_use"]) == 2  # inputId, assistantMessageId
        assert RUNTIME_READS["message"] not in log
        assert log.count(RUNTIME_READS["last_ordinals"]) == 1
        assert not [sql for sql in log if sql.startswith("SELECT 1 FROM events")]
    finally:
        store.close()
