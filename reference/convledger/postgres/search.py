"""Search on PostgreSQL full-text search: ``tsvector`` and a GIN index (PGS-062 .. PGS-066).

The words are cut by the reference, not by the server
------------------------------------------------------
PostgreSQL's text-search parser knows e-mail addresses, URLs, hyphenated
words and numbers with dots, and what it calls a letter depends on the
database's locale; chapter SRC wants the runs of Unicode letters and digits,
whatever the server. So the store cuts an event's text into words itself
(:func:`lexemes`, the same rule as the query's, :func:`convledger.search.query.tokens`;
the rule is :mod:`convledger.words`), folds them (:func:`~convledger.words.fold`) and
stores them with ``array_to_tsvector``, which takes lexemes as they are; a query is
written as a ``tsquery`` of quoted lexemes joined by ``&`` (:func:`tsquery_of`), so no
user character reaches the tsquery parser as an operator (SRC-020). The server only
splits, stores and intersects lexemes: a write sends each event's lexemes as one text,
joined by :data:`~convledger.words.SEPARATOR` (``\\x01``, which no lexeme holds), and the
statement splits it there (``string_to_array``), drops the empty pieces and lets
``array_to_tsvector`` drop the repeated ones (:data:`INSERT_WORDS`).

Each event's row of ``search_words`` also holds the lexeme of its
conversation (:func:`scope_lexeme`), and a search of one conversation adds it
to the query: GIN intersects the conversation's posting list with those of
the words, as the SQLite store's ``scope`` token does in FTS5. A word longer
than :data:`~convledger.words.LONG_WORD` bytes is stored as the lexeme of its digest (a lexeme
holds at most 2047 bytes), in the event and in the query alike.

Cost
----
The hits of one conversation are read by one GIN bitmap scan of the
intersection; only the newest ``limit`` of them are joined to ``events`` by
primary key. Without a scope, the conversations having a hit are read by one
GIN bitmap scan of the words (PGS-065): a search costs the hits of its words
in the ledger, not the events stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from convledger import codec
from convledger.canonical import JsonValue
from convledger.envelope import Envelope
from convledger.postgres.rows import key, text_of
from convledger.search.operations import Allowed, Hit, page_of
from convledger.words import SEPARATOR, WORD, fold, folded_words

if TYPE_CHECKING:
    from convledger.postgres.driver import Connection

SNIPPET_WORDS = 16
"""SRC-002: the most words a snippet shows."""

INSERT_WORDS = (
    "INSERT INTO search_words (conversation_id, seq, words)"
    " SELECT %s::bytea, seq,"
    f" array_to_tsvector(array_remove(string_to_array(lexemes, chr({ord(SEPARATOR)})), ''))"
    " FROM unnest(%b::bigint[], %b::text[]) AS word(seq, lexemes)"
)
"""PGS-062: the lexemes of a write's events, in one statement of the transaction that writes
them: one array of seqs and one of texts, a text per event holding its lexemes joined by
:data:`~convledger.words.SEPARATOR` (:func:`lexeme_text`), split into one row per seq."""

HIT_SEQS = (
    "WITH matched AS MATERIALIZED ("
    "SELECT conversation_id, seq FROM search_words WHERE words @@ %(query)s::tsquery)"
    " SELECT seq FROM matched WHERE conversation_id = %(conversation)s"
    " ORDER BY seq DESC LIMIT %(limit)s"
)
"""PGS-064: the newest seqs of one conversation's hits (its lexeme is part of the query)."""

HIT_EVENTS = (
    "SELECT seq, occurred_at, payload FROM events"
    " WHERE conversation_id = %s AND seq = ANY(%s) ORDER BY seq DESC"
)
"""PGS-064: the hits' events, by primary key."""

CONVERSATIONS_WITH_HITS = (
    "WITH matched AS MATERIALIZED ("
    "SELECT conversation_id FROM search_words WHERE words @@ %(query)s::tsquery)"
    " SELECT DISTINCT conversation_id FROM matched ORDER BY conversation_id"
)
"""PGS-065: every conversation with a hit, in byte order of its id (code-point order)."""

NO_SEQUENTIAL_SCAN = "SET LOCAL enable_seqscan = off"
"""PGS-064: a search's snapshot plans by its indexes, whatever the statistics say (a small or
freshly written table would otherwise be scanned)."""

SEARCH_READS = {
    "hit_seqs": HIT_SEQS,
    "conversations_with_hits": CONVERSATIONS_WITH_HITS,
}
"""The reads of the search words, by purpose (PGS-030: a GIN index scan each)."""


def scope_lexeme(conversation_id: str) -> str:
    """PGS-062: the lexeme naming a conversation (no word holds ``:``)."""
    return "c:" + hashlib.sha256(key(conversation_id)).hexdigest()


def _strings(payload: JsonValue) -> Iterator[str]:
    """SQL-008: the string values of a payload, in document order."""
    if isinstance(payload, str):
        yield payload
    elif isinstance(payload, dict):
        for value in payload.values():
            yield from _strings(value)
    elif isinstance(payload, list):
        for value in payload:
            yield from _strings(value)


_SCALARS = frozenset({int, float, bool, type(None)})
"""The exact types of the other JSON values a decoder yields: they hold no string."""


def _strings_into(values: Iterable[JsonValue], keep: Callable[[str], None]) -> None:
    """SQL-008: ``keep`` each string value of ``values``, those of its arrays and objects too.

    The values of the exact types a decoder yields are told apart by their type; any other
    (a subclass) by ``isinstance``, as :func:`_strings` does. One call per array or object
    (at most LIM-005's 128 levels deep), one test per value.
    """
    for value in values:
        kind = type(value)
        if kind is str:
            keep(value)  # type: ignore[arg-type]
        elif kind is dict:
            _strings_into(value.values(), keep)  # type: ignore[union-attr]
        elif kind is list:
            _strings_into(value, keep)  # type: ignore[arg-type]
        elif kind in _SCALARS:
            continue
        elif isinstance(value, str):
            keep(value)
        elif isinstance(value, dict):
            _strings_into(value.values(), keep)
        elif isinstance(value, list):
            _strings_into(value, keep)


def _all_strings(payload: JsonValue) -> list[str]:
    """SQL-008: the string values of a payload, in document order (:func:`_strings`, without
    a generator per array or object)."""
    found: list[str] = []
    _strings_into((payload,), found.append)
    return found


def text_words(payload: JsonValue) -> list[str]:
    """The words of an event's text, as written (for snippets)."""
    return [word for text in _strings(payload) for word in WORD.findall(text)]


def lexemes(envelope: Envelope) -> list[str]:
    """PGS-062: the distinct folded words of the event's text and its conversation's lexeme.

    The definition, by the clear rule (:func:`convledger.words.folded_words` of the string
    values in document order); the write path sends the same set as :func:`lexeme_text`.
    """
    found = folded_words(_strings(envelope.payload))
    found.add(scope_lexeme(envelope.conversation_id))
    return list(found)


def lexeme_text(payload: JsonValue, scope: str) -> str:
    """PGS-062: the lexemes of a payload's text and ``scope``, joined by ``SEPARATOR``.

    Split at :data:`~convledger.words.SEPARATOR`, without the empty pieces, the text holds
    exactly the lexemes :func:`lexemes` gives (some maybe twice): what :data:`INSERT_WORDS`
    stores for the event.
    """
    # PGS-063: the clear rule is convledger.words.joined_words; the seam may bind a fast cutter
    # the words of a set: the order of the strings does not matter
    return codec.joined_words(_all_strings(payload)) + SEPARATOR + scope


def insert_words(connection: Connection, envelopes: Iterable[Envelope]) -> None:
    """PGS-062: one row of ``search_words`` per event, in the caller's transaction."""
    for parameters in words_parameters(envelopes):
        connection.execute(INSERT_WORDS, parameters)


def words_parameters(envelopes: Iterable[Envelope]) -> list[tuple[bytes, list[int], list[str]]]:
    """The parameters of :data:`INSERT_WORDS` for ``envelopes``: one tuple per conversation.

    The conversation's lexeme is computed once per conversation of the write, not per event;
    each event's lexemes travel as one text, :func:`lexeme_text`'s: its strings are cut with
    those of the conversation's other events of the write (``codec.joined_words_each``).
    """
    by_conversation: dict[str, tuple[str, list[int], list[list[str]]]] = {}
    for envelope in envelopes:
        entry = by_conversation.get(envelope.conversation_id)
        if entry is None:
            entry = (scope_lexeme(envelope.conversation_id), [], [])
            by_conversation[envelope.conversation_id] = entry
        _, seqs, strings = entry
        seqs.append(envelope.seq)
        strings.append(_all_strings(envelope.payload))
    found: list[tuple[bytes, list[int], list[str]]] = []
    for conversation_id, (scope, seqs, strings) in by_conversation.items():
        tail = SEPARATOR + scope  # PGS-063: the clear rule is convledger.words.joined_words
        texts = [text + tail for text in codec.joined_words_each(strings)]
        found.append((key(conversation_id), seqs, texts))
    return found


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_of(words: tuple[str, ...], conversation_id: str | None = None) -> str:
    """SRC-020: every word as a quoted lexeme, joined by ``&``; never tsquery syntax."""
    wanted = sorted({fold(word) for word in words})
    if conversation_id is not None:
        wanted.append(scope_lexeme(conversation_id))
    return " & ".join(_quoted(lexeme) for lexeme in wanted)


def _snippet(payload: JsonValue, words: tuple[str, ...]) -> str:
    """SRC-002: up to :data:`SNIPPET_WORDS` words of the text, from a little before a hit."""
    found = text_words(payload)
    wanted = {fold(word) for word in words}
    first = next((i for i, word in enumerate(found) if fold(word) in wanted), 0)
    start = max(0, first - 4)
    return " ".join(found[start:start + SNIPPET_WORDS])


def hits_of(
    connection: Connection, conversation_id: str, words: tuple[str, ...], limit: int
) -> list[Hit]:
    """SRC-003: up to ``limit`` hits of one conversation, newest first."""
    seqs = [int(row[0]) for row in connection.execute(
        HIT_SEQS,
        {"query": tsquery_of(words, conversation_id), "conversation": key(conversation_id),
         "limit": limit},
    )]
    if not seqs:
        return []
    found = connection.execute(HIT_EVENTS, (key(conversation_id), seqs)).fetchall()
    return [
        Hit(conversation_id, int(seq), str(at),
            _snippet(codec.decode_stored(str(payload)), words))
        for seq, at, payload in found
    ]


def conversations_with_hits(connection: Connection, words: tuple[str, ...]) -> list[str]:
    """PGS-065: the conversations having a hit of every word, in code-point order."""
    found = connection.execute(CONVERSATIONS_WITH_HITS, {"query": tsquery_of(words)})
    return [text_of(row[0]) for row in found]


def search(
    connection: Connection,
    requester: str,
    words: tuple[str, ...],
    scope: tuple[str, ...] | None,
    limit: int,
    allowed: Allowed,
) -> list[Hit]:
    """SRC-010 .. SRC-013: own hits first, then authorized others (``page_of``)."""
    connection.execute(NO_SEQUENTIAL_SCAN)

    def candidates() -> Iterator[str]:
        # PGS-065: read only once the requester's hits leave room on the page
        yield from conversations_with_hits(connection, words) if scope is None else scope

    return page_of(
        lambda conversation_id, n: hits_of(connection, conversation_id, words, n),
        requester, candidates(), limit, allowed,
    )
