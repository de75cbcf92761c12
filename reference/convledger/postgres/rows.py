"""Ledger rows in PostgreSQL: the statements that touch ``events`` and the row codec (PGS-003).

An envelope is stored member for member: the identifiers (conversationId,
eventId, kind) as their UTF-8 bytes in ``bytea`` (see ``schema.py``),
``occurred_at`` as the exact text received, ``payload`` as its canonical JSON
text, ``ignorable`` as a boolean; reading a row gives back the same canonical
bytes (ENV-011).

Every statement that reads the ledger is named in :data:`LEDGER_READS`, so a
test can ask the server for its plan and prove that it is an index scan, never
a sequential scan of ``events`` (PGS-030).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from convledger import canonical, codec
from convledger.envelope import Envelope

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

MAX_SEQ = canonical.MAX_SAFE_INTEGER
"""The largest seq an envelope may carry (ENV-006)."""

COLUMNS = "conversation_id, seq, event_id, kind, schema_version, occurred_at, payload, ignorable"

READ_WINDOW = (
    f"SELECT {COLUMNS} FROM events"
    " WHERE conversation_id = %s AND seq >= %s AND seq <= %s ORDER BY seq LIMIT %s"
)
"""LED-008: one bounded keyset window of one conversation (index ``events_pkey``)."""

READ_HEAD = "SELECT seq FROM events WHERE conversation_id = %s ORDER BY seq DESC LIMIT 1"
"""LED-012: the last seq of one conversation (``events_pkey``, backward)."""

FIND_EVENT_IDS = "SELECT event_id FROM events WHERE event_id = ANY(%b) LIMIT 1"
"""LED-003: one of these eventIds stored anywhere (index ``events_event_id_key``). The array
travels in binary (``%b``): psycopg writes a text ``bytea[]`` escaping every byte of every
item (~5 us per eventId, ~0.45 ms for a batch of 100), a binary one copies them."""

APPEND_STATE = (
    "SELECT EXISTS (SELECT 1 FROM purged WHERE conversation_id = %s),"
    " (SELECT seq FROM events WHERE conversation_id = %s ORDER BY seq DESC LIMIT 1),"
    " (SELECT event_id FROM events WHERE event_id = ANY(%b) LIMIT 1)"
)
"""PGS-041, LED-005, LED-003: an append's reads after its lock in one round trip: the
tombstone, the head (as :data:`READ_HEAD`) and one eventId already stored (as
:data:`FIND_EVENT_IDS`)."""

EXPORT_EVENTS = f"SELECT {COLUMNS} FROM events WHERE conversation_id = %s ORDER BY seq"
"""ARC-001: every event of one conversation, in seq order (``events_pkey``)."""

LOCK_CONVERSATION = (
    "INSERT INTO conversations (conversation_id) VALUES (%s) ON CONFLICT DO NOTHING"
)
SELECT_FOR_UPDATE = "SELECT 1 FROM conversations WHERE conversation_id = %s FOR UPDATE"
"""PGS-010: make sure the conversation's row exists, then lock it until the transaction ends."""

INSERT_EVENT = f"INSERT INTO events ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
"""One row (the benchmarks' and the migration tests' fills)."""

INSERT_EVENTS = (
    f"INSERT INTO events ({COLUMNS})"
    " SELECT * FROM unnest(%b::bytea[], %b::bigint[], %b::bytea[], %b::bytea[], %b::bigint[],"
    " %b::text[], %b::text[], %b::boolean[])"
)
"""LED-004, PGS-004: every row of one write in one statement and one round trip, a column
per array (``unnest`` keeps their order); the constraints refuse it whole."""

LEDGER_READS = {
    "read_window": READ_WINDOW,
    "head": READ_HEAD,
    "find_event_ids": FIND_EVENT_IDS,
    "append_state": APPEND_STATE,
    "export": EXPORT_EVENTS,
    "select_for_update": SELECT_FOR_UPDATE,
}
"""Every statement that reads the ledger's tables, by purpose (PGS-030)."""

Row = tuple[bytes, int, bytes, bytes, int, str, str, bool]
StoredRow = tuple[str, int, str, str, int, str, str, int]
"""The row shape :func:`convledger.codec.encode_stored` takes (the SQLite store's)."""


def key(text: str) -> bytes:
    """An identifier as stored: its UTF-8 bytes (PGS-003)."""
    return text.encode("utf-8")


def text_of(value: object) -> str:
    """A stored identifier as text; a cell that is not ``bytea`` is corrupt."""
    if type(value) is bytes:
        return value.decode("utf-8")
    if isinstance(value, memoryview):
        value = bytes(value)
    if not isinstance(value, bytes):
        from convledger.errors import IntegrityError

        raise IntegrityError(f"an identifier cell holds {type(value).__name__}, not bytea",
                             requirement="PGS-003")
    return value.decode("utf-8")


def event_row(envelope: Envelope, payload: str | None = None) -> Row:
    """The column values of one envelope (PGS-003); ``payload``, when given, is the canonical
    text of its payload as the append already encoded it (it is not encoded again)."""
    return (
        key(envelope.conversation_id),
        envelope.seq,
        key(envelope.event_id),
        key(envelope.kind),
        envelope.schema_version,
        envelope.occurred_at,
        codec.encode(envelope.payload).decode("utf-8") if payload is None else payload,
        envelope.ignorable,
    )


def stored_row(row: Sequence[Any]) -> StoredRow:
    """A fetched row as text, in the shape of :data:`StoredRow`."""
    conversation_id, seq, event_id, kind, schema_version, occurred_at, payload, ignorable = row
    return (text_of(conversation_id), int(seq), text_of(event_id), text_of(kind),
            int(schema_version), str(occurred_at), str(payload), 1 if ignorable else 0)


def envelope_of(row: Sequence[Any]) -> Envelope:
    """The envelope one fetched row stores (PGS-003)."""
    return envelope_of_stored(stored_row(row))


def envelope_of_stored(row: StoredRow) -> Envelope:
    """The envelope of a row already read as text (:func:`stored_row`)."""
    cid, seq, event_id, kind, schema_version, occurred_at, payload, ignorable = row
    return Envelope(
        schema_version=schema_version,
        event_id=event_id,
        conversation_id=cid,
        seq=seq,
        kind=kind,
        occurred_at=occurred_at,
        payload=codec.decode_stored(payload),
        ignorable=ignorable == 1,
    )


def lock_conversation(connection: Connection, conversation_id: str) -> bool:
    """PGS-010: the conversation's row, locked FOR UPDATE; False if a purge removed it meanwhile.

    The row of a conversation that was written before exists: one statement locks it. Only
    when it finds none (a new conversation, or a purge deleted the row while this waited) is
    the row made, and then locked.
    """
    cid = key(conversation_id)
    if connection.execute(SELECT_FOR_UPDATE, (cid,)).fetchone() is not None:
        return True
    connection.execute(LOCK_CONVERSATION, (cid,))
    return connection.execute(SELECT_FOR_UPDATE, (cid,)).fetchone() is not None


def head_of(connection: Connection, conversation_id: str) -> int:
    """LED-012 on an open connection: the last seq, 0 when there is none."""
    found = connection.execute(READ_HEAD, (key(conversation_id),)).fetchone()
    return 0 if found is None else int(found[0])


def append_state(
    connection: Connection, conversation_id: str, event_ids: Iterable[str]
) -> tuple[bool, int, str | None]:
    """Tombstone, head and one of ``event_ids`` stored anywhere, in one statement (APPEND_STATE)."""
    cid = key(conversation_id)
    found = connection.execute(
        APPEND_STATE, (cid, cid, [key(event_id) for event_id in event_ids])
    ).fetchone()
    assert found is not None  # one row of three subqueries
    purged, head, stored = found
    return bool(purged), 0 if head is None else int(head), (
        None if stored is None else text_of(stored)
    )


def first_stored_event_id(connection: Connection, event_ids: Iterable[str]) -> str | None:
    """One of ``event_ids`` already stored anywhere, or None (LED-003, ARC-010)."""
    wanted = [key(event_id) for event_id in event_ids]
    found = connection.execute(FIND_EVENT_IDS, (wanted,)).fetchone()
    return None if found is None else text_of(found[0])


def insert_placed(
    connection: Connection, envelopes: Sequence[Envelope], payloads: Sequence[str] | None = None
) -> tuple[Envelope, ...]:
    """Store envelopes as they are and return them as read back from their rows (LED-014).

    ``payloads``, when given, are the canonical texts of the envelopes' payloads as the
    append already encoded them (:func:`convledger.batch.detached_payloads`), whose payload
    objects are the decoding of that text and held by no caller: they are written as they
    are and the envelopes returned as they are, with no second encoding and no decoding
    (as ``convledger.sqlite.rows.insert_placed``).
    """
    columns, stored = placed_columns(envelopes, payloads)
    if stored:
        connection.execute(INSERT_EVENTS, columns)
    return stored


def placed_columns(
    envelopes: Sequence[Envelope], payloads: Sequence[str] | None = None
) -> tuple[list[list[Any]], tuple[Envelope, ...]]:
    """The parameters of :data:`INSERT_EVENTS` for ``envelopes``, and the envelopes as their
    rows give them back (LED-014): :func:`insert_placed` without the statement."""
    if payloads is not None:
        return event_columns(envelopes, payloads), tuple(envelopes)
    stored = [event_row(envelope) for envelope in envelopes]
    columns = [list(column) for column in zip(*stored, strict=True)]
    return columns, tuple(envelope_of(row) for row in stored)


def event_columns(envelopes: Sequence[Envelope], payloads: Sequence[str]) -> list[list[Any]]:
    """The parameters of :data:`INSERT_EVENTS`: the :func:`event_row` of each envelope (with
    its payload's canonical text), a list per column, built column by column (one
    conversation's key made once)."""
    if len(payloads) != len(envelopes):
        raise ValueError("one canonical payload text per envelope")
    conversations = {envelope.conversation_id for envelope in envelopes}
    if len(conversations) == 1:
        conversation_keys = [key(envelopes[0].conversation_id)] * len(envelopes)
    else:
        conversation_keys = [key(envelope.conversation_id) for envelope in envelopes]
    return [
        conversation_keys,
        [envelope.seq for envelope in envelopes],
        [key(envelope.event_id) for envelope in envelopes],
        [key(envelope.kind) for envelope in envelopes],
        [envelope.schema_version for envelope in envelopes],
        [envelope.occurred_at for envelope in envelopes],
        list(payloads),
        [envelope.ignorable for envelope in envelopes],
    ]


def envelopes_of(found: Sequence[Sequence[Any]]) -> list[Envelope]:
    """The envelopes of fetched rows (each as :func:`envelope_of` gives it), with the payloads
    decoded together by :func:`convledger.codec.decode_stored_page`, as the SQLite store's read
    path does: the texts are the canonical ones the store wrote (PGS-003)."""
    payloads = codec.decode_stored_page([str(row[6]).encode("utf-8") for row in found])
    return [
        Envelope(int(schema_version), text_of(event_id), text_of(cid), int(seq),
                 text_of(kind), str(occurred_at), payload, bool(ignorable))
        for (cid, seq, event_id, kind, schema_version, occurred_at, _, ignorable), payload
        in zip(found, payloads, strict=True)
    ]


def read_window(
    connection: Connection, conversation_id: str, from_seq: int, to_seq: int, limit: int
) -> list[Envelope]:
    """LED-008: up to ``limit`` envelopes with ``from_seq <= seq <= to_seq``, by seq."""
    found = connection.execute(READ_WINDOW, (key(conversation_id), from_seq, to_seq, limit))
    return envelopes_of(found.fetchall())


def export_rows(connection: Connection, conversation_id: str) -> list[StoredRow]:
    """ARC-001: every row of one conversation as text; the caller holds the snapshot."""
    found = connection.execute(EXPORT_EVENTS, (key(conversation_id),)).fetchall()
    return [stored_row(row) for row in found]


def export_events(connection: Connection, conversation_id: str) -> list[Envelope]:
    """ARC-001: every envelope of one conversation; the caller holds the snapshot."""
    return envelopes_of(connection.execute(EXPORT_EVENTS, (key(conversation_id),)).fetchall())
