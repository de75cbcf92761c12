"""An event's text: what the search index holds of it (SQL-008, SQL-070).

The text of an event is the string values of its payload in document order
(the order of the stored canonical JSON), joined by single spaces; member
names, numbers, booleans and nulls are not text. The SQLite store computes it
from the payload value it decoded from the row it stores, so the order is the
stored one (canonical key order, CAN-002) and the walk happens once, in the
process that already holds the value.
"""

from __future__ import annotations

from convledger.canonical import JsonValue


def event_text(payload: JsonValue) -> str:
    """SQL-008: the text of an event with this (decoded, stored-order) payload.

    The string values, in the order of the payload's members and items, collected
    by a plain recursion into one list (a generator per nesting level costs more
    than the walk itself).
    """
    found: list[str] = []
    _collect(payload, found)
    return " ".join(found)


def _collect(value: JsonValue, found: list[str]) -> None:
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for member in value.values():
            _collect(member, found)
    elif isinstance(value, list):
        for item in value:
            _collect(item, found)
