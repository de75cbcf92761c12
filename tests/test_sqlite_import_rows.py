"""The import's write (``rows.insert_events``, SQL-005, SQL-067, SQL-070) against the append's.

``insert_events`` writes an import's (and a migration's) events in one pass: each
payload encoded once, its index text taken from that canonical text, no envelope
built back from its row. ``insert_placed`` without payload texts encodes each
payload, decodes the row back into an envelope and indexes the decoded payload:
the oracle here. On any envelopes (payload members in any order, any strings)
both must leave the same rows in ``events`` and ``events_fts`` (the oracle's
pending rows indexed by ``index_pending``, as the write that fills
``search_pending`` indexes them, SQL-074), so an import exports the same bytes
and answers the same searches as before.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import draft, draft_batches
from convledger import canonical
from convledger.archive import archive_of, decode_archive, encode_archive
from convledger.envelope import Envelope, EventDraft, from_wire
from convledger.kinds import default_registry
from convledger.search.text import event_text
from convledger.sqlite import SqliteStore, rows

EVENT_ROWS = (
    "SELECT conversation_id, seq, event_id, kind, schema_version, occurred_at, payload,"
    " ignorable, search_rowid FROM events ORDER BY search_rowid"
)
INDEX_ROWS = "SELECT rowid, body, scope, conversation_id, seq FROM events_fts ORDER BY rowid"


def _ledger(path: Path) -> sqlite3.Connection:
    SqliteStore(path, synchronous="NORMAL").close()
    return sqlite3.connect(path, isolation_level=None)


def _written(
    connection: sqlite3.Connection,
    batches: list[tuple[Envelope, ...]],
    *,
    oracle: bool,
    texts: list[tuple[str, ...]] | None = None,
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    for number, envelopes in enumerate(batches):
        connection.execute("BEGIN IMMEDIATE")
        if oracle:
            rows.insert_placed(connection, envelopes)
            rows.index_pending(connection)  # SQL-074: what a later write does to pending rows
        elif texts is not None:
            rows.insert_events(connection, envelopes, texts[number])
        else:
            rows.insert_events(connection, envelopes)
        connection.execute("COMMIT")
    return (
        connection.execute(EVENT_ROWS).fetchall(),
        connection.execute(INDEX_ROWS).fetchall(),
    )


def _placed(conversation_id: str, drafts: list[EventDraft], first: int) -> tuple[Envelope, ...]:
    return tuple(
        Envelope.from_draft(item, conversation_id, seq)
        for seq, item in enumerate(drafts, start=first)
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(draft_batches(max_size=6), min_size=1, max_size=3))
def test_insert_events_writes_the_rows_of_insert_placed(
    tmp_path: Path, batches: list[list[EventDraft]]
) -> None:
    """SQL-005, SQL-067, SQL-070: the same event rows and index rows, byte for byte."""
    seen: set[str] = set()
    placed: list[tuple[Envelope, ...]] = []
    for number, drafts in enumerate(batches):
        fresh = [item for item in drafts if item.event_id not in seen]
        seen.update(item.event_id for item in fresh)
        if fresh:  # each batch a conversation of its own, as an import writes it
            placed.append(_placed(f"conv-{number}", fresh, 1))
    directory = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    directory.mkdir()
    new, old = _ledger(directory / "new.sqlite"), _ledger(directory / "old.sqlite")
    try:
        assert _written(new, placed, oracle=False) == _written(old, placed, oracle=True)
    finally:
        new.close()
        old.close()


def test_index_text_follows_the_stored_member_order(tmp_path: Path) -> None:
    """SQL-070 regression: a payload object whose members are not in canonical order is
    indexed in the stored (canonical) order, not in the order of the object given."""
    payload = {"value": {"zeta": "last", "alpha": "first"}, "actor": "tester", "name": "slot",
               "version": 1}
    envelope = Envelope.from_draft(draft("e-order", payload=payload), "conv", 1)
    assert event_text(envelope.payload) == "last first tester slot"
    connection = _ledger(tmp_path / "order.sqlite")
    try:
        connection.execute("BEGIN IMMEDIATE")
        rows.insert_events(connection, [envelope])
        connection.execute("COMMIT")
        ((body,),) = connection.execute("SELECT body FROM events_fts").fetchall()
        ((stored,),) = connection.execute("SELECT payload FROM events").fetchall()
    finally:
        connection.close()
    assert stored == canonical.encode(payload).decode("utf-8")
    assert body == "tester slot first last"
    assert body == rows.stored_text(stored)


def test_import_exports_and_searches_as_the_oracle_writes(tmp_path: Path) -> None:
    """ARC-001, SRC-003: an archive imported through ``insert_events`` exports the same
    bytes, and answers the same searches, as the same events written by the oracle."""
    source = SqliteStore(tmp_path / "source.sqlite", synchronous="NORMAL")
    try:
        source.append("conv", [
            draft(f"e{index}", value={"z": f"word{index} common", "a": ["alpha", index]})
            for index in range(40)
        ])
        archive = source.export_conversation("conv")
    finally:
        source.close()
    imported = SqliteStore(tmp_path / "imported.sqlite", synchronous="NORMAL")
    try:
        imported.import_conversation(archive)
        assert imported.export_conversation("conv") == archive
        hits = {word: imported.search("conv", word, limit=50) for word in
                ("common", "alpha", "word7", "tester")}
    finally:
        imported.close()
    oracle_path = tmp_path / "oracle.sqlite"
    connection = _ledger(oracle_path)
    try:
        document = canonical.decode(archive)
        assert isinstance(document, dict) and isinstance(document["events"], list)
        envelopes = tuple(from_wire(wire) for wire in document["events"])
        _written(connection, [envelopes], oracle=True)
    finally:
        connection.close()
    oracle = SqliteStore(oracle_path, synchronous="NORMAL")
    try:
        assert oracle.export_conversation("conv") == archive
        assert {word: oracle.search("conv", word, limit=50) for word in hits} == hits
    finally:
        oracle.close()
    assert len(hits["common"]) == 40 and len(hits["word7"]) == 1


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(draft_batches(max_size=6), min_size=1, max_size=3))
def test_archive_payload_texts_write_the_rows_of_insert_placed(
    tmp_path: Path, batches: list[list[EventDraft]]
) -> None:
    """SQL-005, SQL-070: an archive's payload texts (Archive.payload_texts, the import's
    write) and its payload objects' string order give the oracle's rows, byte for byte."""
    seen: set[str] = set()
    decoded: list[tuple[Envelope, ...]] = []
    texts: list[tuple[str, ...]] = []
    for number, drafts in enumerate(batches):
        fresh = [item for item in drafts if item.event_id not in seen]
        seen.update(item.event_id for item in fresh)
        if not fresh:
            continue
        conversation_id = f"conv-{number}"
        data = encode_archive(archive_of(conversation_id, _placed(conversation_id, fresh, 1)))
        archive = decode_archive(data, default_registry())
        assert len(archive.payload_texts) == len(archive.events)
        assert list(archive.payload_texts) == [
            canonical.encode(envelope.payload).decode("utf-8") for envelope in archive.events
        ]
        decoded.append(archive.events)
        texts.append(archive.payload_texts)
    directory = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    directory.mkdir()
    new, old = _ledger(directory / "new.sqlite"), _ledger(directory / "old.sqlite")
    try:
        assert _written(new, decoded, oracle=False, texts=texts) == _written(
            old, decoded, oracle=True
        )
    finally:
        new.close()
        old.close()


def test_archive_built_in_memory_carries_no_payload_texts() -> None:
    """Archive.payload_texts: only decoding fills them; an archive built in memory has none,
    so its store encodes each payload itself."""
    envelopes = _placed("conv", [draft("e1", value={"b": "x", "a": "y"})], 1)
    assert archive_of("conv", envelopes).payload_texts == ()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=3), max_size=200),
    st.sets(st.integers(0, 199), max_size=5),
)
def test_first_stored_event_id_asks_in_chunks(wanted: list[str], stored_at: set[int]) -> None:
    """LED-003, ARC-010: the first of the eventIds already stored, whatever the chunk
    boundaries (rows.EVENT_IDS_PER_PROBE), repeats, NUL or astral characters."""
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE events (event_id TEXT PRIMARY KEY)")
    stored = {wanted[index] for index in stored_at if index < len(wanted)} | {"\x00", "x\U0001F600"}
    connection.executemany("INSERT OR IGNORE INTO events VALUES (?)", [(e,) for e in stored])
    expected = next((event_id for event_id in wanted if event_id in stored), None)
    assert rows.first_stored_event_id(connection, iter(wanted)) == expected
    connection.close()


def test_first_stored_event_id_at_the_chunk_edges() -> None:
    """The first stored eventId at the last place of a chunk, and at the first of the next."""
    size = rows.EVENT_IDS_PER_PROBE
    wanted = [f"e{index}" for index in range(2 * size + 1)]
    for position in (0, size - 1, size, 2 * size):
        connection = sqlite3.connect(":memory:")
        connection.execute("CREATE TABLE events (event_id TEXT PRIMARY KEY)")
        connection.executemany("INSERT OR IGNORE INTO events VALUES (?)",
                               [(wanted[position],), (wanted[-1],)])
        assert rows.first_stored_event_id(connection, wanted) == wanted[position]
        connection.close()
