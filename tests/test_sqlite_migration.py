"""Migration of version 1 files to version 2 (spec chapter sqlite.md, SQL-030 .. SQL-037)."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import draft
from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.sqlite import MigrationRefusedError, SqliteStore
from convledger.sqlite.baseline import TimedRecord, V1Conversation, as_of, instant
from convledger.sqlite.fixtures import (
    V1Rows,
    file_digest,
    record,
    sample_v1_rows,
    v1_table_rows,
    write_v1_database,
)
from convledger.sqlite.migration import STEPS

MIGRATED_AT = "2026-03-01T12:00:00.000Z"


def counting_ids(prefix: str = "baseline-") -> Callable[[], str]:
    """An id generator: prefix1, prefix2, ..."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"


def migrate(path: Path, **options: object) -> SqliteStore:
    """Open ``path`` with the fixed clock and counting ids."""
    opener: Callable[..., SqliteStore] = SqliteStore
    return opener(path, clock=lambda: MIGRATED_AT, new_event_id=counting_ids(), **options)


@pytest.fixture
def v1_file(tmp_path: Path) -> Path:
    """A version 1 file holding the sample rows."""
    path = tmp_path / "v1.sqlite"
    write_v1_database(path)
    return path


def test_open_migrates_and_reports_the_conversations(v1_file: Path) -> None:
    """SQL-030: opening a version 1 file migrates it; the report names each head in id order."""
    store = migrate(v1_file)
    assert store.outcome == "migrated"
    assert store.migration is not None
    assert store.migration.conversations == ("c\x00ü", "c-1", "c-empty")
    assert store.migration.migrated_at == MIGRATED_AT
    store.close()
    reopened = SqliteStore(v1_file)
    assert reopened.outcome == "opened"
    reopened.close()


def test_each_conversation_gets_one_baseline_at_seq_1(v1_file: Path) -> None:
    """SQL-031, SQL-032: one runtime/baseline at seq 1 per head, dated at migration time."""
    store = migrate(v1_file)
    for number, conversation in enumerate(sample_v1_rows().conversations, start=1):
        page = store.read(conversation)
        assert len(page.items) == 1
        baseline = page.items[0]
        assert (baseline.seq, baseline.kind, baseline.schema_version) == (1, "runtime/baseline", 1)
        assert baseline.occurred_at == MIGRATED_AT
        assert baseline.event_id == f"baseline-{number}"
        assert baseline.ignorable is False
        assert isinstance(baseline.payload, dict)
        assert baseline.payload["migratedAt"] == MIGRATED_AT
    store.close()


def test_next_event_after_a_baseline_is_seq_2(v1_file: Path) -> None:
    """SQL-031: the next append to a migrated conversation gets seq 2."""
    store = migrate(v1_file)
    assert store.append("c-1", [draft("after")])[0].seq == 2
    store.close()


def test_baseline_payload_carries_the_normalized_state_in_order(v1_file: Path) -> None:
    """SQL-033: head, messages by position, runs by ordinal, admissions by ordinal."""
    store = migrate(v1_file)
    payload = store.read("c-1").items[0].payload
    rows = sample_v1_rows()

    def records(table: tuple[tuple[object, ...], ...], key: int) -> list[JsonValue]:
        mine = sorted((row for row in table if row[0] == "c-1"), key=lambda row: str(row[key]))
        return [canonical.decode(str(row[-1]).encode("utf-8")) for row in mine]

    expected: JsonValue = {
        "migratedAt": MIGRATED_AT,
        "asOf": "2026-01-01T00:00:02.5Z",  # r-1's 03:00:02+03:00 sorts later as text only
        "head": {"conversationId": "c-1", "version": 4},
        "messages": records(rows.messages, 1),
        "runs": records(rows.runs, 2),
        "admissions": records(rows.admissions, 3),
    }
    assert payload == expected
    assert [m["messageId"] for m in records(rows.messages, 1)] == ["in-1", "a-1"]
    assert [r["runId"] for r in records(rows.runs, 2)] == ["r-1", "r-2"]
    store.close()


def test_as_of_is_absent_without_messages_and_runs(v1_file: Path) -> None:
    """SQL-034: a conversation with a head only has no asOf (never the epoch)."""
    store = migrate(v1_file)
    payload = store.read("c-empty").items[0].payload
    assert isinstance(payload, dict)
    assert "asOf" not in payload
    assert (payload["messages"], payload["runs"], payload["admissions"]) == ([], [], [])
    store.close()


def test_as_of_compares_instants_not_text() -> None:
    """SQL-034: 03:00:02+03:00 is 00:00:02Z, before 00:00:02.5Z though its text sorts later."""
    conversation = V1Conversation(
        conversation_id="c", head={}, admissions=(),
        messages=(_timed("2026-01-01T00:00:02.5Z"),),
        runs=(_timed("2026-01-01T03:00:02+03:00"),),
    )
    assert as_of(conversation) == "2026-01-01T00:00:02.5Z"


def test_equal_instants_choose_the_greater_text() -> None:
    """SQL-034: two spellings of one instant: the greater text wins, deterministically."""
    conversation = V1Conversation(
        conversation_id="c", head={}, admissions=(),
        messages=(_timed("2026-01-01T00:00:00Z"),),
        runs=(_timed("2026-01-01T01:00:00+01:00"),),
    )
    assert as_of(conversation) == "2026-01-01T01:00:00+01:00"


def test_instant_orders_fractions_exactly() -> None:
    """SQL-034: nanosecond fractions and offsets are compared exactly."""
    assert instant("2026-01-01T00:00:00.000000001Z") > instant("2026-01-01T00:00:00Z")
    assert instant("2026-01-01T00:00:00-00:01") == instant("2026-01-01T00:01:00Z")


def test_instant_accepts_year_zero() -> None:
    """SQL-034: RFC 3339 year 0000 (a leap year) orders before year 0001; no ValueError escapes.

    Regression: the conformance state machine generated a message dated in
    year 0000 and migration failed with ``ValueError('year 0 is out of range')``.
    """
    assert instant("0000-02-29T00:00:00Z") < instant("0000-12-31T23:59:59Z")
    assert instant("0000-12-31T23:59:59Z") < instant("0001-01-01T00:00:00Z")
    assert instant("0000-12-31T23:59:59.5-01:00") == (
        instant("0001-01-01T00:59:59Z")[0], instant("0000-01-01T00:00:00.5Z")[1]
    )
    conversation = V1Conversation(
        conversation_id="c", head={}, admissions=(),
        messages=(_timed("0000-06-01T00:00:00Z"),), runs=(_timed("0000-01-01T00:00:00Z"),),
    )
    assert as_of(conversation) == "0000-06-01T00:00:00Z"


def _timed(at: str) -> TimedRecord:
    return TimedRecord(at=at, record={})


def test_version_1_rows_are_left_unchanged(v1_file: Path) -> None:
    """SQL-035: the migration does not change a row of heads, runs, admissions or messages."""
    before = v1_table_rows(v1_file)
    migrate(v1_file).close()
    assert v1_table_rows(v1_file) == before


def test_baseline_is_searchable(v1_file: Path) -> None:
    """SQL-008: the FTS5 index holds the text of every baseline written by the migration."""
    migrate(v1_file).close()
    connection = sqlite3.connect(v1_file)
    hits = connection.execute(
        "SELECT conversation_id, seq FROM events_fts WHERE events_fts MATCH ?", ('"grüße"',)
    ).fetchall()
    connection.close()
    assert hits == [("c\x00ü", 1)]


@pytest.mark.parametrize("step", STEPS)
def test_failure_after_any_step_leaves_the_version_1_file(v1_file: Path, step: str) -> None:
    """SQL-036: a failure after any step leaves exactly the version 1 bytes; a retry succeeds."""
    before = file_digest(v1_file)

    def fail_at(done: str) -> None:
        if done == step:
            raise RuntimeError(f"injected after {done}")

    with pytest.raises(RuntimeError):
        migrate(v1_file, on_migration_step=fail_at)
    assert file_digest(v1_file) == before
    store = migrate(v1_file)
    assert store.outcome == "migrated"
    store.close()


def _rows_with(**changes: tuple[tuple[object, ...], ...]) -> V1Rows:
    rows = sample_v1_rows()
    return V1Rows(
        heads=changes.get("heads", rows.heads),
        messages=changes.get("messages", rows.messages),
        runs=changes.get("runs", rows.runs),
        admissions=changes.get("admissions", rows.admissions),
    )


@pytest.mark.parametrize(
    "rows",
    [
        _rows_with(runs=(("ghost", "r", 1, "queued", "2026-01-01T00:00:00Z", record({})),)),
        _rows_with(admissions=(("ghost", "k", "r", 1, "2026-01-01T00:00:00Z", record({})),)),
        _rows_with(messages=(("ghost", 1, "m", 1, "2026-01-01T00:00:00Z", record({})),)),
        _rows_with(heads=(("h", 1, "2026-01-01T00:00:00Z", "[1, 2]"),)),
        _rows_with(heads=(("h", 1, "2026-01-01T00:00:00Z", "{not json"),)),
        _rows_with(runs=(("c-1", "r", 1, "queued", "yesterday", record({})),)),
        _rows_with(messages=(("c-1", 1, "m", 1, "2026-01-01 00:00:00", record({})),)),
    ],
    ids=["orphan-run", "orphan-admission", "orphan-message", "record-not-object",
         "record-not-json", "run-time-not-rfc3339", "message-time-without-offset"],
)
def test_rows_that_cannot_migrate_are_refused_unchanged(tmp_path: Path, rows: V1Rows) -> None:
    """SQL-037: orphans, bad records and bad times are integrity errors; the file stays v1."""
    path = tmp_path / "bad.sqlite"
    write_v1_database(path, rows)
    before = file_digest(path)
    with pytest.raises(MigrationRefusedError) as caught:
        migrate(path)
    assert caught.value.kind == "integrity"
    assert file_digest(path) == before


def _changed(table: str, key: object, **members: JsonValue) -> V1Rows:
    """The sample rows with members of one record (the row with ``key``) changed."""
    rows = sample_v1_rows()
    changed = []
    for row in getattr(rows, table):
        if row[1] == key:
            value = canonical.decode(str(row[-1]).encode("utf-8"))
            assert isinstance(value, dict)
            value.update(members)
            row = (*row[:-1], record(value))
        changed.append(row)
    return _rows_with(**{table: tuple(changed)})


def _column(table: str, key: object, index: int, value: object) -> V1Rows:
    """The sample rows with one column of one row (the row with ``key``) changed."""
    rows = sample_v1_rows()
    changed = tuple(
        (*row[:index], value, *row[index + 1:]) if row[1] == key else row
        for row in getattr(rows, table)
    )
    return _rows_with(**{table: changed})


@pytest.mark.parametrize(
    "rows",
    [
        _changed("runs", "r-1", state="failed"),
        _changed("runs", "r-2", ordinal=0),
        _changed("messages", 1, role="system"),
        _changed("admissions", "k-1", extra=True),
        _rows_with(heads=(("c-1", 4, "2026-01-01T00:00:00Z", record({"version": 4})),)),
        _column("runs", "r-2", 3, "running"),
        _column("runs", "r-2", 4, "2026-01-01T00:00:02.500Z"),
        _column("messages", 1, 3, 0),
        _column("admissions", "k-2", 2, "r-1"),
        _column("heads", 4, 1, 5),
        _changed("messages", 2, status="draft", content={"text": "partial"},
                 draft={"id": "d", "status": "s", "sha256": "0" * 64, "parts": 1, "bytes": 9}),
        _changed("runs", "r-2", conversationId="elsewhere"),
    ],
    ids=["run-breaks-its-invariants", "run-ordinal-zero", "message-unknown-role",
         "admission-extra-member", "head-without-conversation", "state-column-disagrees",
         "time-column-spelled-otherwise", "active-column-disagrees", "run-id-column-disagrees",
         "version-column-disagrees", "draft-does-not-hash", "record-names-another-conversation"],
)
def test_records_that_are_not_trn_records_are_refused(tmp_path: Path, rows: V1Rows) -> None:
    """SQL-037, SQL-054: a record that is no TRN record or disagrees with its row is refused."""
    path = tmp_path / "bad.sqlite"
    write_v1_database(path, rows)
    before = file_digest(path)
    with pytest.raises(MigrationRefusedError) as caught:
        migrate(path)
    assert caught.value.kind == "integrity"
    assert file_digest(path) == before


@pytest.mark.parametrize(
    ("clock", "ids"),
    [
        (lambda: "yesterday", counting_ids()),
        (lambda: MIGRATED_AT, lambda: "same-id"),
        (lambda: MIGRATED_AT, lambda: ""),
    ],
    ids=["clock-not-rfc3339", "ids-repeat", "empty-id"],
)
def test_bad_clock_or_ids_are_refused_unchanged(
    v1_file: Path, clock: Callable[[], str], ids: Callable[[], str]
) -> None:
    """SQL-032: a clock or id generator that breaks the envelope rules stops the migration."""
    before = file_digest(v1_file)
    with pytest.raises(LedgerError) as caught:
        SqliteStore(v1_file, clock=clock, new_event_id=ids)
    assert caught.value.kind == "integrity"
    assert file_digest(v1_file) == before


def test_empty_version_1_file_migrates_without_events(tmp_path: Path) -> None:
    """SQL-031: a version 1 file with no head migrates to version 2 with no event."""
    path = tmp_path / "none.sqlite"
    write_v1_database(path, V1Rows())
    store = migrate(path)
    assert store.outcome == "migrated"
    assert store.migration is not None and store.migration.conversations == ()
    store.close()


_RACER = textwrap.dedent(
    """
    import json, pathlib, sys, time
    from convledger.sqlite import SqliteStore
    path, go = sys.argv[1], pathlib.Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.001)
    store = SqliteStore(path, busy_timeout=30)
    print(json.dumps(store.outcome))
    store.close()
    """
)


def test_two_processes_racing_migrate_exactly_once(v1_file: Path, tmp_path: Path) -> None:
    """SQL-030: two processes open one version 1 file at once: one migrates, one opens v2."""
    go = tmp_path / "go"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(v1_file), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    go.touch()
    outcomes = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err.decode()
        outcomes.append(json.loads(out))
    assert sorted(outcomes) == ["migrated", "opened"]
    store = SqliteStore(v1_file)
    for conversation in ("c-1", "c-empty", "c\x00ü"):
        assert store.head(conversation) == 1
    store.close()
