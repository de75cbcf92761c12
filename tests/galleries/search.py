"""The search gallery: broken SQLite stores of chapter SRC.

Each class has exactly ONE bug a real store could make (one is prior-art bug
10: foreign hits starving the requester's), and is listed in :data:`BROKEN`
with the requirement ids a conformance run must report failed for it. Search
needs FTS5, so every variant is an SQLite store overriding
``SearchBase._search``; the injected query syntax builds its own FTS5
statement, so it runs it in the store's read transaction.
"""

from __future__ import annotations

import threading

from convledger.search.operations import Allowed, Hit
from convledger.search.query import fts_string, scope_token
from convledger.sqlite import SqliteStore
from convledger.sqlite import search as fts
from galleries import BrokenStore, broken
from galleries.sqlite import factory_of


class LeaksAcrossConversations(SqliteStore):
    """SRC-011: treats a missing or denying callback as a grant for every conversation."""

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        return super()._search(requester, words, scope, limit, lambda cid: cid != requester)


class StarvesOwnHits(SqliteStore):
    """SRC-013: ranks foreign hits before the requester's own (prior-art bug 10)."""

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        hits = super()._search(requester, words, scope, 100, allowed)
        own = [hit for hit in hits if hit.conversation_id == requester]
        return ([hit for hit in hits if hit.conversation_id != requester] + own)[:limit]


_RAW = threading.local()


class InjectsQuerySyntax(SqliteStore):
    """SRC-020: passes the user's text to FTS5 as query syntax instead of quoting it."""

    def search(self, requester: str, query: str, **options: object) -> tuple[Hit, ...]:  # type: ignore[override]
        _RAW.query = query
        return super().search(requester, query, **options)  # type: ignore[arg-type]

    def _search(
        self, requester: str, words: tuple[str, ...], scope: tuple[str, ...] | None,
        limit: int, allowed: Allowed,
    ) -> list[Hit]:
        raw = str(getattr(_RAW, "query", " ".join(words)))
        expression = f"scope : {fts_string(scope_token(requester))} AND body : ({raw})"
        try:
            with self._transaction("search", write=False) as connection:
                found = connection.execute(fts.HITS_OF_ONE, (expression, limit)).fetchall()
        except Exception:
            return []
        return [Hit(str(c), int(s), str(a), str(n)) for c, s, a, n in found]


BROKEN: tuple[BrokenStore, ...] = (
    broken("search", LeaksAcrossConversations, "SRC-011",
           factory=factory_of(LeaksAcrossConversations)),
    broken("search", StarvesOwnHits, "SRC-013", factory=factory_of(StarvesOwnHits)),
    broken("search", InjectsQuerySyntax, "SRC-020", factory=factory_of(InjectsQuerySyntax)),
)
"""Every broken store of chapter SRC and the ids its bug must fail."""
