"""Checks of chapter SQL, schema version 3: the store writes the search index (SQL-070 .. 072).

The oracle of an event's text is computed here from the stored ``payload``
column alone (``json.loads`` keeps the document order), never by the store's
code: every writer of ``events`` (append, import, a version 1 migration's
baseline) must leave exactly one matching ``events_fts`` row per event
(SQL-070). A version 3 file holding version 2's insert trigger is refused
(SQL-071). A version 2 file, written here as release 0.1.0 wrote it (each
event indexed by its trigger), migrates in one transaction to version 3 and
answers every search as before; a read-only open or a failure leaves it as it
was (SQL-072).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.sqlite import Fts5UnknownError, schema
from convledger.sqlite.fixtures import (
    execute_raw,
    file_digest,
    write_v1_database,
    write_v2_database,
)
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import refused_unchanged, sqlite_store, workspace
from convledger_conformance.support import STAMP, draft, fail

_PAYLOADS: tuple[JsonValue, ...] = (
    {"z": "zulu last", "a": ["alpha first", 1, {"m": "mike\x00after nul"}], "n": None},
    "Köln",
    {"only": [1, 2.5, True]},
)
"""Values whose text tests document order, nesting, a NUL inside a string, no text at all."""


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for member in value.values():
            yield from _strings(member)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _index_problems(path: Path | str) -> list[str]:
    """Every event without exactly its index row (SQL-070), as sentences; [] when all match."""
    connection = sqlite3.connect(path)
    try:
        events = connection.execute(
            "SELECT conversation_id, seq, payload, search_rowid FROM events").fetchall()
        index = {
            int(row[0]): tuple(row[1:]) for row in connection.execute(
                "SELECT rowid, body, scope, conversation_id, seq FROM events_fts")
        }
    finally:
        connection.close()
    problems = []
    for conversation_id, seq, payload, rowid in events:
        text = " ".join(_strings(json.loads(payload)))
        scope = str(conversation_id).encode("utf-8").hex().upper()
        found = index.pop(int(rowid), None)
        if found is None or (found[0] or "", found[1], found[2], int(found[3])) != (
            text, scope, conversation_id, seq
        ):
            problems.append(f"event {conversation_id!r}/{seq} is indexed as {found!r}, "
                            f"expected {(text, scope, conversation_id, seq)!r}")
    problems.extend(f"index row {rowid} names no event: {row!r}" for rowid, row in index.items())
    return problems


@check("SQL-070", capability=Capability.MIGRATION, also=(Capability.SEARCH,))
def check_store_writes_each_index_row(ctx: CheckContext) -> None:
    """SQL-070: append, import and a version 1 baseline each leave exactly their index rows."""
    with sqlite_store(ctx, ["SQL-070"]) as store:
        triggers = _triggers(store.path)
        if schema.FTS_INSERT_TRIGGER.name in triggers:
            fail("SQL-070", "a version 3 file holds the insert trigger of version 2")
        batch = [draft(f"e-{n}", value) for n, value in enumerate(_PAYLOADS, start=1)]
        store.append("c\x00ü", batch)
        store.append("c\x00ü", [draft("e-single", "one more")])
        archive = store.export_conversation("c\x00ü")
        store.append("other", [draft("o-1", "x")])
        problems = _index_problems(store.path)
        if problems:
            fail("SQL-070", f"after appends: {problems[0]}")
        with sqlite_store(ctx, ["SQL-070"]) as target:
            target.import_conversation(archive)
            problems = _index_problems(target.path)
            if problems:
                fail("SQL-070", f"after an import: {problems[0]}")
            if [hit.seq for hit in target.search("c\x00ü", "after nul")] != [1]:
                fail("SQL-070", "the text after a NUL inside a string is not searchable")
    with workspace(ctx, ["SQL-070"]) as (opener, directory):
        v1 = directory / "v1.sqlite"
        write_v1_database(v1)
        opener(v1).close()
        problems = _index_problems(v1)
        if problems:
            fail("SQL-070", f"after a version 1 migration: {problems[0]}")


def _triggers(path: Path | str) -> set[str]:
    connection = sqlite3.connect(path)
    try:
        return {str(row[0]) for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    finally:
        connection.close()


@check("SQL-071", "SQL-022", capability=Capability.MIGRATION)
def check_version_3_refuses_the_insert_trigger(ctx: CheckContext) -> None:
    """SQL-071: a version 3 file holding ``events_fts_after_insert`` is refused and named."""
    with workspace(ctx, ["SQL-071", "SQL-022"]) as (opener, directory):
        for number, body in enumerate((schema.FTS_INSERT_TRIGGER.sql,
                                       "CREATE TRIGGER events_fts_after_insert AFTER INSERT ON"
                                       " events BEGIN SELECT 1; END")):
            path = directory / f"v3-trigger-{number}.sqlite"
            opener(path).close()
            execute_raw(path, [body])
            error = refused_unchanged(partial(opener, path), path, "integrity", ["SQL-071"],
                                      "a version 3 file holding events_fts_after_insert")
            if not isinstance(error, Fts5UnknownError) or (
                schema.FTS_INSERT_TRIGGER.name not in error.altered
            ):
                fail("SQL-071", "the refusal does not name events_fts_after_insert")


def _v2_events() -> list[Envelope]:
    texts: dict[str, list[JsonValue]] = {
        "a": ["fossil note from Köln", "before\x00after", {"k": "nested word"}],
        "b\x00": ["fossil again"],
    }
    return [
        Envelope.from_draft(draft(f"{cid}-{seq}", text), cid, seq)
        for cid, values in texts.items()
        for seq, text in enumerate(values, start=1)
    ]


def _answers(store: object, queries: tuple[tuple[str, str], ...]) -> list[object]:
    search = getattr(store, "search")  # noqa: B009 - the capability's method, typed by use
    return [[(hit.conversation_id, hit.seq, hit.occurred_at)
             for hit in search(requester, query, authorize=lambda _c: True)]
            for requester, query in queries]


_QUERIES = (("a", "fossil"), ("a", "koln"), ("a", "nested"), ("a", "after"), ("b\x00", "fossil"))
_EXPECTED = [
    [("a", 1, STAMP), ("b\x00", 1, STAMP)],
    [("a", 1, STAMP)],
    [("a", 3, STAMP)],
    [],  # version 2 indexed no text after a NUL, and its rows are kept as they are
    [("b\x00", 1, STAMP), ("a", 1, STAMP)],
]


@check("SQL-072", "SQL-021", "SQL-036", capability=Capability.MIGRATION,
       also=(Capability.SEARCH,))
def check_version_2_migrates_to_version_3(ctx: CheckContext) -> None:
    """SQL-072: a version 2 file is refused read-only, survives a failure unchanged, then
    migrates: no event written, the trigger gone, every search answered as before."""
    ids = ("SQL-072", "SQL-021", "SQL-036")
    with workspace(ctx, ids) as (opener, directory):
        path = directory / "v2.sqlite"
        write_v2_database(path, _v2_events())
        refused_unchanged(lambda: opener(path, read_only=True), path, "unavailable",
                          ["SQL-072", "SQL-021"], "a read-only open of a version 2 file")
        before = file_digest(path)

        def fail_at(step: str) -> None:
            raise RuntimeError(f"injected after {step}")

        try:
            opener(path, on_migration_step=fail_at).close()
        except RuntimeError:
            pass
        else:
            fail("SQL-072", "the migration of a version 2 file reported no step")
        if file_digest(path) != before:
            fail(("SQL-072", "SQL-036"), "a failed migration changed the version 2 file")
        store = opener(path)
        try:
            if store.outcome != "migrated":
                fail("SQL-072", f"a version 2 file was {store.outcome!r}, not migrated")
            if store.head("a") != 3 or store.head("b\x00") != 1:
                fail("SQL-072", "the migration changed the ledger")
            answers = _answers(store, _QUERIES)
            if answers != _EXPECTED:
                fail("SQL-072", f"the migrated file answers {answers!r}, expected {_EXPECTED!r}")
            store.append("a", [draft("a-4", "fossil after migration")])
            if [hit.seq for hit in store.search("a", "fossil")] != [4, 1]:
                fail("SQL-072", "an event appended after the migration is not found first")
        finally:
            store.close()
        connection = sqlite3.connect(path)
        try:
            version = connection.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        finally:
            connection.close()
        if version != ("3",) or schema.FTS_INSERT_TRIGGER.name in _triggers(path):
            fail("SQL-072", f"after migrating, version {version!r} with triggers "
                            f"{sorted(_triggers(path))}")
