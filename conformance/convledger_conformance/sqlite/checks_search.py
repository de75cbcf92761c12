"""Checks of chapter SQL for search (SQL-065) and of SRC-004 on SQLite files.

The statements a handle executes are recorded with SQLite's trace callback
(arguments inlined); every MATCH argument must be built of quoted strings
only. A version 1 database migrates and its baseline must be searchable; a
purged conversation must leave the index.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from pathlib import Path

from convledger.sqlite.fixtures import write_v1_database
from convledger.store import Capability
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.search.checks import pairs, say
from convledger_conformance.sqlite.checks import sqlite_store
from convledger_conformance.support import drafts, fail

_MATCH_ARGUMENT = re.compile(r"MATCH\s+'((?:[^']|'')*)'", re.IGNORECASE)
_LITERAL = re.compile(
    r'^(scope : "[0-9A-F]+" AND )?body : \("(?:[^"]|"")+"( AND "(?:[^"]|"")+")*\)$'
)


@check("SQL-065", "SRC-020", capability=Capability.MIGRATION, also=(Capability.SEARCH,))
def check_sqlite_match_arguments_are_quoted(ctx: CheckContext) -> None:
    """SQL-065: every MATCH the store runs quotes each word and scopes by the scope token."""
    with sqlite_store(ctx, ["SQL-065"]) as store:
        say(store, "me", "near the body", "x")
        say(store, "you", "near body")
        executed: list[str] = []

        def trace(connection: sqlite3.Connection) -> None:
            connection.set_trace_callback(executed.append)

        traced = type(store)(store.path, connection_hook=trace)
        try:
            for query in ('NEAR(body "near")', "body:near*", "near) OR (x", "'near' ^body"):
                traced.search("me", query, authorize=lambda _: True)
        finally:
            traced.close()
        arguments = [m.group(1).replace("''", "'") for sql in executed
                     for m in _MATCH_ARGUMENT.finditer(sql)]
        if not arguments:
            fail("SQL-065", "no MATCH statement was executed")
        for argument in arguments:
            if _LITERAL.fullmatch(argument) is None:
                fail(("SQL-065", "SRC-020"), f"a MATCH argument is not literal: {argument!r}")


@check("SRC-004", capability=Capability.MIGRATION, also=(Capability.SEARCH, Capability.PURGE))
def check_baselines_searchable_purged_gone(ctx: CheckContext) -> None:
    """SRC-004: a migrated conversation's baseline is searchable; a purged one is gone."""
    with sqlite_store(ctx, ["SRC-004"]) as store:
        opener = type(store)
    with tempfile.TemporaryDirectory(prefix="convledger-src-") as directory:
        path = Path(directory) / "v1.db"
        write_v1_database(path)
        migrated = opener(path)
        try:
            hits = migrated.search("c-1", "first")
            if pairs(hits) != [("c-1", 1)]:
                fail("SRC-004", f"the baseline of a migrated conversation answers {pairs(hits)}")
            umlaut = migrated.search("c\x00ü", "grüße")
            if pairs(umlaut) != [("c\x00ü", 1)]:
                fail("SRC-004", f"a baseline with non-ASCII text answers {pairs(umlaut)}")
            say(migrated, "gone", "vanishing words")
            migrated.append("gone", drafts("gone-x", 1))
            migrated.purge("gone")
            for requester, scope in (("gone", None), ("c-1", ["gone"]), ("c-1", None)):
                found = migrated.search(requester, "vanishing", scope=scope,
                                        authorize=lambda _: True)
                if found:
                    fail("SRC-004", f"a purged conversation still answers {pairs(found)}")
        finally:
            migrated.close()


@check("SQL-067", capability=Capability.MIGRATION, also=(Capability.SEARCH,))
def check_search_rowids_follow_seqs(ctx: CheckContext) -> None:
    """SQL-067: each search_rowid exceeds every earlier one, so per conversation they follow seq."""
    with sqlite_store(ctx, ["SQL-067"]) as store:
        for turn in range(3):
            for conversation in ("b", "a\x00", "\u00e9"):
                store.append(conversation, drafts(f"{conversation}-{turn}", 2))
        if Capability.PURGE in store.capabilities:
            store.purge("a\x00")
        store.append("c", drafts("after-purge", 2))
        connection = sqlite3.connect(store.path)
        try:
            rows = connection.execute(
                "SELECT conversation_id, seq, search_rowid FROM events"
            ).fetchall()
            index = [row[0] for row in connection.execute(
                "SELECT rowid FROM events_fts UNION ALL SELECT search_rowid FROM search_pending")]
        finally:
            connection.close()
        if {row[2] for row in rows} != set(index) or len(index) != len(set(index)):
            fail("SQL-067", "events and events_fts with search_pending disagree about the"
                            " search rowids")
        by_conversation: dict[str, list[tuple[int, int]]] = {}
        for conversation, seq, rowid in rows:
            by_conversation.setdefault(conversation, []).append((seq, rowid))
        for conversation, pairs_of in by_conversation.items():
            ordered = [rowid for _, rowid in sorted(pairs_of)]
            if ordered != sorted(ordered) or len(set(ordered)) != len(ordered):
                fail("SQL-067", f"the search rowids of {conversation!r} do not follow its seqs")
        after = [rowid for conversation, _, rowid in rows if conversation == "c"]
        before = [rowid for conversation, _, rowid in rows if conversation != "c"]
        if min(after) <= max(before):
            fail("SQL-067", "an event appended last does not take a rowid above all others")
