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
    connection: sqlite3.Connection, requester: str, words: tuple[str, ...]
) -> Iterator[str]:
    """The conversations other than ``requester`` with a hit, in code-point order (module note)."""
    expression = match_expression(words)
    seen: set[str] = set()
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
    """SRC-010 .. SRC-013: own hits first, then authorized others (``page_of``)."""
    # _with_hits is a generator: its walk starts only once the own hits leave room.
    candidates = _with_hits(connection, requester, words) if scope is None else iter(scope)
    return page_of(
        lambda conversation_id, n: hits_of(connection, conversation_id, words, n),
        requester, candidates, limit, allowed,
    )
