"""The rules of capability ``spills`` that need no store (chapter ``spills.md``).

The authorization recheck (:func:`granted`, SPL-020), the refusal of an
object that is not live (:func:`not_live`), and the append rules that keep
``spill/*`` events to the spill operations (SPL-008) and eventIds unique
(LED-003). The protocol and the abstract base of the capability are in
:mod:`convledger.spills.store`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import EventDraft
from convledger.errors import (
    DuplicateError,
    InvalidInputError,
    NotFoundError,
    UnauthorizedError,
)
from convledger.spills.objects import CREATED, DELETED, Authorize

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


def refuse_live_spill_events(is_live: Callable[[str], bool], drafts: Sequence[EventDraft]) -> None:
    """SPL-008: an append may not name a live object in a ``spill/*`` event.

    ``is_live`` answers whether a reference names a live object of the
    conversation appended to: every store asks its own rows. SPL-058: those rows
    are written by ``put_spill`` and ``delete_spill`` alone; an appended
    ``spill/*`` event of a reference that is not live passes here and is stored as
    data, and no store derives its live objects from the events.
    """
    for draft in drafts:
        payload = draft.payload
        if draft.kind not in (CREATED, DELETED) or not isinstance(payload, dict):
            continue
        reference = payload.get("reference")
        if isinstance(reference, str) and is_live(reference):
            raise InvalidInputError(
                f"{draft.kind} of live spill {reference!r} is written by put_spill and "
                "delete_spill only",
                requirement="SPL-008",
                field="kind",
            )


def refuse_known_event(event_ids: set[str], draft: EventDraft) -> None:
    """LED-003: the eventId of a new event must not be stored anywhere."""
    if draft.event_id in event_ids:
        raise DuplicateError(
            f"eventId {draft.event_id!r} already exists",
            requirement="LED-003",
            identity=draft.event_id,
        )
