-- Chapter SQL (spec/sqlite.md), schema version 1: the DDL that creates it on an
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

INSERT INTO meta (key, value) VALUES ('schema_version', '1');
