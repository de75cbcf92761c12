"""The PostgreSQL schema as data (chapter ``postgres.md``, ids PGS-002 .. PGS-006).

Theory of operation
-------------------
A store lives in one PostgreSQL schema (a namespace; ``convledger`` unless
the caller names another). The schema records its version in the table
``meta`` under the key ``schema_version`` (PGS-002). Version 1 is a tuple of
:class:`SchemaObject`: each has its DDL, executed in order to create the
schema in one transaction, and its *shape*, what the catalog says about it
once created (a table's columns, an index's ``pg_get_indexdef`` and a
trigger's ``pg_get_triggerdef`` without the schema's name), compared object
by object when a store opens an existing schema (PGS-023).

Identifiers are ``bytea``
-------------------------
A conversationId, eventId, kind or any other identifier may hold any Unicode
scalar value, U+0000 included (ENV-005), and a PostgreSQL ``text`` value
cannot hold U+0000. Every identifier column therefore stores the UTF-8 bytes
of the identifier as ``bytea``, which also compares byte by byte: the order
of UTF-8 bytes is the order of code points, the order TRN-085 asks of
``scan_recoverable`` whatever collation the database has (PGS-003). Payloads
and records are canonical JSON text (chapter CAN), which escapes U+0000, and
times are RFC 3339 text.

The lock row
------------
``conversations`` holds one row per conversation that was ever written. Every
write to a conversation locks its row first (``INSERT .. ON CONFLICT DO
NOTHING``, then ``SELECT .. FOR UPDATE``) and reads its head only after the
lock is granted (PGS-010); the table holds nothing but the key.
"""

from __future__ import annotations

import attrs

LATEST_VERSION = 2
"""The schema version a fresh schema receives (PGS-002, PGS-060)."""
KNOWN_VERSIONS = (1, 2)
"""Every schema version this store can open (PGS-021)."""
META_TABLE = "meta"
VERSION_KEY = "schema_version"
DEFAULT_SCHEMA = "convledger"
"""The schema a store uses when the caller names none."""


@attrs.frozen
class SchemaObject:
    """One table, index, function or trigger of a schema version: its DDL and its shape."""

    type: str
    name: str
    sql: str
    shape: str
    """What the catalog reports for it (see :data:`SHAPE_QUERIES`), schema name removed."""


_ACTIVE = "state = ANY (ARRAY['queued'::text, 'running'::text, 'interrupt_requested'::text])"
_OWNED = "state = ANY (ARRAY['running'::text, 'interrupt_requested'::text])"


def _table(name: str, sql: str, columns: str) -> SchemaObject:
    return SchemaObject("table", name, sql, columns)


def _index(name: str, sql: str, shape: str) -> SchemaObject:
    return SchemaObject("index", name, sql, shape)


V1_OBJECTS: tuple[SchemaObject, ...] = (
    _table(
        "meta",
        "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
        "key text not null, value text not null",
    ),
    _index("meta_pkey", "", "CREATE UNIQUE INDEX meta_pkey ON meta USING btree (key)"),
    _table(
        "conversations",
        "CREATE TABLE conversations (conversation_id bytea PRIMARY KEY)",
        "conversation_id bytea not null",
    ),
    _index(
        "conversations_pkey", "",
        "CREATE UNIQUE INDEX conversations_pkey ON conversations USING btree (conversation_id)",
    ),
    _table(
        "events",
        """CREATE TABLE events (
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
        )""",
        "conversation_id bytea not null, seq bigint not null, event_id bytea not null,"
        " kind bytea not null, schema_version bigint not null, occurred_at text not null,"
        " payload text not null, ignorable boolean not null",
    ),
    _index(
        "events_pkey", "",
        "CREATE UNIQUE INDEX events_pkey ON events USING btree (conversation_id, seq)",
    ),
    _index(
        "events_event_id_key", "",
        "CREATE UNIQUE INDEX events_event_id_key ON events USING btree (event_id)",
    ),
    SchemaObject(
        "function",
        "events_are_immutable",
        """CREATE FUNCTION events_are_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'events are immutable (PGS-005)' USING ERRCODE = 'restrict_violation';
        END $$""",
        "events_are_immutable() returns trigger",
    ),
    SchemaObject(
        "trigger",
        "events_immutable",
        "CREATE TRIGGER events_immutable BEFORE UPDATE ON events"
        " FOR EACH ROW EXECUTE FUNCTION events_are_immutable()",
        "CREATE TRIGGER events_immutable BEFORE UPDATE ON events"
        " FOR EACH ROW EXECUTE FUNCTION events_are_immutable()",
    ),
    _table(
        "heads",
        """CREATE TABLE heads (
            conversation_id bytea PRIMARY KEY,
            version bigint NOT NULL,
            updated_at text NOT NULL,
            record text NOT NULL
        )""",
        "conversation_id bytea not null, version bigint not null, updated_at text not null,"
        " record text not null",
    ),
    _index(
        "heads_pkey", "",
        "CREATE UNIQUE INDEX heads_pkey ON heads USING btree (conversation_id)",
    ),
    _table(
        "runs",
        """CREATE TABLE runs (
            conversation_id bytea NOT NULL,
            run_id bytea NOT NULL,
            ordinal bigint NOT NULL,
            state text NOT NULL,
            assistant_message_id bytea NOT NULL,
            updated_at text NOT NULL,
            record text NOT NULL,
            PRIMARY KEY (conversation_id, run_id)
        )""",
        "conversation_id bytea not null, run_id bytea not null, ordinal bigint not null,"
        " state text not null, assistant_message_id bytea not null, updated_at text not null,"
        " record text not null",
    ),
    _index(
        "runs_pkey", "",
        "CREATE UNIQUE INDEX runs_pkey ON runs USING btree (conversation_id, run_id)",
    ),
    _index(
        "runs_by_ordinal",
        "CREATE UNIQUE INDEX runs_by_ordinal ON runs (conversation_id, ordinal)",
        "CREATE UNIQUE INDEX runs_by_ordinal ON runs USING btree (conversation_id, ordinal)",
    ),
    _index(
        "runs_by_assistant",
        "CREATE INDEX runs_by_assistant ON runs (conversation_id, assistant_message_id)",
        "CREATE INDEX runs_by_assistant ON runs USING btree"
        " (conversation_id, assistant_message_id)",
    ),
    _index(
        "runs_active",
        "CREATE INDEX runs_active ON runs (conversation_id, ordinal)"
        " WHERE state IN ('queued', 'running', 'interrupt_requested')",
        "CREATE INDEX runs_active ON runs USING btree (conversation_id, ordinal)"
        f" WHERE ({_ACTIVE})",
    ),
    _index(
        "runs_recoverable",
        "CREATE INDEX runs_recoverable ON runs (conversation_id, ordinal)"
        " WHERE state IN ('running', 'interrupt_requested')",
        "CREATE INDEX runs_recoverable ON runs USING btree (conversation_id, ordinal)"
        f" WHERE ({_OWNED})",
    ),
    _table(
        "admissions",
        """CREATE TABLE admissions (
            conversation_id bytea NOT NULL,
            idempotency_key bytea NOT NULL,
            input_id bytea NOT NULL,
            run_id bytea NOT NULL,
            ordinal bigint NOT NULL,
            admitted_at text NOT NULL,
            record text NOT NULL,
            PRIMARY KEY (conversation_id, idempotency_key)
        )""",
        "conversation_id bytea not null, idempotency_key bytea not null,"
        " input_id bytea not null, run_id bytea not null, ordinal bigint not null,"
        " admitted_at text not null, record text not null",
    ),
    _index(
        "admissions_pkey", "",
        "CREATE UNIQUE INDEX admissions_pkey ON admissions USING btree"
        " (conversation_id, idempotency_key)",
    ),
    _index(
        "admissions_by_ordinal",
        "CREATE INDEX admissions_by_ordinal ON admissions (conversation_id, ordinal)",
        "CREATE INDEX admissions_by_ordinal ON admissions USING btree (conversation_id, ordinal)",
    ),
    _index(
        "admissions_by_input",
        "CREATE INDEX admissions_by_input ON admissions (conversation_id, input_id)",
        "CREATE INDEX admissions_by_input ON admissions USING btree (conversation_id, input_id)",
    ),
    _table(
        "messages",
        """CREATE TABLE messages (
            conversation_id bytea NOT NULL,
            position bigint NOT NULL,
            message_id bytea NOT NULL,
            active boolean NOT NULL,
            created_at text NOT NULL,
            record text NOT NULL,
            PRIMARY KEY (conversation_id, position)
        )""",
        "conversation_id bytea not null, position bigint not null, message_id bytea not null,"
        " active boolean not null, created_at text not null, record text not null",
    ),
    _index(
        "messages_pkey", "",
        "CREATE UNIQUE INDEX messages_pkey ON messages USING btree (conversation_id, \"position\")",
    ),
    _index(
        "messages_by_id",
        "CREATE UNIQUE INDEX messages_by_id ON messages (conversation_id, message_id)",
        "CREATE UNIQUE INDEX messages_by_id ON messages USING btree (conversation_id, message_id)",
    ),
    _index(
        "messages_active",
        "CREATE INDEX messages_active ON messages (conversation_id, position) WHERE active",
        "CREATE INDEX messages_active ON messages USING btree (conversation_id, \"position\")"
        " WHERE active",
    ),
    _table(
        "purged",
        "CREATE TABLE purged (conversation_id bytea PRIMARY KEY, purged_at text NOT NULL)",
        "conversation_id bytea not null, purged_at text not null",
    ),
    _index(
        "purged_pkey", "",
        "CREATE UNIQUE INDEX purged_pkey ON purged USING btree (conversation_id)",
    ),
    _table(
        "children",
        """CREATE TABLE children (
            parent_conversation_id bytea NOT NULL,
            child_conversation_id bytea NOT NULL,
            state text NOT NULL,
            seed_upto_seq bigint NOT NULL,
            record text NOT NULL,
            PRIMARY KEY (parent_conversation_id, child_conversation_id)
        )""",
        "parent_conversation_id bytea not null, child_conversation_id bytea not null,"
        " state text not null, seed_upto_seq bigint not null, record text not null",
    ),
    _index(
        "children_pkey", "",
        "CREATE UNIQUE INDEX children_pkey ON children USING btree"
        " (parent_conversation_id, child_conversation_id)",
    ),
    _table(
        "schedules",
        """CREATE TABLE schedules (
            conversation_id bytea NOT NULL,
            schedule_id bytea NOT NULL,
            next_at text,
            state text NOT NULL,
            record text NOT NULL,
            PRIMARY KEY (conversation_id, schedule_id)
        )""",
        "conversation_id bytea not null, schedule_id bytea not null, next_at text,"
        " state text not null, record text not null",
    ),
    _index(
        "schedules_pkey", "",
        "CREATE UNIQUE INDEX schedules_pkey ON schedules USING btree"
        " (conversation_id, schedule_id)",
    ),
)
"""Schema version 1: every object, in creation order (an index with no DDL is a key's)."""

V2_ADDED: tuple[SchemaObject, ...] = (
    _table(
        "projections",
        """CREATE TABLE projections (
            conversation_id bytea NOT NULL,
            name bytea NOT NULL,
            version bigint NOT NULL,
            upto_seq bigint NOT NULL,
            state text NOT NULL,
            updated_at text NOT NULL,
            PRIMARY KEY (conversation_id, name)
        )""",
        "conversation_id bytea not null, name bytea not null, version bigint not null,"
        " upto_seq bigint not null, state text not null, updated_at text not null",
    ),
    _index(
        "projections_pkey", "",
        "CREATE UNIQUE INDEX projections_pkey ON projections USING btree (conversation_id, name)",
    ),
    _table(
        "spills",
        """CREATE TABLE spills (
            conversation_id bytea NOT NULL,
            reference bytea NOT NULL,
            media_type text NOT NULL,
            byte_size bigint NOT NULL,
            sha256 text NOT NULL,
            operation text NOT NULL,
            created_seq bigint NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (conversation_id, reference)
        )""",
        "conversation_id bytea not null, reference bytea not null, media_type text not null,"
        " byte_size bigint not null, sha256 text not null, operation text not null,"
        " created_seq bigint not null, data bytea not null",
    ),
    _index(
        "spills_pkey", "",
        "CREATE UNIQUE INDEX spills_pkey ON spills USING btree (conversation_id, reference)",
    ),
    _table(
        "search_words",
        """CREATE TABLE search_words (
            conversation_id bytea NOT NULL,
            seq bigint NOT NULL,
            words tsvector NOT NULL,
            PRIMARY KEY (conversation_id, seq)
        )""",
        "conversation_id bytea not null, seq bigint not null, words tsvector not null",
    ),
    _index(
        "search_words_pkey", "",
        "CREATE UNIQUE INDEX search_words_pkey ON search_words USING btree (conversation_id, seq)",
    ),
    _index(
        "search_words_gin",
        "CREATE INDEX search_words_gin ON search_words USING gin (words)",
        "CREATE INDEX search_words_gin ON search_words USING gin (words)",
    ),
)
"""PGS-060: what version 2 adds to version 1 (projections, spills, the search words)."""

V2_OBJECTS = V1_OBJECTS + V2_ADDED
"""Schema version 2: every object of version 1, then those of :data:`V2_ADDED`."""

VERSIONS: dict[int, tuple[SchemaObject, ...]] = {1: V1_OBJECTS, 2: V2_OBJECTS}

SHAPE_QUERIES = {
    "table": (
        "SELECT c.relname, string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)"
        " || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY a.attnum)"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
        " WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p') GROUP BY c.relname"
    ),
    "index": (
        "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %(schema)s AND c.relkind = 'i'"
    ),
    "function": (
        "SELECT p.proname, p.proname || '(' || pg_get_function_arguments(p.oid) || ') returns '"
        " || pg_get_function_result(p.oid) FROM pg_proc p"
        " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %(schema)s"
    ),
    "trigger": (
        "SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %(schema)s AND NOT t.tgisinternal"
    ),
}
"""PGS-023: for each object type, a query of the catalog giving (name, shape) in one schema."""

RELATIONS = (
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')"
    " ORDER BY c.relname"
)
"""PGS-020: the tables (and other relations) a schema holds; none means it is empty."""


def ddl_batch(version: int) -> str:
    """Every statement creating ``version``, as one text: a fresh schema costs one round trip."""
    return ";\n".join(item.sql for item in VERSIONS[version] if item.sql)


def unqualified(shape: str, schema: str) -> str:
    """A catalog shape with the schema's qualification removed, as :attr:`SchemaObject.shape`."""
    for prefix in (f'"{schema}".', f"{schema}."):
        shape = shape.replace(f" {prefix}", " ")
    return shape
