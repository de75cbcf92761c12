"""Ledger rows: the statements that touch ``events`` and the envelope <-> row codec.

An envelope is stored member for member (SQL-005): ``occurred_at`` is the
exact string received, ``payload`` the canonical JSON text of the payload
(written by :func:`convledger.codec.encode`, the same bytes as the clear
encoder ``convledger.canonical.encode``),
``ignorable`` 0 or 1. Decoding a row therefore gives back an envelope with the
same canonical bytes (ENV-011). The payload text is read back by
:func:`convledger.codec.decode_stored`, which gives the value the strict
decoder ``convledger.canonical.decode`` gives on every canonical text (the
store wrote it); by default at the speed of the C decoder
(``convledger.fast.decode``, proven in ``tests/test_fast_decode.py``). A bounded
read fetches the payload as its UTF-8 bytes instead and decodes them with
:func:`convledger.codec.decode_stored_page` (:data:`READ_PAGE`).

Every statement that reads the ledger is named here, so a test can ask SQLite
for its query plan and prove it is a SEARCH on an index, never a SCAN of
``events`` (SQL-007).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from convledger import canonical, codec
from convledger.envelope import Envelope
from convledger.search.query import scope_token
from convledger.search.text import event_text
from convledger.sqlite.schema import SEARCH_PENDING_LIMIT

MAX_SEQ = canonical.MAX_SAFE_INTEGER
"""The largest seq an envelope may carry (ENV-006); the open upper end of a window."""

_COLUMNS = "conversation_id, seq, event_id, kind, schema_version, occurred_at, payload, ignorable"

READ_WINDOW = (
    f"SELECT {_COLUMNS} FROM events"
    " WHERE conversation_id = ? AND seq >= ? AND seq <= ? ORDER BY seq LIMIT ?"
)
"""LED-008: one bounded keyset window of one conversation, whole rows (:func:`envelope_of`).

The store's reads fetch the same window as :data:`READ_PAGE`; this shape is the one the
benchmark floors and the test galleries replay.
"""

READ_PAGE = (
    "SELECT seq, event_id, kind, schema_version, occurred_at, CAST(payload AS BLOB), ignorable"
    " FROM events WHERE conversation_id = ? AND seq >= ? AND seq <= ? ORDER BY seq LIMIT ?"
)
"""LED-008: the window of :data:`READ_WINDOW` as the read path fetches it (:func:`read_window`).

The conversation is the caller's own argument, so it is not fetched again, and the payload
comes as the UTF-8 bytes SQLite holds (``CAST(payload AS BLOB)``), which the decoder reads
without a text object being made first (:func:`convledger.codec.decode_stored_page`).
"""

READ_HEAD = "SELECT seq FROM events WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1"
"""LED-012: the last seq of one conversation."""

EVENT_IDS_PER_PROBE = 64
FIND_EVENT_IDS = (
    "SELECT event_id FROM events WHERE event_id IN ("
    + ", ".join("?" * EVENT_IDS_PER_PROBE)
    + ")"
)
"""LED-003, ARC-010: which of :data:`EVENT_IDS_PER_PROBE` eventIds are stored anywhere."""

EXPORT_EVENTS = f"SELECT {_COLUMNS} FROM events WHERE conversation_id = ? ORDER BY seq"
"""ARC-001: every event of one conversation, in seq order."""

DELETE_AFTER = "DELETE FROM events WHERE conversation_id = ? AND seq > ?"
"""LED-004: the rows of a refused batch, above the head its transaction read (they have no
index row yet: the ``AFTER DELETE`` trigger finds none to delete)."""

NEXT_CONVERSATION = (
    "SELECT conversation_id FROM events WHERE conversation_id > ?"
    " ORDER BY conversation_id LIMIT 1"
)
"""Inspection: the next conversation after one, so listing them skips from key to key."""

COUNT_EVENTS = "SELECT count(*), max(seq) FROM events WHERE conversation_id = ?"
"""Inspection: how many events one conversation has, and its head."""

INSERT_EVENT = (
    f"INSERT INTO events ({_COLUMNS}, search_rowid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
"""SQL-008: store one envelope with the ``search_rowid`` of its index row."""

_FREE_ROWID = (
    "max((SELECT coalesce(max(rowid), 0) FROM events_fts),"
    " (SELECT coalesce(max(search_rowid), 0) FROM search_pending)) + 1"
)

NEXT_SEARCH_ROWID = f"SELECT {_FREE_ROWID}"
"""SQL-067: the first rowid above every one ``events_fts`` and ``search_pending`` hold (each
answers from the last key of its b-tree, not by a scan)."""

APPEND_STATE = (
    "SELECT EXISTS (SELECT 1 FROM purged WHERE conversation_id = ?),"
    " coalesce((SELECT seq FROM events WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1), 0),"
    f" {_FREE_ROWID}, (SELECT count(*) FROM search_pending)"
)
"""SQL-052, LED-012, SQL-067, SQL-074: what an append reads before it writes, in one statement:
whether the conversation has a tombstone, its head, the first free rowid of the index, and
how many events wait for their index row.

The same searches as ``runtime_view.PURGED``, :data:`READ_HEAD`, :data:`NEXT_SEARCH_ROWID`
and a count of ``search_pending`` (fewer than ``schema.SEARCH_PENDING_LIMIT`` rows, one
page), asked in one round trip inside the append's ``BEGIN IMMEDIATE``.
"""

INDEX_STATE = f"SELECT {_FREE_ROWID}, (SELECT count(*) FROM search_pending)"
"""SQL-067, SQL-074: the two last values of :data:`APPEND_STATE` alone."""

INSERT_PENDING = "INSERT INTO search_pending (search_rowid, conversation_id, seq) VALUES (?, ?, ?)"
"""SQL-073: an event whose ``events_fts`` row is written later, by the write that fills the
table (SQL-074)."""

PENDING_EVENTS = (
    "SELECT search_pending.search_rowid, search_pending.conversation_id, search_pending.seq,"
    " events.occurred_at, events.payload FROM search_pending JOIN events"
    " ON events.conversation_id = search_pending.conversation_id"
    " AND events.seq = search_pending.seq ORDER BY search_pending.search_rowid"
)
"""SQL-074, SQL-075: every event waiting for its index row, with what indexing it or matching
it needs (fewer than ``schema.SEARCH_PENDING_LIMIT`` rows)."""

PENDING_COUNTS = (
    "SELECT count(events.seq), count(*) - count(events.seq) FROM search_pending"
    " LEFT JOIN events ON events.conversation_id = search_pending.conversation_id"
    " AND events.seq = search_pending.seq"
)
"""Inspection (SQL-073, SQL-075): how many rows of ``search_pending`` name an event (the
events waiting for their index row), and how many name none (a search ignores them)."""

CLEAR_PENDING = "DELETE FROM search_pending"
"""SQL-074: every pending event has its index row now."""

INSERT_SEARCH_ROW = (
    "INSERT INTO events_fts (rowid, body, scope, conversation_id, seq) VALUES (?, ?, ?, ?, ?)"
)
"""SQL-070: the index row of one event, written by the store after the event's row."""

LEDGER_READS = {
    "read_window": READ_WINDOW,
    "read_page": READ_PAGE,
    "head": READ_HEAD,
    "find_event_ids": FIND_EVENT_IDS,
    "export": EXPORT_EVENTS,
    "next_conversation": NEXT_CONVERSATION,
    "count_events": COUNT_EVENTS,
    "append_state": APPEND_STATE,
    "pending_events": PENDING_EVENTS,
    "pending_counts": PENDING_COUNTS,
}
"""Every statement that reads ``events``, by purpose (SQL-007)."""

Row = tuple[str, int, str, str, int, str, str, int]


def event_row(envelope: Envelope, payload: str | None = None) -> Row:
    """The column values of one envelope (SQL-005); ``payload``, when given, is the canonical
    text of its payload as the append already encoded it (it is not encoded again)."""
    return (
        envelope.conversation_id,
        envelope.seq,
        envelope.event_id,
        envelope.kind,
        envelope.schema_version,
        envelope.occurred_at,
        codec.encode(envelope.payload).decode("utf-8") if payload is None else payload,
        1 if envelope.ignorable else 0,
    )


def envelope_of(row: Row) -> Envelope:
    """The envelope one row stores (SQL-005)."""
    conversation_id, seq, event_id, kind, schema_version, occurred_at, payload, ignorable = row
    return Envelope(
        schema_version=schema_version,
        event_id=event_id,
        conversation_id=conversation_id,
        seq=seq,
        kind=kind,
        occurred_at=occurred_at,
        payload=codec.decode_stored(payload),
        ignorable=ignorable == 1,
    )


def head_of(connection: sqlite3.Connection, conversation_id: str) -> int:
    """LED-012 on an open connection: the last seq, 0 when there is none."""
    found = connection.execute(READ_HEAD, (conversation_id,)).fetchone()
    return 0 if found is None else int(found[0])


def first_stored_event_id(
    connection: sqlite3.Connection, event_ids: Iterable[str]
) -> str | None:
    """The first of ``event_ids`` already stored anywhere, or None (LED-003, ARC-010).

    :data:`FIND_EVENT_IDS` asks for a chunk of them at a time (a short chunk padded with its
    own first eventId), so an import of 1000 events asks 16 times, not 1000.
    """
    wanted = list(event_ids)
    for start in range(0, len(wanted), EVENT_IDS_PER_PROBE):
        chunk = wanted[start : start + EVENT_IDS_PER_PROBE]
        padded = chunk + [chunk[0]] * (EVENT_IDS_PER_PROBE - len(chunk))
        stored = {row[0] for row in connection.execute(FIND_EVENT_IDS, padded)}
        for event_id in chunk:
            if event_id in stored:
                return event_id
    return None


def append_state(
    connection: sqlite3.Connection, conversation_id: str
) -> tuple[bool, int, int, int]:
    """:data:`APPEND_STATE` on an open write transaction: (purged, head, first free index rowid,
    pending events)."""
    purged, head, first, pending = connection.execute(
        APPEND_STATE, (conversation_id, conversation_id)
    ).fetchone()
    return purged == 1, int(head), int(first), int(pending)


def insert_events(
    connection: sqlite3.Connection,
    envelopes: Sequence[Envelope],
    payload_texts: Sequence[str] = (),
) -> None:
    """Store envelopes as they are; the caller holds the write transaction (SQL-040).

    The import's and the migration's write (the append writes through
    :func:`insert_placed`). One pass over the envelopes: each payload is encoded
    once, and its index text (SQL-070) is the text of that canonical encoding,
    whose members come in the stored order (CAN-002) however the envelope's
    payload object orders them; no envelope is built back from its row. Then
    the events and their index rows each go in by one ``executemany``, the
    rowids taken as in :func:`insert_placed` (SQL-067).

    ``payload_texts``, when given, are the canonical texts of the payloads in
    order, from a decoder whose objects keep their text's (canonical) order
    (:attr:`convledger.archive.Archive.payload_texts`): they are written as they
    are, and the index text is taken from the payload objects, which give the
    same strings in the same order without decoding the text again.
    """
    if payload_texts and len(payload_texts) != len(envelopes):
        raise ValueError("payload_texts must hold one text per envelope")
    first = int(connection.execute(NEXT_SEARCH_ROWID).fetchone()[0])
    event_rows: list[tuple[object, ...]] = []
    search_rows: list[tuple[object, ...]] = []
    scopes: dict[str, str] = {}  # an import is one conversation: its scope token once
    for rowid, envelope in enumerate(envelopes, start=first):
        if payload_texts:
            payload = payload_texts[rowid - first]
            text = event_text(envelope.payload)
        else:
            payload = codec.encode(envelope.payload).decode("utf-8")
            text = stored_text(payload)
        conversation_id = envelope.conversation_id
        scope = scopes.get(conversation_id)
        if scope is None:
            scope = scopes[conversation_id] = scope_token(conversation_id)
        event_rows.append((*event_row(envelope, payload), rowid))
        search_rows.append((rowid, text, scope, conversation_id, envelope.seq))
    connection.executemany(INSERT_EVENT, event_rows)
    connection.executemany(INSERT_SEARCH_ROW, search_rows)


def stored_text(payload: str) -> str:
    """SQL-070: the index text of a payload stored as this canonical text (its string values
    in the order the text holds them)."""
    return event_text(codec.decode_stored(payload))


def read_window(
    connection: sqlite3.Connection, conversation_id: str, from_seq: int, to_seq: int, limit: int
) -> list[Envelope]:
    """LED-008: up to ``limit`` envelopes with ``from_seq <= seq <= to_seq``, by seq.

    The same envelopes as :func:`envelope_of` of each :data:`READ_WINDOW` row (SQL-005),
    built here from :data:`READ_PAGE` rows: the row's values are the ones the store wrote and
    checked (LED-001), so nothing is checked again; only the payload is decoded.
    """
    found = connection.execute(READ_PAGE, (conversation_id, from_seq, to_seq, limit)).fetchall()
    payloads = codec.decode_stored_page([row[5] for row in found])
    return [
        Envelope(schema_version, event_id, conversation_id, seq, kind, occurred_at,
                 payload, ignorable == 1)
        for (seq, event_id, kind, schema_version, occurred_at, _, ignorable), payload
        in zip(found, payloads, strict=True)
    ]


def export_events(connection: sqlite3.Connection, conversation_id: str) -> list[Envelope]:
    """ARC-001: every envelope of one conversation; the caller holds the read transaction."""
    rows = connection.execute(EXPORT_EVENTS, (conversation_id,))
    return [envelope_of(row) for row in rows.fetchall()]


def export_rows(connection: sqlite3.Connection, conversation_id: str) -> list[Row]:
    """ARC-001: every stored row of one conversation, undecoded, for
    :func:`convledger.codec.encode_stored`; the caller holds the read transaction."""
    return list(connection.execute(EXPORT_EVENTS, (conversation_id,)).fetchall())


def insert_placed(
    connection: sqlite3.Connection,
    envelopes: Sequence[Envelope],
    payloads: Sequence[str] | None = None,
    first_rowid: int | None = None,
    pending: int | None = None,
) -> tuple[Envelope, ...]:
    """Store envelopes (as :func:`insert_events`) and return them as read back from their rows.

    Each payload is encoded once: the row inserted is the row decoded, so the
    result is what a later read returns (SQL-005, LED-014). ``payloads``, when
    given, are the canonical texts of the envelopes' payloads as the append
    already encoded them (:func:`convledger.batch.detached_payloads`), whose
    payload objects are the decoding of that text and held by no caller: they
    are written as they are and the envelopes returned as they are, with no
    second encoding and no decoding. ``first_rowid`` and ``pending``, when
    given, are the first free index rowid and the count of ``search_pending``
    the caller read in this transaction (:data:`APPEND_STATE`).

    SQL-073, SQL-074: while ``search_pending`` stays below its limit, each event
    gets a pending row instead of its index row; the write that would reach the
    limit indexes every pending event and its own, and empties the table.
    """
    if payloads is None:
        stored = [event_row(envelope) for envelope in envelopes]
        placed = tuple(envelope_of(row) for row in stored)
    else:
        stored = [
            event_row(envelope, payload)
            for envelope, payload in zip(envelopes, payloads, strict=True)
        ]
        placed = tuple(envelopes)
    # SQL-067: the batch takes the next rowids, in seq order.
    if first_rowid is None or pending is None:
        first_rowid, pending = connection.execute(INDEX_STATE).fetchone()
    connection.executemany(
        INSERT_EVENT, [(*row, rowid) for rowid, row in enumerate(stored, start=first_rowid)]
    )
    if pending + len(placed) < SEARCH_PENDING_LIMIT:
        connection.executemany(
            INSERT_PENDING,
            [(rowid, envelope.conversation_id, envelope.seq)
             for rowid, envelope in enumerate(placed, start=first_rowid)],
        )
        return placed
    if pending:
        index_pending(connection)
    # SQL-070: each event's index row holds the text of the payload as stored (decoded from
    # the row, or the decoding of the canonical text the append wrote, so in its member order).
    connection.executemany(
        INSERT_SEARCH_ROW,
        [
            (rowid, event_text(envelope.payload), scope_token(envelope.conversation_id),
             envelope.conversation_id, envelope.seq)
            for rowid, envelope in enumerate(placed, start=first_rowid)
        ],
    )
    return placed


def index_pending(connection: sqlite3.Connection) -> int:
    """SQL-074: write the index row of every pending event and empty ``search_pending``; the
    caller holds the write transaction. Returns how many events it indexed."""
    found = connection.execute(PENDING_EVENTS).fetchall()
    connection.executemany(
        INSERT_SEARCH_ROW,
        [
            (rowid, stored_text(payload), scope_token(conversation_id), conversation_id, seq)
            for rowid, conversation_id, seq, _, payload in found
        ],
    )
    connection.execute(CLEAR_PENDING)
    return len(found)
