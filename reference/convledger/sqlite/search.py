"""Search over the FTS5 index (SQL-065 .. SQL-066; chapter ``search.md``).

The caller (``store.py``) holds one read transaction, so the requester's part
and the others' part see one snapshot. Every statement names the conversation
through the ``scope`` column's token (the hex of the id's UTF-8 bytes), an
FTS5 intersection, and the words through :func:`match_expression`, which
quotes every word (SRC-020). ``events`` is read only by primary key, to give a
hit its ``occurredAt``.
"""

from __future__ import annotations

import sqlite3

from convledger.search.operations import Allowed, Hit, code_point_key
from convledger.search.query import fts_string, match_expression, scope_token

SNIPPET_TOKENS = 16
"""SRC-002: the most words a snippet shows."""

HITS_OF_ONE = (
    "SELECT f.conversation_id, CAST(f.seq AS INTEGER), e.occurred_at,"
    f" snippet(events_fts, 0, '', '', '…', {SNIPPET_TOKENS})"
    " FROM events_fts AS f"
    " JOIN events AS e ON e.conversation_id = f.conversation_id"
    " AND e.seq = CAST(f.seq AS INTEGER)"
    " WHERE events_fts MATCH ? ORDER BY CAST(f.seq AS INTEGER) DESC LIMIT ?"
)
"""SQL-066: the newest hits of one conversation (its scope token is part of the MATCH)."""

CONVERSATIONS_WITH_HITS = "SELECT DISTINCT conversation_id FROM events_fts WHERE events_fts MATCH ?"
"""SQL-066: which conversations have hits, for a search without a scope."""


def _within(conversation_id: str, words: tuple[str, ...]) -> str:
    return f"scope : {fts_string(scope_token(conversation_id))} AND {match_expression(words)}"


def hits_of(
    connection: sqlite3.Connection, conversation_id: str, words: tuple[str, ...], limit: int
) -> list[Hit]:
    """SRC-003: up to ``limit`` hits of one conversation, newest first."""
    found = connection.execute(HITS_OF_ONE, (_within(conversation_id, words), limit)).fetchall()
    return [Hit(str(cid), int(seq), str(at), str(snippet)) for cid, seq, at, snippet in found]


def search(
    connection: sqlite3.Connection,
    requester: str,
    words: tuple[str, ...],
    scope: tuple[str, ...] | None,
    limit: int,
    allowed: Allowed,
) -> list[Hit]:
    """SRC-010 .. SRC-013: own hits first, then authorized others, ``limit`` in all."""
    hits = hits_of(connection, requester, words, limit)
    if len(hits) >= limit:
        return hits
    if scope is None:
        found = connection.execute(CONVERSATIONS_WITH_HITS, (match_expression(words),))
        candidates = sorted({str(row[0]) for row in found.fetchall()}, key=code_point_key)
    else:
        candidates = list(scope)
    for conversation_id in candidates:
        if conversation_id == requester or not allowed(conversation_id):
            continue
        hits.extend(hits_of(connection, conversation_id, words, limit - len(hits)))
        if len(hits) >= limit:
            break
    return hits
