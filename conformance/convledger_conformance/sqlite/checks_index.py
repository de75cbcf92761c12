"""Checks of chapter SQL, schema versions 3 and 4: the store writes the search index
(SQL-070 .. SQL-076).

The oracle of an event's text is computed here from the stored ``payload``
column alone (``json.loads`` keeps the document order), never by the store's
code: every writer of ``events`` (append, import, a version 1 migration's
baseline) must leave each event with exactly one matching ``events_fts`` row,
or (an append's or a transition's, version 4) exactly one ``search_pending``
row, fewer than 32 of them, each conversation's pending events its newest
(SQL-070, SQL-073, SQL-074). A search answers the pending events as if they
were indexed, on a read-only handle too, and writes nothing (SQL-075). A
version 3 or 4 file holding version 2's insert trigger is refused (SQL-071).
A version 2 file, written here as release 0.1.0 wrote it (each event indexed
by its trigger), and a version 3 file, written as a version 3 store wrote it,
migrate in one transaction to version 4 and answer every search as before; a
read-only open or a failure leaves them as they were (SQL-072, SQL-076).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
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
    write_v3_database,
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


PENDING_LIMIT = 32
"""SQL-074: ``search_pending`` holds fewer rows than this after every committed write."""


def _index_problems(path: Path | str) -> list[str]:
    """Every event without exactly its index row (SQL-070) or its pending row (SQL-073), and
    every breach of SQL-074, as sentences; [] when all match."""
    connection = sqlite3.connect(path)
    try:
        events = connection.execute(
            "SELECT conversation_id, seq, payload, search_rowid FROM events").fetchall()
        index = {
            int(row[0]): tuple(row[1:]) for row in connection.execute(
                "SELECT rowid, body, scope, conversation_id, seq FROM events_fts")
        }
        has_pending = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'search_pending'").fetchone()
        pending = {
            int(row[0]): (str(row[1]), int(row[2])) for row in connection.execute(
                "SELECT search_rowid, conversation_id, seq FROM search_pending")
        } if has_pending else {}
    finally:
        connection.close()
    problems = []
    if len(pending) >= PENDING_LIMIT:
        problems.append(f"search_pending holds {len(pending)} rows after a commit (SQL-074)")
    newest_indexed: dict[str, int] = {}
    oldest_pending: dict[str, int] = {}
    for conversation_id, seq, payload, rowid in events:
        waiting = pending.pop(int(rowid), None)
        found = index.pop(int(rowid), None)
        if waiting is not None:
            oldest_pending[conversation_id] = min(seq, oldest_pending.get(conversation_id, seq))
            if found is not None:
                problems.append(f"event {conversation_id!r}/{seq} has both an index row and a"
                                " pending row (SQL-073)")
            elif waiting != (conversation_id, seq):
                problems.append(f"the pending row of event {conversation_id!r}/{seq} names "
                                f"{waiting!r} (SQL-073)")
            continue
        newest_indexed[conversation_id] = max(seq, newest_indexed.get(conversation_id, seq))
        text = " ".join(_strings(json.loads(payload)))
        scope = str(conversation_id).encode("utf-8").hex().upper()
        if found is None or (found[0] or "", found[1], found[2], int(found[3])) != (
            text, scope, conversation_id, seq
        ):
            problems.append(f"event {conversation_id!r}/{seq} is indexed as {found!r}, "
                            f"expected {(text, scope, conversation_id, seq)!r}")
    problems.extend(f"index row {rowid} names no event: {row!r}" for rowid, row in index.items())
    problems.extend(f"pending row {rowid} names no event: {row!r} (SQL-073)"
                    for rowid, row in pending.items())
    problems.extend(
        f"conversation {cid!r} has pending seq {seq} below its indexed seq "
        f"{newest_indexed[cid]} (SQL-074)"
        for cid, seq in oldest_pending.items() if newest_indexed.get(cid, 0) > seq
    )
    return problems


def _pending_count(path: Path | str) -> int:
    connection = sqlite3.connect(path)
    try:
        return int(connection.execute("SELECT count(*) FROM search_pending").fetchone()[0])
    finally:
        connection.close()


@check("SQL-070", capability=Capability.MIGRATION, also=(Capability.SEARCH,))
def check_store_writes_each_index_row(ctx: CheckContext) -> None:
    """SQL-070: append, import and a version 1 baseline each leave exactly their index rows."""
    with sqlite_store(ctx, ["SQL-070"]) as store:
        triggers = _triggers(store.path)
        if schema.FTS_INSERT_TRIGGER.name in triggers:
            fail("SQL-070", "a version 3 or 4 file holds the insert trigger of version 2")
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
            if _pending_count(target.path) != 0:
                fail(("SQL-070", "SQL-073"), "an import left its events pending")
            if [hit.seq for hit in target.search("c\x00ü", "after nul")] != [1]:
                fail("SQL-070", "the text after a NUL inside a string is not searchable")
    with workspace(ctx, ["SQL-070"]) as (opener, directory):
        v1 = directory / "v1.sqlite"
        write_v1_database(v1)
        opener(v1).close()
        problems = _index_problems(v1)
        if problems:
            fail("SQL-070", f"after a version 1 migration: {problems[0]}")
        if _pending_count(v1) != 0:
            fail(("SQL-070", "SQL-073"), "a version 1 migration left its baselines pending")


def _triggers(path: Path | str) -> set[str]:
    connection = sqlite3.connect(path)
    try:
        return {str(row[0]) for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    finally:
        connection.close()


@check("SQL-071", "SQL-022", capability=Capability.MIGRATION)
def check_version_3_refuses_the_insert_trigger(ctx: CheckContext) -> None:
    """SQL-071: a version 4 or 3 file holding ``events_fts_after_insert`` is refused and
    named."""
    with workspace(ctx, ["SQL-071", "SQL-022"]) as (opener, directory):
        for number, body in enumerate((schema.FTS_INSERT_TRIGGER.sql,
                                       "CREATE TRIGGER events_fts_after_insert AFTER INSERT ON"
                                       " events BEGIN SELECT 1; END")):
            path = directory / f"v3-trigger-{number}.sqlite"
            opener(path).close()
            execute_raw(path, [body])
            error = refused_unchanged(partial(opener, path), path, "integrity", ["SQL-071"],
                                      "a version 4 file holding events_fts_after_insert")
            if not isinstance(error, Fts5UnknownError) or (
                schema.FTS_INSERT_TRIGGER.name not in error.altered
            ):
                fail("SQL-071", "the refusal does not name events_fts_after_insert")
        path = directory / "v3-trigger.sqlite"  # a version 3 file, refused before it migrates
        write_v3_database(path, _v2_events())
        execute_raw(path, [schema.FTS_INSERT_TRIGGER.sql])
        error = refused_unchanged(partial(opener, path), path, "integrity", ["SQL-071"],
                                  "a version 3 file holding events_fts_after_insert")
        if not isinstance(error, Fts5UnknownError):
            fail("SQL-071", "a version 3 file's insert trigger is refused for another reason")


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


def _migrates_to_version_4(
    ctx: CheckContext, rule: str, version: int, write: Callable[[Path], None],
    expected: Sequence[object],
) -> Path:
    """``rule``: a file of ``version`` (written by ``write``) is refused read-only, survives a
    failure after a step unchanged, then migrates: no event written, every search answered
    as ``expected``, a new event found first, ``schema_version`` 4 (SQL-021, SQL-036)."""
    what = f"a version {version} file"
    with workspace(ctx, (rule, "SQL-021", "SQL-036")) as (opener, directory):
        path = directory / f"v{version}.sqlite"
        write(path)
        refused_unchanged(lambda: opener(path, read_only=True), path, "unavailable",
                          [rule, "SQL-021"], f"a read-only open of {what}")
        before = file_digest(path)

        def fail_at(step: str) -> None:
            raise RuntimeError(f"injected after {step}")

        try:
            opener(path, on_migration_step=fail_at).close()
        except RuntimeError:
            pass
        else:
            fail(rule, f"the migration of {what} reported no step")
        if file_digest(path) != before:
            fail((rule, "SQL-036"), f"a failed migration changed {what}")
        store = opener(path)
        try:
            if store.outcome != "migrated":
                fail(rule, f"{what} was {store.outcome!r}, not migrated")
            if store.head("a") != 3 or store.head("b\x00") != 1:
                fail(rule, "the migration changed the ledger")
            answers = _answers(store, _QUERIES)
            if answers != list(expected):
                fail(rule, f"the migrated file answers {answers!r}, expected {expected!r}")
            store.append("a", [draft("a-4", "fossil after migration")])
            if [hit.seq for hit in store.search("a", "fossil")] != [4, 1]:
                fail(rule, "an event appended after the migration is not found first")
        finally:
            store.close()
        connection = sqlite3.connect(path)
        try:
            found = connection.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        finally:
            connection.close()
        triggers = _triggers(path)
        if found != ("4",) or schema.FTS_INSERT_TRIGGER.name in triggers or (
            schema.PENDING_DELETE_TRIGGER.name not in triggers
        ):
            fail(rule, f"after migrating, version {found!r} with triggers {sorted(triggers)}")
        # a version 2 file's rows keep the text its trigger gave them (cut at a NUL, SQL-072)
        problems = _index_problems(path) if version >= 3 else []
        if problems:
            fail(rule, f"after migrating and appending: {problems[0]}")
        return path


@check("SQL-072", "SQL-021", "SQL-036", capability=Capability.MIGRATION,
       also=(Capability.SEARCH,))
def check_version_2_migrates_to_version_4(ctx: CheckContext) -> None:
    """SQL-072: a version 2 file is refused read-only, survives a failure unchanged, then
    migrates: no event written, the trigger gone, every search answered as before."""
    _migrates_to_version_4(ctx, "SQL-072", 2, lambda path: write_v2_database(
        path, _v2_events()), _EXPECTED)

_PENDING_TEXTS: tuple[JsonValue, ...] = (
    "Köln café naïve", {"z": "zulu", "a": ["ALPHA", "x\x00after nul"]}, "𝔘𝔫𝔦 😀 word",
    "ﬁnance Straße", "plain word",
)
"""Texts whose words depend on the tokenizer: diacritics, case, NUL, astral letters, ligatures."""
_PENDING_QUERIES = ("koln", "cafe", "naive", "alpha", "zulu", "after", "nul", "𝔘𝔫𝔦", "word",
                    "ﬁnance", "straße", "plain word")


def _all_answers(store: object, requesters: tuple[str, ...]) -> list[object]:
    return [_answers(store, tuple((requester, query) for query in _PENDING_QUERIES))
            for requester in requesters]


@check("SQL-073", "SQL-074", "SQL-075", "SRC-004", "SRC-024", capability=Capability.MIGRATION,
       also=(Capability.SEARCH, Capability.PURGE))
def check_pending_events_are_found(ctx: CheckContext) -> None:
    """SQL-073 .. SQL-075: after every append each event has one row, fewer than 32 wait, and a
    search (read-only handle included) finds the pending events exactly as indexed ones,
    newest first, without writing the file; a purge leaves no pending row."""
    ids = ["SQL-073", "SQL-074", "SQL-075", "SRC-004", "SRC-024"]
    with sqlite_store(ctx, ids) as store:
        opener = type(store)
        owners = ("a", "b\x00", "c😀")
        for number in range(2 * PENDING_LIMIT + 3):
            owner = owners[number % 3]
            text = _PENDING_TEXTS[number % len(_PENDING_TEXTS)]
            store.append(owner, [draft(f"p-{number}", text)])
            problems = _index_problems(store.path)
            if problems:
                fail(["SQL-073", "SQL-074"], f"after append {number + 1}: {problems[0]}")
            waiting = _pending_count(store.path)
            newest = [hit.seq for hit in store.search(owner, "word plain", limit=1)]
            if text == "plain word" and newest != [store.head(owner)]:
                fail(["SQL-075", "SRC-004"], f"the event just appended to {owner!r} is not "
                     f"its newest hit ({newest!r}, {waiting} pending)")
            if number in (PENDING_LIMIT - 2, 2 * PENDING_LIMIT + 2):
                _compare_with_indexed(ctx, store, opener, owners, ids)
        store.append("gone", [draft("g-1", "plain word")])
        if _pending_count(store.path) == 0:
            store.append("gone", [draft("g-2", "plain word")])
        store.purge("gone")
        problems = _index_problems(store.path)
        if problems:
            fail("SQL-073", f"after a purge: {problems[0]}")
        if any(hit.conversation_id == "gone" for hit in store.search(
                "a", "plain", limit=100, authorize=lambda _c: True)):
            fail("SRC-004", "a search returned a hit of a purged conversation")


def _compare_with_indexed(
    ctx: CheckContext, store: object, opener: type, owners: tuple[str, ...], ids: list[str]
) -> None:
    """The answers with events pending equal those of an import of the same archives, where
    every event has its index row; a read-only handle answers the same; nothing is written."""
    path = getattr(store, "path")  # noqa: B009 - the SQLite store's file
    if _pending_count(path) == 0:
        # SQL-073 lets a store index at once; then the pending events are made here, as
        # another writer of the file may leave them (its newest events, fewer than 32)
        _make_pending(path, owners[0], 5)
    observer = sqlite3.connect(path)
    try:
        before = observer.execute("PRAGMA data_version").fetchone()
        pending_answers = _all_answers(store, owners)
        reader = opener(path, read_only=True)
        try:
            if _all_answers(reader, owners) != pending_answers:
                fail("SQL-075", "a read-only handle answers otherwise than the writer")
        finally:
            reader.close()
        if observer.execute("PRAGMA data_version").fetchone() != before:
            fail(["SQL-075", "SRC-024"], "a search with pending events committed a write")
    finally:
        observer.close()
    archives = [getattr(store, "export_conversation")(owner) for owner in owners]  # noqa: B009
    with sqlite_store(ctx, ids) as indexed:
        for archive in archives:
            indexed.import_conversation(archive)
        if _pending_count(indexed.path) != 0:
            fail("SQL-073", "an import left pending rows")
        indexed_answers = _all_answers(indexed, owners)
    if pending_answers != indexed_answers:
        fail("SQL-075", f"with events pending the answers are {pending_answers!r}, "
                        f"indexed {indexed_answers!r}")


def _make_pending(path: Path | str, conversation_id: str, count: int) -> None:
    """Give the newest ``count`` events of a conversation pending rows instead of their index
    rows, as a version 4 writer may (SQL-073, SQL-074)."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        newest = connection.execute(
            "SELECT seq, search_rowid FROM events WHERE conversation_id = ?"
            " ORDER BY seq DESC LIMIT ?", (conversation_id, count)).fetchall()
        for seq, rowid in newest:
            connection.execute("DELETE FROM events_fts WHERE rowid = ?", (rowid,))
            connection.execute("INSERT INTO search_pending (search_rowid, conversation_id, seq)"
                               " VALUES (?, ?, ?)", (rowid, conversation_id, seq))
        connection.execute("COMMIT")
    finally:
        connection.close()


@check("SQL-076", "SQL-021", "SQL-036", capability=Capability.MIGRATION,
       also=(Capability.SEARCH,))
def check_version_3_migrates_to_version_4(ctx: CheckContext) -> None:
    """SQL-076: a version 3 file is refused read-only, survives a failure unchanged, then
    migrates: no event written, ``search_pending`` created, every search answered as before
    (version 3 indexed the text after a NUL)."""
    _migrates_to_version_4(ctx, "SQL-076", 3, lambda path: write_v3_database(
        path, _v2_events()), [*_EXPECTED[:3], [("a", 2, STAMP)], _EXPECTED[4]])
