"""The archive written from stored rows is the archive the clear path writes, byte for byte.

ARC-001, ARC-004, SQL-005: ``convledger.fast.archive.encode_stored`` over the
rows a store wrote must equal ``encode_archive(archive_of(...))`` over the
envelopes those rows decode to.
"""

from __future__ import annotations

import sqlite3

from hypothesis import example, given
from hypothesis import strategies as st

from convledger.archive import archive_of, encode_archive
from convledger.canonical import MAX_SAFE_INTEGER, JsonValue
from convledger.envelope import Envelope
from convledger.fast.archive import encode_stored
from convledger.sqlite import SqliteStore, rows
from test_fast_canonical import json_values, properties, texts

identifiers = texts(surrogates=False).filter(bool)


@st.composite
def envelopes(draw: st.DrawFn) -> Envelope:
    """Envelopes with any identifiers, payloads, flags and positions the model allows."""
    return Envelope(
        schema_version=draw(st.integers(1, MAX_SAFE_INTEGER)),
        event_id=draw(identifiers),
        conversation_id="ignored",
        seq=draw(st.integers(1, MAX_SAFE_INTEGER)),
        kind=draw(identifiers),
        occurred_at=draw(st.sampled_from(["2026-01-01T00:00:00Z", "2026-05-09T07:35:25.5+02:00"])),
        payload=draw(json_values()),  # type: ignore[arg-type]
        ignorable=draw(st.booleans()),
    )


@properties
@given(
    identifiers,
    st.lists(envelopes(), min_size=1, max_size=4),
    st.dictionaries(identifiers, json_values(), max_size=2),
)
@example("c\u2028\x00\"", [], {})
def test_stored_rows_write_the_clear_archive(
    conversation_id: str, placed: list[Envelope], companions: dict[str, JsonValue]
) -> None:
    """Rows -> fast archive bytes equal rows -> envelopes -> clear archive bytes."""
    stored = [
        rows.event_row(Envelope(
            envelope.schema_version, envelope.event_id, conversation_id, envelope.seq,
            envelope.kind, envelope.occurred_at, envelope.payload, envelope.ignorable,
        ))
        for envelope in placed
    ]
    clear = encode_archive(
        archive_of(conversation_id, [rows.envelope_of(row) for row in stored], companions)
    )
    assert encode_stored(conversation_id, stored, companions) == clear


def test_export_rows_of_a_real_store_write_its_export(tmp_path: object) -> None:
    """A SQLite store's own export equals the archive written from its stored rows."""
    from pathlib import Path

    from convledger import EventDraft

    path = Path(str(tmp_path)) / "ledger.sqlite"
    store = SqliteStore(path)
    drafts = [
        EventDraft(f"e{number}", "state/set", "2026-01-01T00:00:00Z",
                   {"name": "slot", "version": 1, "actor": "a", "value": f"v\u00e9{number}"})
        for number in range(5)
    ]
    store.append("conversation", drafts)
    exported = store.export_conversation("conversation")
    store.close()
    connection = sqlite3.connect(path)
    try:
        stored = rows.export_rows(connection, "conversation")
    finally:
        connection.close()
    assert len(stored) == 5
    assert encode_stored("conversation", stored, {}) == exported
