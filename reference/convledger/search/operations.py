"""The values and argument rules of capability ``search`` (chapter ``search.md``).

:class:`Hit`, the limits (SRC-012, SRC-023), the scope check and the
default-deny rule (:func:`allowed_by`, SRC-010, SRC-011). The protocol and
the abstract base of the capability are in :mod:`convledger.search.store`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs

from convledger.envelope import check_identifier
from convledger.errors import InvalidInputError

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
"""SRC-023: the most hits one search returns."""
MAX_SCOPE = 100
"""SRC-012: the most conversations a scope may name."""

Allowed = Callable[[str], bool]


@attrs.frozen
class Hit:
    """One event whose text matches (SRC-001)."""

    conversation_id: str
    seq: int
    occurred_at: str
    snippet: str


def check_scope(scope: object) -> tuple[str, ...] | None:
    """SRC-012: None, or a sequence of at most :data:`MAX_SCOPE` conversation ids."""
    if scope is None:
        return None
    if isinstance(scope, (str, bytes)) or not isinstance(scope, Sequence):
        raise InvalidInputError(
            "scope is None or a sequence of conversation ids", requirement="SRC-012",
            field="scope",
        )
    if len(scope) > MAX_SCOPE:
        raise InvalidInputError(
            f"a scope names at most {MAX_SCOPE} conversations", requirement="SRC-012",
            field="scope",
        )
    ids = [check_identifier(item, "scope", "SRC-012") for item in scope]
    return tuple(sorted(set(ids), key=lambda cid: cid.encode("utf-8")))


def allowed_by(authorize: Callable[[str], bool] | None, requester: str) -> Allowed:
    """SRC-010, SRC-011: no callback denies every other conversation; only True grants."""
    answers: dict[str, bool] = {}

    def allowed(conversation_id: str) -> bool:
        if conversation_id == requester:
            return False  # the requester's own hits come through the own part only
        if authorize is None:
            return False
        if conversation_id not in answers:
            try:
                answers[conversation_id] = authorize(conversation_id) is True
            except Exception:
                answers[conversation_id] = False  # a failing callback grants nothing
        return answers[conversation_id]

    return allowed


def code_point_key(conversation_id: str) -> bytes:
    """TRN-085: conversation ids order by code points, the order of their UTF-8 bytes."""
    return conversation_id.encode("utf-8")


def page_of(
    hits_of: Callable[[str, int], list[Hit]],
    requester: str,
    candidates: Iterable[str],
    limit: int,
    allowed: Allowed,
) -> list[Hit]:
    """SRC-010 .. SRC-013, engine-neutral: own hits first, then authorized others, ``limit`` in all.

    ``hits_of(conversation_id, n)`` gives up to ``n`` hits of one conversation,
    newest first; ``candidates`` are the other conversations to visit, in
    code-point order (those having a hit, or the scope). A store's search
    supplies both from its own index (SQL-066, PGS-064).
    """
    # SRC-013: the requester's own hits first; others only fill the rest of the page.
    hits = hits_of(requester, limit)
    if len(hits) >= limit:
        return hits
    for conversation_id in candidates:
        # SRC-011: never asked about the requester; a denied conversation adds nothing.
        if conversation_id == requester or not allowed(conversation_id):
            continue
        hits.extend(hits_of(conversation_id, limit - len(hits)))
        if len(hits) >= limit:
            break
    return hits
