"""A payload's bytes and copy from two C calls equal the clear encoder's and decoder's.

``convledger.fast.payload.encode_payload_copied`` (the append path's
``codec.encode_payload_copied``, LED-014) must return exactly
``canonical.encode(value, max_depth=MAX_DEPTH)`` or its refusal (CAN-001 ..
CAN-009, LIM-005), and, when it returns a copy, exactly the value
``canonical.decode`` reads from those bytes, number types included (CAN-013).
Each exclusion of its strict path (floats not in their CAN-005 form, member
names whose two orders differ, LIM-005, LIM-004, values orjson writes natively
but the clear encoder judges otherwise) has an example here that takes the slow
path, and the typical payload takes the strict path.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import uuid

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from convledger import canonical, limits
from convledger.errors import CanonicalJsonError
from convledger.fast import payload as fast_payload
from test_fast_canonical import SPECIAL_FLOATS, any_values, json_values, names
from test_write_path import _nested
from test_write_path import _typed as typed

EXAMPLES = max(300, settings().max_examples)
properties = settings(max_examples=EXAMPLES, deadline=None)
MAX = canonical.MAX_SAFE_INTEGER


class Level(enum.IntEnum):
    """An IntEnum: orjson writes its value, and it compares equal to that int."""

    HIGH = 3


class Mode(enum.StrEnum):
    """A StrEnum: orjson writes its value, and it compares equal to that str."""

    FAST = "fast"


class Named(enum.IntEnum):
    """An IntEnum whose str() is its name: the clear encoder writes its digits too."""

    ONE = 1

    def __str__(self) -> str:
        return self.name


class Plain(enum.Enum):
    """A plain Enum: orjson writes its value, which does not compare equal to it."""

    A = "a"


class Ratio(float):
    """A float subclass with its own repr: the clear encoder writes the value's digits."""

    def __repr__(self) -> str:
        return "Ratio?"


@dataclasses.dataclass
class Point:
    x: int


ODD_VALUES: list[object] = [  # orjson writes most natively, refuses the subclasses
    Ratio(2.5),
    Level.HIGH,
    Mode.FAST,
    Named.ONE,
    Plain.A,
    uuid.UUID(int=7),
    Point(1),
    datetime.datetime(2026, 12, 4, tzinfo=datetime.UTC),
    datetime.date(2026, 12, 4),
    orjson.Fragment(b'{"raw":1}'),
    (1, "tuple"),
    math.nan,
    -math.inf,
]


def clear_outcome(value: object) -> tuple[object, ...]:
    """The clear encoder's bytes and the strict decoder's value, or the refusal."""
    try:
        data = canonical.encode(value, max_depth=limits.MAX_DEPTH)
    except canonical.NestingTooDeep:
        return ("too deep",)
    except CanonicalJsonError as error:
        return ("refused", type(error), error.reason, error.requirement)
    return ("bytes", data)


def fast_outcome(value: object) -> tuple[object, ...]:
    """The same of the fast pair; a copy given must be the strict decoder's, type for type."""
    try:
        data, copy = fast_payload.encode_payload_copied(value)
    except canonical.NestingTooDeep:
        return ("too deep",)
    except CanonicalJsonError as error:
        return ("refused", type(error), error.reason, error.requirement)
    if copy is not None:
        assert typed(copy) == typed(canonical.decode(data))
    return ("bytes", data)


def copied(value: object) -> bool:
    """Whether the strict path answered (a copy came with the bytes); False for a refusal."""
    try:
        return fast_payload.encode_payload_copied(value)[1] is not None
    except (canonical.NestingTooDeep, CanonicalJsonError):
        return False


@properties
@given(st.one_of(any_values(), st.dictionaries(names(surrogates=True), any_values(), max_size=4)))
@example({"n": MAX, "m": -MAX})
@example({"n": MAX + 1})
@example({"f": [1.0, -0.0, 1e16, 1e-7, 1e21, 0.1, 5e-324]})
@example({"\U0001f600": 1, "\ufb01": 2})
@example({"\U0001f600": "\ue000"})
@example({"a": "\ud800"})
@example({"a": [{1, 2}]})
def test_the_pair_is_the_clear_encoding_and_its_strict_decoding(value: object) -> None:
    """For any value: the clear bytes or refusal, and a copy only as the strict decoder reads it."""
    assert fast_outcome(value) == clear_outcome(value)


@properties
@given(json_values(), st.sampled_from(ODD_VALUES))
def test_values_orjson_writes_natively_get_the_clear_answer(value: object, odd: object) -> None:
    """An enum, UUID, dataclass, date, Fragment, tuple or non-finite float anywhere in a payload."""
    for container in ({"odd": odd, "v": value}, [value, odd], {"deep": [{"odd": odd}]}):
        assert fast_outcome(container) == clear_outcome(container)


@properties
@given(st.one_of(st.floats(), st.sampled_from(SPECIAL_FLOATS)))
def test_a_float_is_copied_only_in_its_canonical_form(number: float) -> None:
    """A float whose orjson text is not its CAN-005 text sends the payload to the slow path."""
    value = {"x": number, "y": [number]}
    assert fast_outcome(value) == clear_outcome(value)
    if math.isfinite(number) and copied(value):
        assert orjson.dumps(number).decode() == canonical.format_number(number)


@pytest.mark.parametrize(
    ("value", "strict"),
    [
        ({"role": "assistant", "content": [{"type": "text", "text": "café ☕ 😀"}]}, True),
        ({"usage": {"inputTokens": MAX, "outputTokens": -MAX}}, True),
        ({"temperature": 0.7, "topP": 1.5}, True),
        ({"temperature": 1.0}, False),  # orjson writes 1.0, CAN-005 writes 1
        ({"x": -0.0}, False),
        ({"x": 1e16}, False),
        ({"\ufb01": 1, "\U0001f600": 2}, False),  # CAN-002: the two orders differ
        ({"a": "\ue000", "b": "😀"}, False),  # both kinds anywhere: not looked into further
        ({"a": "😀"}, True),  # astral code points alone sort the same either way
        ({"level": Level.HIGH}, True),  # written as 3 by both encoders
        ({"level": Named.ONE}, True),  # the clear encoder writes its digits, not its name
        ({"mode": Mode.FAST}, True),
        ({"plain": Plain.A}, False),
        ({"ratio": Ratio(1.5)}, False),  # a float subclass: orjson refuses it
        ({"id": uuid.UUID(int=7)}, False),
        ({"t": (1, 2)}, False),
        ({"n": math.nan}, False),
        (None, False),
    ],
    ids=repr,
)
def test_which_values_take_the_strict_path(value: object, strict: bool) -> None:
    """Each exclusion is taken where it must be, and the common payloads are not excluded."""
    assert copied(value) is strict
    assert fast_outcome(value) == clear_outcome(value)


@pytest.mark.parametrize("levels", [1, 127, 128, 129, 200, 255, 256, 300])
def test_the_depth_limit_holds_on_both_paths(levels: int) -> None:
    """LIM-005: a payload object holding ``levels - 1`` more levels, around 128 and orjson's 255."""
    value = {"v": _nested(levels - 1)} if levels > 1 else {}
    assert fast_outcome(value) == clear_outcome(value)
    if levels > limits.MAX_DEPTH:
        with pytest.raises(canonical.NestingTooDeep):
            fast_payload.encode_payload_copied(value)


def test_a_value_with_many_brackets_in_its_strings_is_judged_by_the_slow_path() -> None:
    """More brackets than LIM-005's levels, inside strings: not too deep, and the same bytes."""
    value = {"text": "[" * 300}
    assert not copied(value)
    assert fast_outcome(value) == clear_outcome(value)


def test_an_oversized_payload_is_not_decoded() -> None:
    """LIM-004: bytes over the limit come back without a copy (the caller refuses them)."""
    value = {"text": "x" * limits.MAX_PAYLOAD_BYTES}
    data, copy = fast_payload.encode_payload_copied(value)
    assert copy is None
    assert len(data) > limits.MAX_PAYLOAD_BYTES
    assert data == canonical.encode(value)


def test_a_cycle_is_refused_as_the_clear_encoder_refuses_it() -> None:
    cycle: dict[str, object] = {}
    cycle["self"] = cycle
    assert fast_outcome(cycle) == clear_outcome(cycle)
    assert fast_outcome(cycle)[2] == "unsupported_type"
