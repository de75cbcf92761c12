"""User text to a literal FTS5 query (SRC-020 .. SRC-023).

A caller's query is text, never query syntax: :func:`tokens` cuts it into
words (runs of Unicode letters and digits; everything else separates, as
FTS5's ``unicode61`` tokenizer does), and :func:`match_expression` writes
each word as an FTS5 string (double-quoted, inner quotes doubled), joined by
``AND``. Quotes, ``NEAR``, ``column:`` filters, ``*``, ``^``, ``+`` and
parentheses in the user's text therefore only ever separate words or are
words themselves; no user character reaches the FTS5 parser as an operator.
"""

from __future__ import annotations

import re

from convledger.errors import InvalidInputError

MAX_QUERY_CHARS = 1000
"""SRC-022: the longest query, in characters."""
MAX_QUERY_TOKENS = 32
"""SRC-022: the most words a query may have."""

_WORD = re.compile(r"[^\W_]+")


def tokens(query: object) -> tuple[str, ...]:
    """SRC-020 .. SRC-022: the words of ``query``; empty, symbol-only or too long is refused."""
    if not isinstance(query, str):
        raise InvalidInputError("query must be a string", requirement="SRC-022", field="query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"a query has at most {MAX_QUERY_CHARS} characters", requirement="SRC-022",
            field="query",
        )
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            "query contains a lone surrogate", requirement="SRC-022", field="query"
        ) from None
    words = tuple(_WORD.findall(query))
    if not words:
        raise InvalidInputError(
            "a query needs at least one letter or digit", requirement="SRC-021", field="query"
        )
    if len(words) > MAX_QUERY_TOKENS:
        raise InvalidInputError(
            f"a query has at most {MAX_QUERY_TOKENS} words", requirement="SRC-022",
            field="query",
        )
    return words


def fts_string(text: str) -> str:
    """An FTS5 string literal: the text in double quotes, inner quotes doubled (SRC-020)."""
    return '"' + text.replace('"', '""') + '"'


def match_expression(words: tuple[str, ...]) -> str:
    """SRC-020: every word must occur in the event's text (``body``), in any order.

    SRC-025: each word as an FTS5 string, matched by the ``unicode61`` tokenizer's folding
    alone (no stemming tokenizer such as ``porter`` is configured, SQL-065).
    """
    return "body : (" + " AND ".join(fts_string(word) for word in words) + ")"


def scope_token(conversation_id: str) -> str:
    """The ``scope`` token of a conversation: the hex of its UTF-8 bytes (SQL-008 layout)."""
    return conversation_id.encode("utf-8").hex().upper()
