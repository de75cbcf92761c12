"""Schema version 4: events wait in ``search_pending`` for their index row (SQL-073 .. SQL-076).

Plain tests of the reference SQLite store: when an append writes a pending row
and when it indexes, that a search finds pending events exactly as indexed
ones (a property over texts whose words depend on the tokenizer), that a search
writes nothing, on a read-only handle too, that a refused batch and a purge
leave no pending row, that transitions go through the same path, and that a
version 3 file migrates to version 4 in one transaction.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import draft
from convledger.envelope import Envelope
from convledger.errors import LedgerError
from convledger.sqlite import SqliteStore, schema
from convledger.sqlite import search as fts
from convledger.sqlite.fixtures import file_digest, write_v3_database
from convledger.sqlite.migration import STEPS_FROM_V3

LIMIT = schema.SEARCH_PENDING_LIMIT


def counts(path: Path) -> tuple[int, int]:
    """(rows of search_pending, rows of events_fts)."""
    connection = sqlite3.connect(path)
    try:
        pending = connection.execute("SELECT count(*) FROM search_pending").fetchone()[0]
        index = connection.execute("SELECT count(*) FROM events_fts").fetchone()[0]
    finally:
        connection.close()
    return int(pending), int(index)


def text_draft(event_id: str, text: str) -> object:
    return draft(event_id, value=text)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "pending.sqlite"


def test_single_appends_wait_until_the_limit_then_all_are_indexed(path: Path) -> None:
    """SQL-073, SQL-074: appends 1..31 each leave a pending row; the 32nd indexes all 32."""
    store = SqliteStore(path)
    try:
        for number in range(1, LIMIT):
            store.append("c", [text_draft(f"e{number}", "word")])  # type: ignore[list-item]
            assert counts(path) == (number, 0)
        store.append("c", [text_draft(f"e{LIMIT}", "word")])  # type: ignore[list-item]
        assert counts(path) == (0, LIMIT)
        store.append("c", [text_draft("next", "word")])  # type: ignore[list-item]
        assert counts(path) == (1, LIMIT)
    finally:
        store.close()


def test_a_batch_that_reaches_the_limit_is_indexed_with_every_pending_event(path: Path) -> None:
    """SQL-074: 5 pending, then a batch of 27 (5 + 27 = 32): all 32 indexed, none pending."""
    store = SqliteStore(path)
    try:
        for number in range(5):
            store.append("a", [text_draft(f"a{number}", "alpha")])  # type: ignore[list-item]
        assert counts(path) == (5, 0)
        store.append("b", [text_draft(f"b{n}", "beta") for n in range(LIMIT - 5)])  # type: ignore[misc]
        assert counts(path) == (0, LIMIT)
        assert [hit.seq for hit in store.search("a", "alpha", limit=2)] == [5, 4]
    finally:
        store.close()


def test_a_refused_batch_leaves_no_pending_row(path: Path) -> None:
    """LED-004, SQL-073: a stored eventId refuses the batch; its events leave no row at all."""
    store = SqliteStore(path)
    try:
        store.append("c", [text_draft("taken", "x")])  # type: ignore[list-item]
        before = counts(path)
        with pytest.raises(LedgerError) as caught:
            store.append("c", [text_draft("fresh", "y"), text_draft("taken", "z")])  # type: ignore[list-item]
        assert caught.value.kind == "duplicate"
        assert counts(path) == before
        assert store.head("c") == 1
    finally:
        store.close()


def test_a_search_with_pending_events_writes_nothing_even_read_only(path: Path) -> None:
    """SQL-075, SRC-024: the tail is matched in a TEMP table; the file keeps its bytes."""
    store = SqliteStore(path)
    try:
        store.append("c", [text_draft("e1", "Köln café")])  # type: ignore[list-item]
        store.append("d", [text_draft("e2", "koln")])  # type: ignore[list-item]
        assert counts(path) == (2, 0)
        before = file_digest(path)
        assert [(h.conversation_id, h.seq) for h in store.search(
            "c", "KOLN", authorize=lambda _c: True)] == [("c", 1), ("d", 1)]
        reader = SqliteStore(path, read_only=True)
        try:
            assert [(h.conversation_id, h.seq, h.snippet) for h in reader.search("c", "cafe")] == [
                ("c", 1, "tester slot Köln café")
            ]
        finally:
            reader.close()
        assert file_digest(path) == before
    finally:
        store.close()


def test_pending_hits_come_before_indexed_ones_and_fill_the_limit(path: Path) -> None:
    """SQL-074, SQL-075, SRC-003: 32 indexed then 3 pending; newest first across both."""
    store = SqliteStore(path)
    try:
        store.append("c", [text_draft(f"i{n}", "word") for n in range(LIMIT)])  # type: ignore[misc]
        for n in range(3):
            store.append("c", [text_draft(f"p{n}", "word")])  # type: ignore[list-item]
        assert counts(path) == (3, LIMIT)
        assert [hit.seq for hit in store.search("c", "word", limit=5)] == [35, 34, 33, 32, 31]
        assert [hit.seq for hit in store.search("c", "word", limit=2)] == [35, 34]
    finally:
        store.close()


def test_a_purge_deletes_the_pending_rows(path: Path) -> None:
    """SQL-073: ``search_pending_after_delete`` follows the purge's deletes."""
    store = SqliteStore(path)
    try:
        store.append("gone", [text_draft("g1", "word")])  # type: ignore[list-item]
        store.append("kept", [text_draft("k1", "word")])  # type: ignore[list-item]
        store.purge("gone")
        assert counts(path) == (1, 0)
        assert [h.conversation_id for h in store.search(
            "kept", "word", authorize=lambda _c: True)] == ["kept"]
    finally:
        store.close()


def test_the_tail_table_tokenizes_as_the_index() -> None:
    """SQL-075: the TEMP table's tokenizer is the one ``events_fts`` declares."""
    tokenizer = "tokenize = 'unicode61 remove_diacritics 2'"
    assert tokenizer in schema.FTS_TABLE.sql
    assert tokenizer in fts.TAIL_TABLE


_words = st.text(
    alphabet=st.sampled_from(list("aAeéEÉoöOÖsßﬁ𝔘😀1٣ ǅ\u0301-_.")), min_size=1, max_size=12
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(_words, min_size=1, max_size=6), query=_words)
def test_pending_events_match_as_their_index_rows_will(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], query: str
) -> None:
    """SQL-075: the answers while every event is pending equal those once all are indexed."""
    if not any(ch.isalnum() for ch in query):
        query = "a " + query
    path = tmp_path_factory.mktemp("tail") / "t.sqlite"
    store = SqliteStore(path)
    try:
        for number, text in enumerate(texts):
            store.append(f"c{number % 2}", [text_draft(f"e{number}", text)])  # type: ignore[list-item]
        assert counts(path)[0] == len(texts)

        def answers() -> list[list[tuple[str, int, str]]]:
            return [[(h.conversation_id, h.seq, h.snippet) for h in store.search(
                requester, query, authorize=lambda _c: True)] for requester in ("c0", "c1")]

        pending = answers()
        store.append("filler", [text_draft(f"f{n}", "zzz") for n in range(LIMIT)])  # type: ignore[misc]
        assert counts(path)[0] == 0
        assert answers() == pending
    finally:
        store.close()


def _v3_events() -> list[Envelope]:
    return [
        Envelope.from_draft(draft(f"e{seq}", value=f"fossil {seq}"), "a", seq)
        for seq in (1, 2, 3)
    ]


@pytest.mark.parametrize("step", STEPS_FROM_V3)
def test_failure_after_any_v3_step_leaves_the_version_3_file(path: Path, step: str) -> None:
    """SQL-076, SQL-036: a failure after either step leaves the file as it was."""
    write_v3_database(path, _v3_events())
    before = file_digest(path)

    def fail_at(name: str) -> None:
        if name == step:
            raise RuntimeError(f"injected after {name}")

    with pytest.raises(RuntimeError):
        SqliteStore(path, on_migration_step=fail_at)
    assert file_digest(path) == before


def test_a_v3_file_migrates_to_version_4(path: Path) -> None:
    """SQL-076: refused read-only; then migrated, answering as before and taking new events."""
    write_v3_database(path, _v3_events())
    before = file_digest(path)
    with pytest.raises(LedgerError) as caught:
        SqliteStore(path, read_only=True)
    assert caught.value.kind == "unavailable"
    assert file_digest(path) == before
    store = SqliteStore(path)
    try:
        assert store.outcome == "migrated"
        assert [hit.seq for hit in store.search("a", "fossil")] == [3, 2, 1]
        store.append("a", [text_draft("e4", "fossil")])  # type: ignore[list-item]
        assert counts(path) == (1, 3)
        assert [hit.seq for hit in store.search("a", "fossil")] == [4, 3, 2, 1]
    finally:
        store.close()
    connection = sqlite3.connect(path)
    try:
        assert connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
    finally:
        connection.close()


def test_a_handle_s_tail_table_follows_other_writers(path: Path) -> None:
    """SQL-075: a reader's TEMP table keeps pending text between searches; after another
    handle indexes those events, appends new ones and purges a conversation, the reader
    answers exactly as a new handle does."""
    writer = SqliteStore(path)
    reader = SqliteStore(path)
    try:
        for number in range(6):
            writer.append(f"c{number % 3}", [text_draft(f"e{number}", "word")])  # type: ignore[list-item]

        def answers(store: SqliteStore) -> list[tuple[str, int]]:
            return [(h.conversation_id, h.seq) for h in store.search(
                "c0", "word", authorize=lambda _c: True)]

        assert answers(reader) == [("c0", 2), ("c0", 1), ("c1", 2), ("c1", 1), ("c2", 2),
                                   ("c2", 1)]
        writer.append("c1", [text_draft(f"f{n}", "word") for n in range(LIMIT)])  # type: ignore[misc]
        writer.append("c2", [text_draft("g", "word")])  # type: ignore[list-item]
        writer.purge("c0")
        assert counts(path) == (1, 4 + LIMIT)
        fresh = SqliteStore(path)
        try:
            assert answers(reader) == answers(fresh)
            assert [h.conversation_id for h in answers_of(reader)] == ["c1"] * 20
        finally:
            fresh.close()
    finally:
        reader.close()
        writer.close()


def answers_of(store: SqliteStore) -> list[object]:
    return list(store.search("c1", "word", limit=20))


_APPENDER = """
import sys
from convledger.envelope import EventDraft
from convledger.sqlite import SqliteStore

store = SqliteStore(sys.argv[1])
for number in range(10**6):
    store.append("c%d" % (number % 3), [EventDraft(
        event_id="k%d" % number, kind="state/set", occurred_at="2024-05-01T12:00:00Z",
        payload={"name": "n", "version": 1, "value": "word %d" % number, "actor": "a"})])
    print(number, flush=True)
"""


@pytest.mark.parametrize("stop_after", [29, 31, 47])
def test_a_kill_between_appends_leaves_every_acknowledged_event_searchable(
    path: Path, stop_after: int
) -> None:
    """SQL-073, SQL-074, DUR-001: kill -9 of a process appending single events (the flush
    every 32nd among them); the file then holds each event with exactly one of its two rows,
    fewer than 32 pending, and a search finds every acknowledged event."""
    import os
    import signal
    import subprocess
    import sys

    from convledger_conformance.sqlite.checks_index import _index_problems

    child = subprocess.Popen([sys.executable, "-c", _APPENDER, str(path)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    acknowledged = []
    for line in child.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) > stop_after:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert _index_problems(path) == []
    store = SqliteStore(path)
    try:
        found = {(h.conversation_id, h.seq) for h in store.search(
            "c0", "word", limit=100, authorize=lambda _c: True)}
        heads = [store.head(f"c{n}") for n in range(3)]
    finally:
        store.close()
    assert sum(heads) >= len(acknowledged)
    assert found == {(f"c{n}", seq) for n in range(3) for seq in range(1, heads[n] + 1)}


class _IndexesAtOnce(SqliteStore):
    """A version 4 store that gives every event its index row at once (SQL-073 allows it)."""

    def _append(self, conversation_id, drafts, expected_head):  # type: ignore[no-untyped-def]
        from convledger.sqlite import rows
        from convledger.sqlite.transaction import append_checked

        with self._transaction("append", write=True) as connection:
            placed = append_checked(connection, conversation_id, drafts, expected_head)
            rows.index_pending(connection)
            return placed


def test_the_suite_accepts_a_store_that_never_leaves_events_pending(tmp_path: Path) -> None:
    """SQL-073: a store that indexes every event at once passes the pending checks, which then
    make pending events themselves (as another writer of the file may)."""
    from convledger_conformance.registry import all_checks
    from convledger_conformance.runner import run_suite

    counter = iter(range(10**6))

    def factory() -> SqliteStore:
        return _IndexesAtOnce(tmp_path / f"s{next(counter)}.sqlite")

    wanted = {"pending_events_are_found", "store_writes_each_index_row"}
    checks = [item for item in all_checks() if item.name in wanted]
    assert {item.name for item in checks} == wanted
    report = run_suite(factory, profile="smoke", checks=checks, derandomize=True, shrink=False)
    assert {r.name: r.status for r in report.checks if r.name in wanted} == {
        name: "passed" for name in wanted}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_file_holding_search_pending_is_refused_unchanged(
    path: Path, version: int
) -> None:
    """SQL-016, SQL-022: a version 1, 2 or 3 file that already holds ``search_pending`` is
    refused as integrity, naming it, and left as it was."""
    from convledger.sqlite.fixtures import execute_raw, write_v1_database, write_v2_database

    if version == 1:
        write_v1_database(path)
    elif version == 2:
        write_v2_database(path, _v3_events())
    else:
        write_v3_database(path, _v3_events())
    execute_raw(path, [schema.PENDING_TABLE.sql])
    before = file_digest(path)
    with pytest.raises(LedgerError) as caught:
        SqliteStore(path)
    assert caught.value.kind == "integrity"
    assert "search_pending" in str(caught.value)
    assert file_digest(path) == before
