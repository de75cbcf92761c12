-- Chapter SQL (spec/sqlite.md), schema version 3: the DDL that creates it on an
-- empty database, in this order, in one transaction (SQL-010), then the row of meta that
-- names the version (SQL-001). Opening compares each object of sqlite_master with its
-- statement here after the normalization of SQL-011. Pages of 16 KiB (PRAGMA page_size =
-- 16384, set before the first statement) are recommended, not required (SQL-010).
-- Generated from reference/convledger/sqlite/schema.py by scripts/write_sqlite_ddl.py;
-- tests/test_sqlite_ddl_spec.py keeps the two equal.

CREATE TABLE meta (
    key TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE heads (
    conversation_id TEXT NOT NULL PRIMARY KEY,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    record TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE runs (
    conversation_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    state TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (conversation_id, run_id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX runs_by_ordinal ON runs (conversation_id, ordinal);

CREATE TABLE admissions (
    conversation_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    run_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    admitted_at TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (conversation_id, idempotency_key)
) WITHOUT ROWID;

CREATE TABLE messages (
    conversation_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    active INTEGER NOT NULL CHECK (active IN (0, 1)),
    created_at TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
) WITHOUT ROWID;

CREATE UNIQUE INDEX messages_by_id ON messages (conversation_id, message_id);

CREATE TABLE events (
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
) WITHOUT ROWID;

CREATE UNIQUE INDEX events_by_event_id ON events (event_id);

CREATE TRIGGER events_are_immutable BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'ledger events are immutable (SQL-006)');
END;

CREATE TABLE projections (
    conversation_id TEXT NOT NULL,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    upto_seq INTEGER NOT NULL CHECK (upto_seq >= 0),
    state TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (conversation_id, name)
) WITHOUT ROWID;

CREATE TABLE spills (
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
);

CREATE TABLE schedules (
    conversation_id TEXT NOT NULL,
    schedule_id TEXT NOT NULL,
    next_at TEXT,
    state TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (conversation_id, schedule_id)
) WITHOUT ROWID;

CREATE INDEX schedules_by_next_at ON schedules (next_at);

CREATE TABLE children (
    parent_conversation_id TEXT NOT NULL,
    child_conversation_id TEXT NOT NULL,
    state TEXT NOT NULL,
    seed_upto_seq INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (parent_conversation_id, child_conversation_id)
) WITHOUT ROWID;

CREATE INDEX children_by_child ON children (child_conversation_id);

CREATE TABLE purged (
    conversation_id TEXT NOT NULL PRIMARY KEY,
    purged_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX runs_active ON runs (conversation_id, ordinal) WHERE state IN ('queued', 'running', 'interrupt_requested');

CREATE INDEX runs_recoverable ON runs (conversation_id, ordinal) WHERE state IN ('running', 'interrupt_requested');

CREATE INDEX runs_by_assistant ON runs (conversation_id, json_extract(record, '$.assistantMessageId'));

CREATE INDEX admissions_by_ordinal ON admissions (conversation_id, ordinal);

CREATE INDEX admissions_by_input ON admissions (conversation_id, json_extract(record, '$.inputId'));

CREATE INDEX messages_active ON messages (conversation_id, position) WHERE active = 1;

CREATE VIRTUAL TABLE events_fts USING fts5(body, scope, conversation_id UNINDEXED, seq UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER events_fts_after_delete AFTER DELETE ON events
BEGIN
    DELETE FROM events_fts WHERE rowid = old.search_rowid;
END;

INSERT INTO meta (key, value) VALUES ('schema_version', '3');
