"""An event's text (SQL-008, SQL-070): the Python walk against version 2's ``json_tree`` trigger.

Version 3 writes the text the store joins from the payload value; version 2's
trigger let SQLite join it from the stored JSON. On every payload without a
NUL inside a string they must give the same text, or a migrated file would
index old and new events differently (SQL-072). Past a NUL, SQLite's JSON
functions stop and the Python walk does not (the spec says so).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import json_values
from convledger import canonical, codec
from convledger.canonical import JsonValue
from convledger.search.text import event_text

V2_TEXT = (
    "SELECT group_concat(value, ' ') FROM json_tree(?) WHERE type = 'text'"
)
"""The text expression of version 2's ``events_fts_after_insert`` trigger."""


def strings_of(payload: JsonValue) -> Iterator[str]:
    """The oracle of SQL-008: the string values of a payload, in the order of its members."""
    if isinstance(payload, str):
        yield payload
    elif isinstance(payload, dict):
        for member in payload.values():
            yield from strings_of(member)
    elif isinstance(payload, list):
        for item in payload:
            yield from strings_of(item)


def _has_nul(value: JsonValue) -> bool:
    return any("\x00" in text for text in strings_of(value))


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_text_equals_the_version_2_trigger_text(value: JsonValue) -> None:
    """SQL-070: the text of the stored payload equals what version 2's trigger indexed."""
    stored = canonical.encode(value).decode("utf-8")
    payload = codec.decode_stored(stored)  # the value the store holds: members as stored
    text = event_text(payload)
    assert text == " ".join(strings_of(payload))
    if _has_nul(value):
        return
    connection = sqlite3.connect(":memory:")
    try:
        (expected,) = connection.execute(V2_TEXT, (stored,)).fetchone()
    finally:
        connection.close()
    assert text == (expected or "")


@given(st.text(), st.text())
def test_text_keeps_what_follows_a_nul(before: str, after: str) -> None:
    """SQL-008: version 3 indexes a string whole, past a NUL."""
    value: JsonValue = {"b": f"{before}\x00{after}", "a": [before]}
    assert event_text(codec.decode_stored(canonical.encode(value).decode("utf-8"))) == (
        f"{before} {before}\x00{after}")


def test_member_names_and_other_values_are_not_text() -> None:
    """SQL-008: names, numbers, booleans and nulls are not text; order is the stored one."""
    value: JsonValue = {"zeta": "z", "alpha": [1, 2.5, True, None, "a", {"k": "k"}], "m": {}}
    payload = codec.decode_stored(canonical.encode(value).decode("utf-8"))
    assert event_text(payload) == "a k z"
    assert event_text("only") == "only"
    assert event_text(3) == ""


@pytest.mark.parametrize(("payload", "text"), [
    ({"b": ["x", ""], "a": "y", "c": 1}, "y x "),
    ({"n": 1, "t": True, "z": None, "l": [1.5]}, ""),
    ("alone", "alone"),
    ({"name": "value"}, "value"),
    ({"\U0001f600": "astral", "\uff61": "bmp"}, "astral bmp"),
])
def test_the_spec_examples_of_an_event_text(payload: JsonValue, text: str) -> None:
    """SQL-008's wording: string values only, canonical order (CAN-002: UTF-16 units, so the
    astral name sorts first), empty strings kept, one space between, '' without strings."""
    stored = canonical.decode(canonical.encode(payload))
    assert event_text(stored) == text
