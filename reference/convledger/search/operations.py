"""The store operation of capability ``search`` (chapter ``search.md``).

:class:`SearchOperations` is mixed into :class:`convledger.store.StoreBase`.
It checks the arguments and decides who may see what; the store's one
primitive only finds hits:

===================  ============================================================
primitive            contract
===================  ============================================================
``_search``          in ONE read snapshot: up to ``limit`` hits of the requester,
                     newest first; then, while fewer than ``limit`` were found,
                     the hits of the other conversations (those of ``scope``, or
                     every one when ``scope`` is None) in code-point order of
                     their ids, newest first in each, asking ``allowed(id)``
                     before reading a conversation and skipping it unless
                     allowed (SRC-010 .. SRC-013)
===================  ============================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from convledger.capabilities import Capability
from convledger.envelope import check_identifier
from convledger.errors import InvalidInputError
from convledger.search.query import tokens

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


class SearchOperations:
    """Argument checks and the default-deny rule of search."""

    if TYPE_CHECKING:

        def _require(self, capability: Capability, operation: str) -> None: ...

    def search(
        self,
        requester: str,
        query: str,
        *,
        scope: Sequence[str] | None = None,
        limit: int = DEFAULT_LIMIT,
        authorize: Callable[[str], bool] | None = None,
    ) -> tuple[Hit, ...]:
        """SRC-001 .. SRC-023: the requester's hits first, then only authorized others."""
        self._require(Capability.SEARCH, "search")
        check_identifier(requester, "requester", "SRC-001")
        words = tokens(query)
        chosen = _check_scope(scope)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(
                f"limit must be an integer in 1..{MAX_LIMIT}, got {limit!r}",
                requirement="SRC-023",
                field="limit",
            )
        if authorize is not None and not callable(authorize):
            raise InvalidInputError(
                "authorize must be None or a callable", requirement="SRC-011",
                field="authorize",
            )
        # SRC-024: every refusal above comes before the callback; a search writes nothing.
        allowed = _allowed(authorize, requester)
        return tuple(self._search(requester, words, chosen, limit, allowed))

    def _search(
        self,
        requester: str,
        words: tuple[str, ...],
        scope: tuple[str, ...] | None,
        limit: int,
        allowed: Allowed,
    ) -> list[Hit]:
        raise NotImplementedError


def _check_scope(scope: object) -> tuple[str, ...] | None:
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


def _allowed(authorize: Callable[[str], bool] | None, requester: str) -> Allowed:
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
