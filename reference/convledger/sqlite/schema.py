"""The SQLite schema as data (chapter ``sqlite.md``, ids SQL-001 .. SQL-008).

Theory of operation
-------------------
A database carries its schema version in the table ``meta`` (SQL-001). Each
version is a tuple of :class:`SchemaObject` (type, name, DDL). Opening a file
compares what ``sqlite_master`` holds with these tuples, object by object,
whitespace-insensitively (SQL-011); creating a file executes them in order.

Version 1 is the normalized runtime store only: conversation heads with a
version, runs, admissions keyed by idempotency key, and messages with a
position and an active flag. Each row keeps its full normalized record as
canonical JSON in ``record``; the other columns are the keys and the values
that bounded reads order or filter by. Version 1 is frozen: the fossils in
``tests/fossils`` are version 1 files and must migrate to the same bytes
forever.

Version 2 adds the event ledger and the rows kept beside it (projection
checkpoints, spill objects, schedules, child links), the FTS5 index, the
tombstones of purged conversations and the indexes of the runtime's bounded
reads (SQL-050, SQL-051).

Layout of the ledger (SQL-004, SQL-007)
--------------------------------------
``events`` is a ``WITHOUT ROWID`` table clustered on ``(conversation_id,
seq)``: a keyset read of one conversation walks adjacent leaf pages, and its
cost depends on the page size and the window, not on how many other
conversations share the file. A global ``UNIQUE`` index on ``event_id`` makes
the database itself refuse a repeated eventId (LED-003). ``search_rowid`` is
the integer the FTS5 index needs as its rowid (a ``WITHOUT ROWID`` table has
none): the insert takes the next free rowid of ``events_fts`` inside the same
write transaction, and the AFTER DELETE trigger removes exactly that row.

Version 3 (SQL-070) drops the trigger ``events_fts_after_insert``: the store
writes an event's index row itself from the payload value it holds
(``rows.insert_events``) instead of SQLite walking the JSON with ``json_tree``.

Version 4 (SQL-073 .. SQL-076) adds ``search_pending``: an append writes a small row per
event there instead of its ``events_fts`` row, and the write that would bring it to
:data:`SEARCH_PENDING_LIMIT` rows indexes every pending event (``rows.insert_placed``); a
search matches pending events with the same tokenizer (``search.py``), so no answer changes.

The FTS5 table keeps its own copy of the indexed text (snippets need it) and
the ``conversation_id`` and ``seq`` of each row (unindexed), so a hit maps back
to its event by primary key. ``scope`` holds one token per conversation (the
hex of its UTF-8 bytes), so a search limited to one conversation is an FTS5
intersection rather than a filter over every hit.
"""

from __future__ import annotations

import re

import attrs

LATEST_VERSION = 4
"""The schema version a fresh file receives (SQL-010)."""
KNOWN_VERSIONS = (1, 2, 3, 4)
"""Every schema version this store can open (SQL-001, SQL-012)."""
NEW_FILE_PAGE_SIZE = 16384
"""Page size of files this store creates (SQL-010); see the layout note above."""

META_TABLE = "meta"
VERSION_KEY = "schema_version"


@attrs.frozen
class SchemaObject:
    """One table, index or trigger of a schema version, with its exact DDL."""

    type: str
    name: str
    sql: str
    normalized: str = attrs.field(init=False, eq=False, repr=False)
    """The DDL with runs of whitespace collapsed, as compared at open (SQL-011); made once."""

    @normalized.default
    def _normalized(self) -> str:
        return normalize_sql(self.sql)


def normalize_sql(sql: str) -> str:
    """Collapse whitespace so that two spellings of one definition compare equal."""
    collapsed = re.sub(r"\s+", " ", sql.strip())
    return re.sub(r"\s*([(),])\s*", r"\1", collapsed)


def _table(name: str, sql: str) -> SchemaObject:
    return SchemaObject("table", name, sql)


def _index(name: str, sql: str) -> SchemaObject:
    return SchemaObject("index", name, sql)


def _trigger(name: str, sql: str) -> SchemaObject:
    return SchemaObject("trigger", name, sql)


# -- version 1: the normalized runtime tables (frozen) -----------------------------------------

V1_OBJECTS: tuple[SchemaObject, ...] = (
    _table(
        "meta",
        """CREATE TABLE meta (
            key TEXT NOT NULL PRIMARY KEY,
            value TEXT NOT NULL
        ) WITHOUT ROWID""",
    ),
    _table(
        "heads",
        """CREATE TABLE heads (
            conversation_id TEXT NOT NULL PRIMARY KEY,
            version INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            record TEXT NOT NULL
        ) WITHOUT ROWID""",
    ),
    _table(
        "runs",
        """CREATE TABLE runs (
            conversation_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            state TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (conversation_id, run_id)
        ) WITHOUT ROWID""",
    ),
    _index(
        "runs_by_ordinal",
        "CREATE UNIQUE INDEX runs_by_ordinal ON runs (conversation_id, ordinal)",
    ),
    _table(
        "admissions",
        """CREATE TABLE admissions (
            conversation_id TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            run_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            admitted_at TEXT NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (conversation_id, idempotency_key)
        ) WITHOUT ROWID""",
    ),
    _table(
        "messages",
        """CREATE TABLE messages (
            conversation_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            active INTEGER NOT NULL CHECK (active IN (0, 1)),
            created_at TEXT NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (conversation_id, position)
        ) WITHOUT ROWID""",
    ),
    _index(
        "messages_by_id",
        "CREATE UNIQUE INDEX messages_by_id ON messages (conversation_id, message_id)",
    ),
)

# -- version 2: the ledger and its companions ------------------------------------------------

V2_LEDGER: tuple[SchemaObject, ...] = (
    _table(
        "events",
        """CREATE TABLE events (
            conversation_id TEXT NOT NULL,
            seq INTEGER NOT NULL CHECK (seq >= 1),
            event_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            schema_version INTEGER NOT NULL,
            occurred_at TEXT NOT NULL,
            payload TEXT NOT NULL,
            ignorable INTEGER NOT NULL CHECK (ignorable IN (0, 1)),
            search_rowid INTEGER NOT NULL,
            PRIMARY KEY (conversation_id, seq)
        ) WITHOUT ROWID""",
    ),
    _index(
        "events_by_event_id",
        "CREATE UNIQUE INDEX events_by_event_id ON events (event_id)",
    ),
    _trigger(
        "events_are_immutable",
        """CREATE TRIGGER events_are_immutable BEFORE UPDATE ON events
        BEGIN
            SELECT RAISE(ABORT, 'ledger events are immutable (SQL-006)');
        END""",
    ),
    _table(
        "projections",
        """CREATE TABLE projections (
            conversation_id TEXT NOT NULL,
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            upto_seq INTEGER NOT NULL CHECK (upto_seq >= 0),
            state TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (conversation_id, name)
        ) WITHOUT ROWID""",
    ),
    _table(
        "spills",
        """CREATE TABLE spills (
            conversation_id TEXT NOT NULL,
            reference TEXT NOT NULL,
            media_type TEXT NOT NULL,
            byte_size INTEGER NOT NULL CHECK (byte_size >= 0),
            sha256 TEXT NOT NULL,
            authorization TEXT NOT NULL,
            created_seq INTEGER NOT NULL,
            expires_at TEXT,
            data BLOB NOT NULL,
            UNIQUE (conversation_id, reference)
        )""",
    ),
    _table(
        "schedules",
        """CREATE TABLE schedules (
            conversation_id TEXT NOT NULL,
            schedule_id TEXT NOT NULL,
            next_at TEXT,
            state TEXT NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (conversation_id, schedule_id)
        ) WITHOUT ROWID""",
    ),
    _index(
        "schedules_by_next_at",
        "CREATE INDEX schedules_by_next_at ON schedules (next_at)",
    ),
    _table(
        "children",
        """CREATE TABLE children (
            parent_conversation_id TEXT NOT NULL,
            child_conversation_id TEXT NOT NULL,
            state TEXT NOT NULL,
            seed_upto_seq INTEGER NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (parent_conversation_id, child_conversation_id)
        ) WITHOUT ROWID""",
    ),
    _index(
        "children_by_child",
        "CREATE INDEX children_by_child ON children (child_conversation_id)",
    ),
)

# -- version 2: the runtime's tombstones and bounded-read indexes (SQL-050, SQL-051) ------------

V2_RUNTIME: tuple[SchemaObject, ...] = (
    _table(
        "purged",
        """CREATE TABLE purged (
            conversation_id TEXT NOT NULL PRIMARY KEY,
            purged_at TEXT NOT NULL
        ) WITHOUT ROWID""",
    ),
    _index(
        "runs_active",
        "CREATE INDEX runs_active ON runs (conversation_id, ordinal)"
        " WHERE state IN ('queued', 'running', 'interrupt_requested')",
    ),
    _index(
        "runs_recoverable",
        "CREATE INDEX runs_recoverable ON runs (conversation_id, ordinal)"
        " WHERE state IN ('running', 'interrupt_requested')",
    ),
    # SQL-057: runs_by_assistant, admissions_by_ordinal, admissions_by_input, messages_active.
    _index(
        "runs_by_assistant",
        "CREATE INDEX runs_by_assistant ON runs"
        " (conversation_id, json_extract(record, '$.assistantMessageId'))",
    ),
    _index(
        "admissions_by_ordinal",
        "CREATE INDEX admissions_by_ordinal ON admissions (conversation_id, ordinal)",
    ),
    _index(
        "admissions_by_input",
        "CREATE INDEX admissions_by_input ON admissions"
        " (conversation_id, json_extract(record, '$.inputId'))",
    ),
    _index(
        "messages_active",
        "CREATE INDEX messages_active ON messages (conversation_id, position) WHERE active = 1",
    ),
)
"""Version 2's runtime objects: the tombstones and the indexes of the bounded reads.

The expression indexes are used only by statements that spell the identical
expression; ``runtime_view.py`` does.
"""

# -- version 2: the FTS5 index (SQL-008) -----------------------------------------------------

FTS_TABLE = SchemaObject(
    "table",
    "events_fts",
    "CREATE VIRTUAL TABLE events_fts USING fts5("
    "body, scope, conversation_id UNINDEXED, seq UNINDEXED, "
    "tokenize = 'unicode61 remove_diacritics 2')",
)
"""The virtual table; its DDL pins the columns and the tokenizer (SQL-019)."""

FTS_SHADOW_TABLES = (
    "events_fts_data", "events_fts_idx", "events_fts_content", "events_fts_docsize",
    "events_fts_config",
)
"""The tables FTS5 keeps for ``events_fts``; every one must exist (SQL-018)."""

FTS_INSERT_TRIGGER = _trigger(
    "events_fts_after_insert",
    """CREATE TRIGGER events_fts_after_insert AFTER INSERT ON events
    BEGIN
        INSERT INTO events_fts (rowid, body, scope, conversation_id, seq)
        VALUES (
            new.search_rowid,
            (SELECT group_concat(value, ' ') FROM json_tree(new.payload)
             WHERE type = 'text'),
            hex(new.conversation_id),
            new.conversation_id,
            new.seq
        );
    END""",
)
"""Version 2 only: the trigger that indexed each inserted event (SQL-008); version 3 writes
the index row from Python instead (SQL-070) and must not hold it (SQL-071)."""

FTS_DELETE_TRIGGER = _trigger(
    "events_fts_after_delete",
    """CREATE TRIGGER events_fts_after_delete AFTER DELETE ON events
    BEGIN
        DELETE FROM events_fts WHERE rowid = old.search_rowid;
    END""",
)
"""Versions 2 and 3: a deleted event (a purge) leaves the index with its row (SRC-004)."""


# -- version 4: the events not indexed yet (SQL-073) -------------------------------------------

SEARCH_PENDING_LIMIT = 32
"""SQL-074: ``search_pending`` holds fewer rows than this after every write transaction."""

PENDING_TABLE = _table(
    "search_pending",
    "CREATE TABLE search_pending (search_rowid INTEGER PRIMARY KEY,"
    " conversation_id TEXT NOT NULL, seq INTEGER NOT NULL)",
)
"""SQL-073: one row per event whose ``events_fts`` row is not written yet."""

PENDING_DELETE_TRIGGER = _trigger(
    "search_pending_after_delete",
    """CREATE TRIGGER search_pending_after_delete AFTER DELETE ON events
    BEGIN
        DELETE FROM search_pending WHERE search_rowid = old.search_rowid;
    END""",
)
"""SQL-073: a deleted event (a purge) leaves ``search_pending`` with its row."""

V4_OBJECTS: tuple[SchemaObject, ...] = (PENDING_TABLE, PENDING_DELETE_TRIGGER)
"""What version 4 adds to version 3 (SQL-076)."""


def fts_triggers(version: int) -> tuple[SchemaObject, ...]:
    """The triggers of ``events_fts`` that ``version`` holds (SQL-018, SQL-070)."""
    if version == 2:
        return (FTS_INSERT_TRIGGER, FTS_DELETE_TRIGGER)
    return (FTS_DELETE_TRIGGER,)


V2_CORE: tuple[SchemaObject, ...] = V1_OBJECTS + V2_LEDGER + V2_RUNTIME
"""Every ordinary object of version 2 (the FTS5 objects are checked apart)."""


def core_objects(version: int) -> tuple[SchemaObject, ...]:
    """The ordinary objects of ``version`` (SQL-002, SQL-003); 3 has 2's, 4 adds V4_OBJECTS."""
    if version == 1:
        return V1_OBJECTS
    return V2_CORE + V4_OBJECTS if version >= 4 else V2_CORE


def creation_script(version: int) -> tuple[str, ...]:
    """The statements that create ``version`` on an empty database, in order."""
    if version == 1:
        return tuple(item.sql for item in V1_OBJECTS)
    return tuple(item.sql for item in (*core_objects(version), FTS_TABLE, *fts_triggers(version)))


def upgrade_script(from_version: int) -> tuple[str, ...]:
    """The objects a version 1 (every object of version 4 it lacks) or a version 2 or 3 file
    (:data:`V4_OBJECTS`, SQL-076; version 2 drops its insert trigger first, SQL-072) gains."""
    if from_version in (2, 3):
        return tuple(item.sql for item in V4_OBJECTS)
    added = (*V2_LEDGER, *V2_RUNTIME, *V4_OBJECTS, FTS_TABLE, *fts_triggers(LATEST_VERSION))
    return tuple(item.sql for item in added)
