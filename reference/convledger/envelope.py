"""The event envelope (chapter ``envelope.md``, ids ENV-*).

An envelope is the unit of the ledger: one fact about one conversation, at one
position (``seq``). On the wire it is a JSON object with exactly these members
(ENV-001), spelled as the prior art spells them so archives interoperate::

    schemaVersion, eventId, conversationId, seq, kind, occurredAt, payload, ignorable

In Python it is the frozen :class:`Envelope`. A producer hands the store an
:class:`EventDraft` (everything but the position); the store assigns
``conversationId`` and ``seq`` (LED-002).

Payloads are JSON values; treat them as immutable once inside an envelope.
Compare envelopes by their canonical bytes, not with ``==`` on payloads:
Python's ``True == 1 == 1.0`` would hide real differences.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from convledger import canonical, codec, limits
from convledger.canonical import JsonValue, NestingTooDeep
from convledger.errors import CanonicalJsonError, InvalidInputError

WIRE_FIELDS = (
    "schemaVersion",
    "eventId",
    "conversationId",
    "seq",
    "kind",
    "occurredAt",
    "payload",
    "ignorable",
)
"""Every member an envelope may have, in the order the spec lists them (ENV-001)."""

REQUIRED_FIELDS = frozenset(WIRE_FIELDS) - {"ignorable"}

# ENV-008: RFC 3339 section 5.6 date-time; the offset is mandatory.
_RFC3339 = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})[Tt]"
    r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})(?:\.\d+)?"
    r"(?:[Zz]|[+-](?P<off_hour>\d{2}):(?P<off_minute>\d{2}))",
    re.ASCII,
)
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@attrs.frozen
class EventDraft:
    """What a producer appends: an envelope without its position (LED-001).

    ``ignorable`` defaults to False, which the wire form expresses by omitting
    the member (ENV-010).
    """

    event_id: str
    kind: str
    occurred_at: str
    payload: JsonValue
    schema_version: int = 1
    ignorable: bool = False


@attrs.frozen
class Envelope:
    """One ledger entry as stored (ENV-001)."""

    schema_version: int
    event_id: str
    conversation_id: str
    seq: int
    kind: str
    occurred_at: str
    payload: JsonValue
    ignorable: bool = False

    def to_wire(self) -> dict[str, JsonValue]:
        """The JSON object of ENV-001; ``ignorable`` appears only when true (ENV-010)."""
        wire: dict[str, JsonValue] = {
            "schemaVersion": self.schema_version,
            "eventId": self.event_id,
            "conversationId": self.conversation_id,
            "seq": self.seq,
            "kind": self.kind,
            "occurredAt": self.occurred_at,
            "payload": self.payload,
        }
        if self.ignorable:
            wire["ignorable"] = True
        return wire

    def canonical_bytes(self) -> bytes:
        """The canonical JSON of :meth:`to_wire` (CAN-001)."""
        return canonical.encode(self.to_wire())

    @classmethod
    def from_draft(cls, draft: EventDraft, conversation_id: str, seq: int) -> Envelope:
        """Place a validated draft at ``seq`` of ``conversation_id``."""
        # the fields in their order (schema_version, event_id, conversation_id, seq, kind,
        # occurred_at, payload, ignorable): by position, ~40 % cheaper than by keyword
        return cls(draft.schema_version, draft.event_id, conversation_id, seq, draft.kind,
                   draft.occurred_at, draft.payload, draft.ignorable)


def from_wire(wire: object) -> Envelope:
    """Validate a decoded JSON value as an envelope (ENV-001 .. ENV-010).

    Raises :class:`InvalidInputError` naming the first offending member.
    """
    return from_wire_encoded(wire)[0]


def from_wire_encoded(wire: object) -> tuple[Envelope, bytes]:
    """:func:`from_wire`, and the canonical bytes of the payload its ENV-009 check encoded."""
    if not isinstance(wire, Mapping):
        raise InvalidInputError("an envelope is a JSON object", requirement="ENV-001")
    unknown = sorted(set(wire) - set(WIRE_FIELDS), key=str)
    if unknown:
        raise InvalidInputError(
            f"unknown envelope members {unknown!r}", requirement="ENV-002", field=str(unknown[0])
        )
    missing = sorted(REQUIRED_FIELDS - set(wire))
    if missing:
        raise InvalidInputError(
            f"missing envelope members {missing!r}", requirement="ENV-001", field=missing[0]
        )
    envelope = Envelope(
        schema_version=wire["schemaVersion"],
        event_id=wire["eventId"],
        conversation_id=wire["conversationId"],
        seq=wire["seq"],
        kind=wire["kind"],
        occurred_at=wire["occurredAt"],
        payload=wire["payload"],
        ignorable=_wire_ignorable(wire),
    )
    # validate_envelope's checks in its order, then LIM-005 (an imported event too); the
    # payload's two walks (ENV-009's encoding, LIM-005's depth) are one when it passes both.
    validate_draft_fields(_draft_of(envelope))
    encoded = _encoded_or_refused(envelope.payload)
    check_identifier(envelope.conversation_id, "conversationId", "ENV-005")
    check_positive_integer(envelope.seq, "seq", "ENV-006")
    if encoded is None:
        raise limits.too_deep("payload")
    return envelope, encoded


def _encoded_or_refused(payload: object) -> bytes | None:
    """The canonical bytes of ``payload``; None when it nests deeper than LIM-005 allows;
    ENV-009's refusal raised.

    One walk of the encoder that stops at the depth limit; only a payload that
    reaches the limit is encoded again in full, to learn whether ENV-009 (reported
    first, as :func:`validate_draft` orders it) refuses it too.
    """
    try:
        return codec.encode_payload(payload)
    except NestingTooDeep:
        pass
    except CanonicalJsonError as error:
        raise _not_canonical(error) from error
    try:
        codec.encode(payload)
    except CanonicalJsonError as error:
        raise _not_canonical(error) from error
    return None


def _wire_ignorable(wire: Mapping[str, object]) -> bool:
    if "ignorable" not in wire:
        return False
    if wire["ignorable"] is True:
        return True
    raise InvalidInputError(
        "ignorable must be the literal true or absent", requirement="ENV-010", field="ignorable"
    )


def validate_envelope(envelope: Envelope) -> None:
    """Check every member of a constructed envelope (ENV-003 .. ENV-010)."""
    validate_draft(_draft_of(envelope))
    check_identifier(envelope.conversation_id, "conversationId", "ENV-005")
    check_positive_integer(envelope.seq, "seq", "ENV-006")


def _draft_of(envelope: Envelope) -> EventDraft:
    return EventDraft(
        event_id=envelope.event_id,
        kind=envelope.kind,
        occurred_at=envelope.occurred_at,
        payload=envelope.payload,
        schema_version=envelope.schema_version,
        ignorable=envelope.ignorable,
    )


def validate_draft(draft: object) -> EventDraft:
    """Check a draft before the store places it (ENV-003, ENV-004, ENV-007 .. ENV-010)."""
    checked = validate_draft_fields(draft)
    try:
        codec.encode(checked.payload)
    except CanonicalJsonError as error:
        raise _not_canonical(error) from error
    return checked


def _not_canonical(error: CanonicalJsonError) -> InvalidInputError:
    return InvalidInputError(
        f"payload is not canonical JSON: {error.message}", requirement="ENV-009", field="payload"
    )


def validate_draft_fields(draft: object) -> EventDraft:
    """Every check of :func:`validate_draft` except the payload's (ENV-009).

    For callers that encode the payload anyway (the append path) and so learn
    whether it is canonical JSON without a second encoding.
    """
    if not isinstance(draft, EventDraft):
        raise InvalidInputError(
            f"expected an EventDraft, got {type(draft).__name__}", requirement="LED-001"
        )
    check_positive_integer(draft.schema_version, "schemaVersion", "ENV-003")
    check_identifier(draft.event_id, "eventId", "ENV-004")
    check_identifier(draft.kind, "kind", "ENV-007")
    check_occurred_at(draft.occurred_at)
    # ENV-012: a draft's ignorable is a boolean; false is allowed here and stored as absent.
    if draft.ignorable is not True and draft.ignorable is not False:
        raise InvalidInputError(
            "a draft's ignorable must be a bool", requirement="ENV-012", field="ignorable"
        )
    return draft


def check_identifier(value: object, field: str, requirement: str) -> str:
    """ENV-004/005/007: a non-empty string of Unicode scalar values (NUL and '/' allowed, LIM-003).

    At most LIM-001's bytes of UTF-8 (:func:`convledger.limits.check_text`).
    """
    return limits.check_text(value, field, requirement)


def check_positive_integer(value: object, field: str, requirement: str) -> int:
    """ENV-003/006: an integer in 1 .. 2**53 - 1 (booleans are not integers).

    CAN-017: a float is refused whatever its value, 1.0 included: these members
    are integers of the carrier, not JSON numbers.
    """
    return limits.check_integer(value, field, requirement, minimum=1)


def check_occurred_at(value: object) -> str:
    """ENV-008: an RFC 3339 date-time with an offset; the string itself is what is kept."""
    # LIM-008: at most 64 characters, checked before the pattern so no huge string is scanned.
    short = isinstance(value, str) and len(value) <= limits.MAX_OCCURRED_AT_BYTES
    match = _RFC3339.fullmatch(value) if short and isinstance(value, str) else None
    if match is None or not _valid_fields(match):
        raise InvalidInputError(
            f"occurredAt must be an RFC 3339 date-time with an offset, got {limits.shown(value)}",
            requirement="ENV-008",
            field="occurredAt",
        )
    return value  # type: ignore[return-value]


def _valid_fields(match: re.Match[str]) -> bool:
    """ENV-013: each field of the date-time within RFC 3339 section 5.7's range."""
    # The groups in pattern order: year, month, day, hour, minute, second, offset hour, minute.
    year, month, day, hour, minute, second, off_hour, off_minute = match.groups()
    month_number, day_number = int(month), int(day)
    if not 1 <= month_number <= 12 or not 1 <= day_number <= _DAYS_IN_MONTH[month_number - 1]:
        return False
    if month_number == 2 and day_number == 29 and not _leap(int(year)):
        return False
    # LIM-009: a leap second (60) is valid in any minute; 61 and above are not
    if hour > "23" or minute > "59" or second > "60":  # two ASCII digits each: text order
        return False
    return off_hour is None or (off_hour <= "23" and off_minute <= "59")


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def copied(envelope: Envelope) -> Envelope:
    """LED-014: the same envelope with a payload that shares no list or dict with the original."""
    return Envelope(
        schema_version=envelope.schema_version,
        event_id=envelope.event_id,
        conversation_id=envelope.conversation_id,
        seq=envelope.seq,
        kind=envelope.kind,
        occurred_at=envelope.occurred_at,
        payload=_copied_payload(envelope.payload),
        ignorable=envelope.ignorable,
    )


def _copied_payload(payload: JsonValue) -> JsonValue:
    """A copy of a decoded payload that shares no list or dict with it (LED-014).

    It uses a work list of (original, copy) pairs instead of recursion, so it
    copies any depth the decoder accepted.
    """
    todo: list[tuple[_Container, _Container]] = []
    root = _fresh(payload, todo)
    while todo:
        source, target = todo.pop()
        if isinstance(source, dict) and isinstance(target, dict):
            for key, item in source.items():
                target[key] = _fresh(item, todo)
        elif isinstance(source, list) and isinstance(target, list):
            target.extend(_fresh(item, todo) for item in source)
    return root


_Container = dict[str, JsonValue] | list[JsonValue]


def _fresh(value: JsonValue, todo: list[tuple[_Container, _Container]]) -> JsonValue:
    """``value`` itself when immutable, else an empty container queued to be filled."""
    if isinstance(value, dict):
        copied: _Container = {}
    elif isinstance(value, list):
        copied = []
    else:
        return value  # str, int, float, bool and None are immutable
    todo.append((value, copied))
    return copied
