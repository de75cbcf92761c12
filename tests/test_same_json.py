"""The machines' shortcut to canonical equality answers what the encoder answers (issue 34).

``convledger_conformance.same_json.same_value`` may say ``True`` only for two values whose
canonical bytes are equal and that both encode without error; ``canonically_equal`` and
``envelopes_match`` must give exactly the comparison of the bytes, refusals included. The
values are generated to be near each other (one is a variation of the other): the same value,
the same value rebuilt, a scalar changed for one that Python calls equal (``True`` and ``1``,
``1`` and ``1.0``, ``0.0`` and ``-0.0``), a tuple for a list, a key or element added, and values
the encoder refuses (lone surrogates, integers past 2**53 - 1, non-finite floats, non-string
keys, sets, structures containing themselves).
"""

from __future__ import annotations

import copy
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from convledger import canonical
from convledger.envelope import Envelope
from convledger.errors import CanonicalJsonError
from convledger_conformance.ledger.model import envelope_bytes
from convledger_conformance.same_json import (
    canonically_equal,
    envelope_matches,
    envelopes_match,
    same_value,
)

EXAMPLES = max(500, settings().max_examples)
properties = settings(max_examples=EXAMPLES, deadline=None)

SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.sampled_from([0, 1, -1, 2**53 - 1, 2**53, -(2**53), 1.0, 0.0, -0.0, True, False]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.sampled_from(["\ud800", "a\udfff", "é", "😀"]),
)
KEYS: st.SearchStrategy[Any] = st.text(max_size=3) | st.sampled_from(["\ud800", 1, 1.0, True])
VALUES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3)
    | st.lists(children, max_size=3).map(tuple)
    | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=10,
)
LOOKALIKE: dict[str, Any] = {"True": 1, "1": 1.0, "1.0": True, "0": False, "False": 0.0,
                             "0.0": -0.0, "-0.0": 0}
"""A scalar Python calls equal to another, by the other's repr."""


def _outcome(value: object) -> bytes | tuple[str, str | None]:
    try:
        return canonical.encode(value)
    except CanonicalJsonError as error:
        return ("refused", error.requirement)


def _vary(value: Any, how: int) -> Any:
    """A variation of ``value``: rebuilt (0), a look-alike scalar (1), a tuple (2), more (3)."""
    if how == 0:
        return copy.deepcopy(value)
    if isinstance(value, dict):
        if how == 3:
            return {**value, "extra": None}
        return {key: _vary(member, how) for key, member in value.items()}
    if isinstance(value, (list, tuple)):
        if how == 2:
            return tuple(value) if isinstance(value, list) else list(value)
        if how == 3:
            return [*value, None]
        return type(value)(_vary(member, how) for member in value)
    if how == 1 and type(value) in (bool, int, float) and repr(value) in LOOKALIKE:
        return LOOKALIKE[repr(value)]
    return value


@properties
@given(VALUES, st.integers(0, 3))
def test_canonically_equal_is_the_comparison_of_the_bytes(value: Any, how: int) -> None:
    other = _vary(value, how)
    first, second = _outcome(value), _outcome(other)
    if isinstance(first, bytes) and isinstance(second, bytes):
        assert canonically_equal(value, other) == (first == second)
    else:  # the encoder refuses one of them: so does the comparison, unless they are the same
        assert not same_value(value, other)
        try:
            canonically_equal(value, other)
        except CanonicalJsonError:
            pass
        else:
            raise AssertionError("a value the encoder refuses was compared")
    if same_value(value, other):
        assert isinstance(first, bytes) and first == second


@properties
@given(VALUES)
def test_a_value_is_the_same_as_its_copy_exactly_when_it_encodes(value: Any) -> None:
    """Every value the encoder accepts takes the shortcut; none it refuses does."""
    assert same_value(value, copy.deepcopy(value)) == isinstance(_outcome(value), bytes)


def test_look_alikes_are_not_the_same() -> None:
    assert not same_value(True, 1)
    assert not same_value(1, 1.0)
    assert not same_value([1], (1,))
    assert not same_value({"a": 1}, {"a": True})
    assert canonically_equal(1, 1.0)  # both encode as 1
    assert canonically_equal(0.0, -0.0)
    assert not canonically_equal(True, 1)
    assert not same_value(2**53, 2**53)
    assert not same_value("\ud800", "\ud800")
    assert not same_value({1: "a"}, {1: "a"})
    assert not same_value(float("inf"), float("inf"))
    looped: list[object] = []
    looped.append(looped)
    assert not same_value(looped, looped)


ENVELOPE = Envelope(
    event_id="e", conversation_id="c", seq=1, kind="state/set", schema_version=1,
    occurred_at="2024-01-01T00:00:00Z",
    payload={"name": "n", "version": 1, "value": [1.5, "é", {"k": None}], "actor": "a"},
)


@given(st.sampled_from([
    {}, {"seq": 2}, {"ignorable": True}, {"payload": {"value": 1.0}}, {"payload": {"value": 1}},
    {"payload": {"value": True}}, {"payload": {"value": "\ud800"}}, {"event_id": "\ud800"},
    {"payload": {"value": 2**53}},
]))
def test_envelope_matches_is_the_comparison_of_the_bytes(change: dict[str, Any]) -> None:
    expected = envelope_bytes(attrs.evolve(ENVELOPE, payload={"value": 1}))
    changed = attrs.evolve(ENVELOPE, **change)
    try:
        have = envelope_bytes(changed)
    except CanonicalJsonError:
        try:
            envelope_matches(changed, expected)
        except CanonicalJsonError:
            return
        raise AssertionError("an envelope the encoder refuses was compared") from None
    assert envelope_matches(changed, expected) == (have == expected)
    assert envelopes_match([changed], [expected]) == (have == expected)
    assert not envelopes_match([changed], [expected, expected])
