"""The model of chapter SRC: which events a query must find, computed by the check itself.

Events in the checks hold ASCII words only, so case folding is plain
``lower()`` and the model needs no Unicode tokenizer; hostile characters sit
in the queries, where they must act as separators (SRC-020).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from convledger.envelope import Envelope

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The words of a text: runs of letters and digits (SRC-020)."""
    return [word.lower() for word in _WORD.findall(text)]


def event_words(envelope: Envelope) -> set[str]:
    """Every word of the string values of an event's payload (SQL-008)."""
    found: set[str] = set()
    todo: list[object] = [envelope.payload]
    while todo:
        value = todo.pop()
        if isinstance(value, str):
            found.update(words(value))
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return found


def expected_hits(
    ledgers: Mapping[str, Sequence[Envelope]],
    requester: str,
    query: str,
    limit: int,
    allowed: Callable[[str], bool],
    scope: Iterable[str] | None = None,
) -> list[tuple[str, int]]:
    """SRC-003, SRC-010 .. SRC-013: (conversationId, seq) of the hits, in order."""
    wanted = set(words(query))

    def hits_of(cid: str) -> list[tuple[str, int]]:
        found = [e.seq for e in ledgers.get(cid, ()) if wanted <= event_words(e)]
        return [(cid, seq) for seq in sorted(found, reverse=True)]

    result = hits_of(requester)[:limit]
    others = ledgers if scope is None else set(scope)
    for cid in sorted(others, key=lambda c: c.encode("utf-8")):
        if len(result) >= limit:
            break
        if cid != requester and allowed(cid):
            result.extend(hits_of(cid)[: limit - len(result)])
    return result
