"""The store operations of capability ``spills`` (chapter ``spills.md``).

:class:`SpillOperations` is mixed into :class:`convledger.store.StoreBase`.
It checks the arguments (SPL-001 .. SPL-006), builds the ledger event, asks
the authorization callback on every read (SPL-020) and checks the bytes it
returns against their sha256 (SPL-022). The primitives:

=================  ==============================================================
primitive          contract
=================  ==============================================================
``_put_spill``     in ONE atomic step: refuse a purged conversation, refuse a
                   live reference (``duplicate``), append the ``spill/created``
                   event (eventId unique) and store the object with its seq
``_get_spill``     the metadata and the bytes of a live object of THIS
                   conversation, or None
``_delete_spill``  in ONE atomic step: refuse a purged conversation, find the
                   live object (else ``not_found``), append the event the
                   given function builds from its size, delete the object
=================  ==============================================================
"""

from __future__ import annotations

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import NotFoundError, UnauthorizedError
from convledger.spills.objects import (
    Authorize,
)

SPILL_SCHEMA_VERSION = 1


def granted(authorize: Authorize, descriptor: JsonValue) -> None:
    """SPL-020: only the literal True grants; a denial or a raising callback is unauthorized.

    The callback receives a copy of the descriptor, so it cannot change what
    the store keeps.
    """
    copy = canonical.decode(canonical.encode(descriptor))
    try:
        answer = authorize(copy)  # type: ignore[arg-type]
    except Exception as error:
        raise UnauthorizedError(
            f"the authorization callback raised {error!r}", requirement="SPL-020"
        ) from error
    if answer is not True:
        raise UnauthorizedError(
            "the authorization callback denied the spill", requirement="SPL-020"
        )


def not_live(conversation_id: str, reference: str) -> NotFoundError:
    """SPL-021, SPL-031: no live object of that reference in that conversation."""
    return NotFoundError(
        f"no spill {reference!r} in conversation {conversation_id!r}", requirement="SPL-021"
    )
