"""Search over the FTS5 index (SQL-065 .. SQL-066; chapter ``search.md``).

The caller (``store.py``) holds one read transaction, so the requester's part
and the others' part see one snapshot. Every statement names the conversation
through the ``scope`` column's token (the hex of the id's UTF-8 bytes), an
FTS5 intersection, and the words through :func:`match_expression`, which
quotes every word (SRC-020). ``events`` is read only by primary key, to give a
hit its ``occurredAt``, and by the key walk of ``rows.NEXT_CONVERSATION``.

Cost tracks the hits returned, not the hits stored
---------------------------------------------------
Within one conversation FTS5 rowids follow seq: every writer of ``events``
(append, transition, import, migration; ``rows.insert_events``) inserts a
conversation's events in seq order, taking the rowids from ``max(rowid) + 1``
of ``events_fts`` up (SQL-067), and rows leave only by a purge of the whole
conversation, so
the conversation's rows still stored are all below that maximum. The newest
``n`` hits of a conversation are therefore its ``n`` greatest matching rowids,
which FTS5 yields in descending rowid order and stops after ``n``; only those
rows are joined and given a snippet (:data:`HITS_OF_ONE`). Its cost follows
the segments of the index, not the events: a few us for a segment of one leaf
page, 15-20 us for one whose doclists span pages (benchmarks/README.md
"Search at 1e5"); the layout is FTS5's own (its default ``automerge``).

Without a scope, the others' part needs the conversations having a hit, in
code-point order. :func:`_with_hits` walks the keys of ``events`` in that
order and probes each conversation with one scoped MATCH (``LIMIT 1``), while
it reads, one keyset chunk of rowids per step, which conversation every hit of
the ledger belongs to; whichever ends first decides the rest. The walk costs the
conversations visited, the read the hits of the ledger, so a search costs
about twice the cheaper of the two, and the callback is asked exactly as
before: about conversations having a hit only, in code-point order, until
the page is full (SRC-011, SRC-012).

The events not indexed yet (version 4, SQL-075)
-----------------------------------------------
Fewer than ``schema.SEARCH_PENDING_LIMIT`` events of the whole file wait in
``search_pending`` for their index row (SQL-073, SQL-074). A search reads
them in its read transaction (:data:`PENDING_KEYS`),
writes their text into the connection's ``TEMP`` FTS5 table
:data:`TAIL_TABLE`, whose ``body`` has the tokenizer of ``events_fts``, and
asks it the same ``body`` expression: every pending event then matches
exactly as its index row will. A conversation's pending events are its newest
(a write that indexes takes every pending event, and rowids follow seq), so
its tail hits come before its indexed ones, and a conversation with a tail
hit has a hit. The temporary table lives as long as the connection and holds
only text of events still pending (:func:`sync_tail`); nothing of the file
is written (SRC-024).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from convledger.search.operations import Allowed, Hit, code_point_key, page_of
from convledger.search.query import fts_string, match_expression, scope_token
from convledger.sqlite import rows

SNIPPET_TOKENS = 16
"""SRC-002: the most words a snippet shows."""

HITS_OF_ONE = (
    "SELECT f.conversation_id, CAST(f.seq AS INTEGER), e.occurred_at,"
    f" snippet(events_fts, 0, '', '', '…', {SNIPPET_TOKENS})"
    " FROM events_fts AS f"
    " CROSS JOIN events AS e ON e.conversation_id = f.conversation_id"
    " AND e.seq = CAST(f.seq AS INTEGER)"
    " WHERE events_fts MATCH ?1 ORDER BY f.rowid DESC LIMIT ?2"
)
"""SQL-066: the newest hits of one conversation (its scope token is part of the MATCH).

FTS5 yields the matches in descending rowid order itself, which is descending
seq within one conversation (module note), so the statement stops after the
``?2`` greatest and only those rows are joined and given a snippet. One MATCH
pass: each segment of the index is entered once, backwards from its end
(``CROSS JOIN`` keeps ``events_fts`` the outer loop). The statement it
replaces took the same rows by a second, forward MATCH from the least of
the ``?2`` greatest rowids up, and cost ~1.3-1.7x as much on a ledger of
1e5 events (benchmarks/README.md "Search at 1e5").
"""

HAS_HIT = "SELECT 1 FROM events_fts WHERE events_fts MATCH ? LIMIT 1"
"""SQL-065: whether one conversation has a hit (its scope token is part of the MATCH)."""

CONVERSATIONS_WITH_HITS = (
    "SELECT rowid, conversation_id FROM events_fts"
    " WHERE events_fts MATCH ? AND rowid > ? ORDER BY rowid LIMIT ?"
)
"""SQL-066: the conversation of each hit of the ledger after a rowid, a keyset chunk at a time,
for a search without a scope."""

CHUNK = 128
"""Rows of :data:`CONVERSATIONS_WITH_HITS` read per conversation the walk visits: about the
cost of one probe of :data:`HAS_HIT` on a ledger whose words have many hits (measured, 2 cores),
so that neither side of the race runs far ahead of the other."""


TAIL_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.convledger_search_tail USING fts5("
    "body, scope, conversation_id UNINDEXED, seq UNINDEXED, "
    "occurred_at UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')"
)
"""SQL-075: the connection's own table of the pending events' text (its name under the
store's prefix ``convledger_``, so it hides no table of the file), with the columns and the
tokenizer of ``events_fts`` (a test holds the two tokenizers equal), so the same MATCH
expressions ask it; rowid the ``search_rowid``."""

PENDING_KEYS = "SELECT search_rowid, conversation_id, seq FROM search_pending"
"""SQL-075: which events wait for their index row (fewer than 32 rows, no read of ``events``)."""
TAIL_KEYS = "SELECT rowid, conversation_id, seq FROM temp.convledger_search_tail"
PENDING_EVENT = (
    "SELECT occurred_at, payload FROM events WHERE conversation_id = ? AND seq = ?"
)
INSERT_TAIL = (
    "INSERT INTO temp.convledger_search_tail"
    " (rowid, body, scope, conversation_id, seq, occurred_at) VALUES (?, ?, ?, ?, ?, ?)"
)
DROP_TAIL = "DELETE FROM temp.convledger_search_tail WHERE rowid = ?"
TAIL_OF_ONE = (
    "SELECT conversation_id, CAST(seq AS INTEGER), occurred_at,"
    f" snippet(convledger_search_tail, 0, '', '', '…', {SNIPPET_TOKENS})"
    " FROM temp.convledger_search_tail WHERE convledger_search_tail MATCH ?1"
    " ORDER BY rowid DESC LIMIT ?2"
)
"""SQL-075: the newest pending hits of one conversation (its scope token is in the MATCH)."""
TAIL_CONVERSATIONS = (
    "SELECT DISTINCT conversation_id FROM temp.convledger_search_tail"
    " WHERE convledger_search_tail MATCH ?"
)
"""SQL-075: the conversations with a pending hit, for a search without a scope."""

Key = tuple[str, int]


def sync_tail(connection: sqlite3.Connection) -> bool:
    """SQL-075: bring the connection's tail table to the pending events of this read
    transaction; whether there is any.

    ``temp.convledger_search_tail`` keeps, between the searches of one connection, the text of
    events it was given, each under its ``search_rowid``, conversation and seq. A
    conversation and seq name one event forever: a stored event never changes (SQL-006),
    leaves only with a purge of its conversation (SQL-056), which then takes no event ever
    again (TRN-092), and a refused batch's rows never commit (LED-004). So a row whose
    three values a pending row still names holds that event's text; the others are
    deleted and the new ones inserted, each payload decoded once per connection instead
    of once per search. Only this connection sees the table, and no answer depends on
    what it held before (SRC-024).
    """
    pending: dict[int, Key] = {
        int(rowid): (str(cid), int(seq))
        for rowid, cid, seq in connection.execute(PENDING_KEYS).fetchall()
    }
    if not pending:
        return False  # rows the table may still hold are dropped by the next sync
    connection.execute(TAIL_TABLE)  # IF NOT EXISTS: created by the connection's first sync
    held = {int(row[0]): (str(row[1]), int(row[2]))
            for row in connection.execute(TAIL_KEYS).fetchall()}
    stale = [(rowid,) for rowid, key in held.items() if pending.get(rowid) != key]
    if stale:
        connection.executemany(DROP_TAIL, stale)
    fresh = [(rowid, key) for rowid, key in pending.items() if held.get(rowid) != key]
    if fresh:
        rows_in: list[tuple[object, ...]] = []
        for rowid, (cid, seq) in fresh:
            found = connection.execute(PENDING_EVENT, (cid, seq)).fetchone()
            if found is None:
                continue  # SQL-075: a pending row naming no event is no event to find
            occurred_at, payload = found
            rows_in.append((rowid, rows.stored_text(payload), scope_token(cid), cid, seq,
                            occurred_at))
        connection.executemany(INSERT_TAIL, rows_in)
    return True


def tail_of(
    connection: sqlite3.Connection, conversation_id: str, words: tuple[str, ...], limit: int
) -> list[Hit]:
    """SQL-075: up to ``limit`` pending hits of one conversation, newest first (after
    :func:`sync_tail`)."""
    found = connection.execute(TAIL_OF_ONE, (_within(conversation_id, words), limit)).fetchall()
    return [Hit(str(cid), int(seq), str(at), str(snippet)) for cid, seq, at, snippet in found]


def tail_conversations(connection: sqlite3.Connection, words: tuple[str, ...]) -> set[str]:
    """SQL-075: the conversations with a pending hit (after :func:`sync_tail`)."""
    found = connection.execute(TAIL_CONVERSATIONS, (match_expression(words),)).fetchall()
    return {str(row[0]) for row in found}


def _within(conversation_id: str, words: tuple[str, ...]) -> str:
    return f"scope : {fts_string(scope_token(conversation_id))} AND {match_expression(words)}"


def hits_of(
    connection: sqlite3.Connection, conversation_id: str, words: tuple[str, ...], limit: int
) -> list[Hit]:
    """SRC-003: up to ``limit`` hits of one conversation, newest first."""
    found = connection.execute(HITS_OF_ONE, (_within(conversation_id, words), limit)).fetchall()
    return [Hit(str(cid), int(seq), str(at), str(snippet)) for cid, seq, at, snippet in found]


def _has_hit(connection: sqlite3.Connection, conversation_id: str, words: tuple[str, ...]) -> bool:
    found = connection.execute(HAS_HIT, (_within(conversation_id, words),)).fetchone()
    return found is not None


def _with_hits(
    connection: sqlite3.Connection, requester: str, words: tuple[str, ...], tail: bool
) -> Iterator[str]:
    """The conversations other than ``requester`` with a hit, in code-point order (module note);
    those with a pending hit (when ``tail``) are known from the start."""
    expression = match_expression(words)
    seen: set[str] = tail_conversations(connection, words) if tail else set()
    last_rowid = 0  # every rowid is at least 1 (rows.INSERT_EVENT)
    position = ""  # no conversation id is empty (ENV-005), so every one follows it
    while True:
        chunk = connection.execute(
            CONVERSATIONS_WITH_HITS, (expression, last_rowid, CHUNK)
        ).fetchall()
        if chunk:
            last_rowid = int(chunk[-1][0])
        seen.update(str(row[1]) for row in chunk)
        if len(chunk) < CHUNK:  # every hit read: the rest is known
            after = code_point_key(position)
            rest = (cid for cid in seen if code_point_key(cid) > after and cid != requester)
            yield from sorted(rest, key=code_point_key)
            return
        found = connection.execute(rows.NEXT_CONVERSATION, (position,)).fetchone()
        if found is None:
            return
        position = str(found[0])
        if position != requester and (position in seen or _has_hit(connection, position, words)):
            yield position


def search(
    connection: sqlite3.Connection,
    requester: str,
    words: tuple[str, ...],
    scope: tuple[str, ...] | None,
    limit: int,
    allowed: Allowed,
) -> list[Hit]:
    """SRC-010 .. SRC-013: own hits first, then authorized others (``page_of``); SQL-075: the
    pending events' hits first within their conversation."""
    tail = sync_tail(connection)

    def newest(conversation_id: str, n: int) -> list[Hit]:
        fresh = tail_of(connection, conversation_id, words, n) if tail else []
        if len(fresh) == n:
            return fresh
        return fresh + hits_of(connection, conversation_id, words, n - len(fresh))

    # _with_hits is a generator: its walk starts only once the own hits leave room.
    candidates = _with_hits(connection, requester, words, tail) if scope is None else iter(scope)
    return page_of(newest, requester, candidates, limit, allowed)
