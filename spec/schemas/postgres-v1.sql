-- Chapter PGS (spec/postgres.md), schema version 1: the DDL that creates it in an
-- empty PostgreSQL schema named convledger, in this order, in one transaction (PGS-020),
-- then the row of meta that names the version (PGS-002).
-- Only the first two statements name the schema; every later name is unqualified and
-- resolves through search_path, as on every connection of the store (PGS-002). To create
-- the version in a schema of another name, write that name, as a quoted identifier when
-- it needs quoting, in place of convledger in those two statements and change nothing
-- else. Opening compares the catalog's shape of each object (columns and types, indexes,
-- function signatures, triggers) with every qualification by the schema's name removed,
-- never this text (PGS-006, PGS-023).
-- Generated from reference/convledger/postgres/schema.py by scripts/write_postgres_ddl.py;
-- tests/test_postgres_ddl_spec.py keeps the two equal.

CREATE SCHEMA IF NOT EXISTS convledger;
SET search_path TO convledger;

CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);

CREATE TABLE conversations (conversation_id bytea PRIMARY KEY);

CREATE TABLE events (
    conversation_id bytea NOT NULL,
    seq bigint NOT NULL CHECK (seq >= 1),
    event_id bytea NOT NULL,
    kind bytea NOT NULL,
    schema_version bigint NOT NULL,
    occurred_at text NOT NULL,
    payload text NOT NULL,
    ignorable boolean NOT NULL,
    PRIMARY KEY (conversation_id, seq),
    CONSTRAINT events_event_id_key UNIQUE (event_id)
);

CREATE FUNCTION events_are_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are immutable (PGS-005)' USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER events_immutable BEFORE UPDATE ON events FOR EACH ROW EXECUTE FUNCTION events_are_immutable();

CREATE TABLE heads (
    conversation_id bytea PRIMARY KEY,
    version bigint NOT NULL,
    updated_at text NOT NULL,
    record text NOT NULL
);

CREATE TABLE runs (
    conversation_id bytea NOT NULL,
    run_id bytea NOT NULL,
    ordinal bigint NOT NULL,
    state text NOT NULL,
    assistant_message_id bytea NOT NULL,
    updated_at text NOT NULL,
    record text NOT NULL,
    PRIMARY KEY (conversation_id, run_id)
);

CREATE UNIQUE INDEX runs_by_ordinal ON runs (conversation_id, ordinal);

CREATE INDEX runs_by_assistant ON runs (conversation_id, assistant_message_id);

CREATE INDEX runs_active ON runs (conversation_id, ordinal) WHERE state IN ('queued', 'running', 'interrupt_requested');

CREATE INDEX runs_recoverable ON runs (conversation_id, ordinal) WHERE state IN ('running', 'interrupt_requested');

CREATE TABLE admissions (
    conversation_id bytea NOT NULL,
    idempotency_key bytea NOT NULL,
    input_id bytea NOT NULL,
    run_id bytea NOT NULL,
    ordinal bigint NOT NULL,
    admitted_at text NOT NULL,
    record text NOT NULL,
    PRIMARY KEY (conversation_id, idempotency_key)
);

CREATE INDEX admissions_by_ordinal ON admissions (conversation_id, ordinal);

CREATE INDEX admissions_by_input ON admissions (conversation_id, input_id);

CREATE TABLE messages (
    conversation_id bytea NOT NULL,
    position bigint NOT NULL,
    message_id bytea NOT NULL,
    active boolean NOT NULL,
    created_at text NOT NULL,
    record text NOT NULL,
    PRIMARY KEY (conversation_id, position)
);

CREATE UNIQUE INDEX messages_by_id ON messages (conversation_id, message_id);

CREATE INDEX messages_active ON messages (conversation_id, position) WHERE active;

CREATE TABLE purged (conversation_id bytea PRIMARY KEY, purged_at text NOT NULL);

CREATE TABLE children (
    parent_conversation_id bytea NOT NULL,
    child_conversation_id bytea NOT NULL,
    state text NOT NULL,
    seed_upto_seq bigint NOT NULL,
    record text NOT NULL,
    PRIMARY KEY (parent_conversation_id, child_conversation_id)
);

CREATE TABLE schedules (
    conversation_id bytea NOT NULL,
    schedule_id bytea NOT NULL,
    next_at text,
    state text NOT NULL,
    record text NOT NULL,
    PRIMARY KEY (conversation_id, schedule_id)
);

INSERT INTO meta (key, value) VALUES ('schema_version', '1');
