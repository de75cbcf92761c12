"""Capability ``search``: its protocol and abstract base (chapter ``search.md``).

An implementer of capability ``search`` reads :class:`SearchStore` (what a
conformance run calls) and, to build on the reference, :class:`SearchBase`:
it checks the arguments and decides who may see what; the one hook only
finds hits:

===================  ============================================================
hook                 contract
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

import abc
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from convledger import limits
from convledger.capabilities import Capability
from convledger.envelope import check_identifier
from convledger.errors import InvalidInputError
from convledger.search.operations import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Allowed,
    Hit,
    allowed_by,
    check_scope,
)
from convledger.search.query import tokens
from convledger.store_base import StoreBase
from convledger.store_interface import LedgerStore


@runtime_checkable
class SearchStore(LedgerStore, Protocol):
    """Capability ``search``: full-text search, default-denied across conversations (SRC)."""

    def search(
        self,
        requester: str,
        query: str,
        *,
        scope: Sequence[str] | None = None,
        limit: int = ...,
        authorize: Callable[[str], bool] | None = None,
    ) -> tuple[Hit, ...]:
        """The requester's hits first, then only authorized others (SRC-001)."""
        ...


class SearchBase(StoreBase):
    """Argument checks and the default-deny rule of search; the hook finds hits."""

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
        chosen = check_scope(scope)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(
                f"limit must be an integer in 1..{MAX_LIMIT}, got {limits.shown(limit)}",
                requirement="SRC-023",
                field="limit",
            )
        if authorize is not None and not callable(authorize):
            raise InvalidInputError(
                "authorize must be None or a callable", requirement="SRC-011",
                field="authorize",
            )
        # SRC-024: every refusal above comes before the callback; a search writes nothing.
        allowed = allowed_by(authorize, requester)
        return tuple(self._search(requester, words, chosen, limit, allowed))

    @abc.abstractmethod
    def _search(
        self,
        requester: str,
        words: tuple[str, ...],
        scope: tuple[str, ...] | None,
        limit: int,
        allowed: Allowed,
    ) -> list[Hit]: ...
