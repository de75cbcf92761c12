"""The ``runtime/baseline`` event of a migrated conversation (SQL-031 .. SQL-034).

When a version 1 database migrates, each conversation (each ``heads`` row)
receives exactly one envelope at seq 1 that carries the normalized state it
had at that moment. Its payload, by the registered schema of
``runtime/baseline`` v1::

    {"migratedAt": <migration time>,
     "asOf": <time of the newest message or run>,     (absent when there is none)
     "head": <the head record>,
     "messages": [<message records by position>],
     "runs": [<run records by ordinal, then runId>],
     "admissions": [<admission records by ordinal, then idempotency key>]}

Everything here is pure: the rows come in as a :class:`V1Conversation`, the
payload goes out as a JSON value. Reading the rows is ``migration.py``'s job.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal

import attrs

from convledger.canonical import JsonValue
from convledger.envelope import Envelope, check_identifier, check_occurred_at

BASELINE_KIND = "runtime/baseline"
BASELINE_SCHEMA_VERSION = 1

_INSTANT = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)


@attrs.frozen
class TimedRecord:
    """One runs or messages row: its time column and its decoded record."""

    at: str
    record: JsonValue


@attrs.frozen
class V1Conversation:
    """The normalized state of one conversation in a version 1 database."""

    conversation_id: str
    head: JsonValue
    messages: tuple[TimedRecord, ...]
    runs: tuple[TimedRecord, ...]
    admissions: tuple[JsonValue, ...]


def instant(text: str) -> tuple[int, Decimal]:
    """The point in time an RFC 3339 string names: (whole UTC seconds, fraction).

    Times with different offsets or precisions compare by the instant they
    name, never by their spelling (SQL-034). Raises ``InvalidInputError``
    (ENV-008) for anything that is not an RFC 3339 date-time with an offset.
    """
    check_occurred_at(text)
    match = _INSTANT.fullmatch(text)
    assert match is not None
    year, month, day, hour, minute, second = (int(match[index]) for index in range(1, 7))
    fraction = Decimal("0" + match[7]) if match[7] else Decimal(0)
    offset = 0
    if match[8] is not None:
        offset = (int(match[9]) * 3600 + int(match[10]) * 60) * (1 if match[8] == "+" else -1)
    # RFC 3339 admits year 0000, which ``datetime.date`` does not: count it
    # 400 years (one whole Gregorian cycle of 146097 days) later, then back.
    cycles = 1 if year == 0 else 0
    days = datetime.date(year + 400 * cycles, month, day).toordinal() - 146097 * cycles
    return days * 86400 + hour * 3600 + minute * 60 + second - offset, fraction


def as_of(conversation: V1Conversation) -> str | None:
    """SQL-034: the newest message or run time, by instant; None when there is neither.

    Two spellings of the same instant are ordered by their text, so the choice
    is deterministic.
    """
    times = [item.at for item in conversation.messages + conversation.runs]
    if not times:
        return None
    return max(times, key=lambda text: (instant(text), text))


def baseline_payload(conversation: V1Conversation, migrated_at: str) -> dict[str, JsonValue]:
    """SQL-033: the payload of the conversation's ``runtime/baseline`` event."""
    payload: dict[str, JsonValue] = {
        "migratedAt": migrated_at,
        "head": conversation.head,
        "messages": [item.record for item in conversation.messages],
        "runs": [item.record for item in conversation.runs],
        "admissions": list(conversation.admissions),
    }
    newest = as_of(conversation)
    if newest is not None:
        payload["asOf"] = newest
    return payload


def baseline_event(
    conversation: V1Conversation, *, migrated_at: str, event_id: str
) -> Envelope:
    """SQL-031, SQL-032: the envelope at seq 1, dated at migration time."""
    check_identifier(event_id, "eventId", "ENV-004")
    return Envelope(
        schema_version=BASELINE_SCHEMA_VERSION,
        event_id=event_id,
        conversation_id=conversation.conversation_id,
        seq=1,
        kind=BASELINE_KIND,
        occurred_at=migrated_at,
        payload=baseline_payload(conversation, migrated_at),
    )
