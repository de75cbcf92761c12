"""The fast canonical encoder agrees with the clear one, byte for byte and refusal for refusal.

Spec chapter ``canonical-json.md`` (CAN-001 .. CAN-009). ``convledger.canonical``
is the definition; ``convledger.fast.canonical`` must give the same bytes for
every value the clear encoder accepts and the same refusal (class, reason,
requirement) for every value it refuses. The ``rfc8785`` package is a second,
independent oracle for accepted values.

Examples per property: at least 300, more under a Hypothesis profile (such as
``thorough``) that asks for more.
"""

from __future__ import annotations

import base64
import enum
import json
import math
import types
from collections import OrderedDict
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest
import rfc8785
from hypothesis import example, given, settings
from hypothesis import strategies as st

from convledger import canonical
from convledger.errors import CanonicalJsonError
from convledger.fast import canonical as fast

EXAMPLES = max(300, settings().max_examples)
properties = settings(max_examples=EXAMPLES, deadline=None)

MAX = canonical.MAX_SAFE_INTEGER
VECTORS = Path(__file__).resolve().parents[1] / "spec" / "vectors" / "canonical" / "cases.json"
BMP_END = "\U00010000"

# -- generated values ------------------------------------------------------------

SPECIAL_FLOATS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.1,
    0.5,
    1e-4,
    1e-5,
    1e-6,
    1e-7,
    1e15,
    1e16,
    1e20,
    1e21,
    1e22,
    123.456,
    1e15 + 0.5,
    2.0**53,
    2.0**53 + 2,
    9007199254740991.0,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    4.35,
    0.000001234,
    1234567890123456789.0,
]
NON_FINITE = [math.inf, -math.inf, math.nan]
INTEGER_EDGES = [0, 1, -1, MAX, -MAX, MAX + 1, -MAX - 1, 2**64, -(2**64), 10**400]

# Code points where code-point order and UTF-16 order part ways (CAN-002), and
# the characters CAN-004 escapes.
TRICKY_NAME_CHARS = ["a", "b", "é", "\ue000", "\ufb01", "\uffff", "\U00010000", "\U0001f600"]
ESCAPED_CHARS = ['"', "\\", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "\u2028"]


def scalar_chars() -> st.SearchStrategy[str]:
    """Unicode scalar values, biased to ASCII, escapes, U+E000..U+FFFF and astral planes."""
    return st.one_of(
        st.characters(max_codepoint=0x7F),
        st.sampled_from(ESCAPED_CHARS + TRICKY_NAME_CHARS),
        st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF),
        st.characters(min_codepoint=0x10000),
        st.characters(codec="utf-8"),
    )


def texts(*, surrogates: bool) -> st.SearchStrategy[str]:
    """Strings of scalar values, and with ``surrogates`` sometimes a lone surrogate."""
    chars = scalar_chars()
    if surrogates:
        chars = st.one_of(chars, st.characters(categories=["Cs"]))
    return st.text(chars, max_size=12)


def names(*, surrogates: bool) -> st.SearchStrategy[str]:
    """Member names; short names from a tricky alphabet make ordering collisions likely."""
    return st.one_of(
        st.text(st.sampled_from(TRICKY_NAME_CHARS), max_size=3),
        texts(surrogates=surrogates),
    )


def json_values(
    *, floats: bool = True, member_names: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[object]:
    """Values of the data model (CAN-006): what the clear encoder must accept."""
    leaves: list[st.SearchStrategy[object]] = [
        st.none(),
        st.booleans(),
        st.integers(min_value=-MAX, max_value=MAX),
        texts(surrogates=False),
    ]
    if floats:
        leaves.append(st.floats(allow_nan=False, allow_infinity=False))
        leaves.append(st.sampled_from(SPECIAL_FLOATS))
    keys = member_names if member_names is not None else names(surrogates=False)
    return st.recursive(
        st.one_of(leaves),
        lambda kids: st.one_of(
            st.lists(kids, max_size=4),
            st.lists(kids, max_size=3).map(tuple),
            st.dictionaries(keys, kids, max_size=5),
        ),
        max_leaves=16,
    )


class Color(enum.IntEnum):
    """An int subclass the clear encoder accepts as an integer."""

    RED = 1


class Tag(str):
    """A str subclass the clear encoder accepts as a string."""


class Items(list[object]):
    """A list subclass the clear encoder accepts as an array."""


OUTSIDE_THE_MODEL: list[object] = [
    b"bytes",
    bytearray(b"x"),
    {1, 2},
    frozenset(),
    Decimal("1.5"),
    1 + 2j,
    object(),
    range(2),
]
SUBCLASSED: list[object] = [
    Color.RED,
    Tag("tag"),
    Items([1, "a"]),
    OrderedDict([("b", 1), ("a", 2)]),
    types.MappingProxyType({"z": 1, "a": [1.0]}),
]


def any_values() -> st.SearchStrategy[object]:
    """Values in and out of the model: bad numbers, lone surrogates, non-str names, odd types."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from(INTEGER_EDGES),
        st.floats(),
        st.sampled_from(SPECIAL_FLOATS + NON_FINITE),
        texts(surrogates=True),
        st.sampled_from(OUTSIDE_THE_MODEL + SUBCLASSED),
    )
    keys: st.SearchStrategy[object] = st.one_of(
        names(surrogates=True),
        st.integers(-3, 3),
        st.none(),
        st.booleans(),
        st.sampled_from([1.5, (1, 2), Tag("k")]),
    )
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.lists(kids, max_size=4),
            st.lists(kids, max_size=3).map(tuple),
            st.dictionaries(keys, kids, max_size=4),
        ),
        max_leaves=16,
    )


def jcs(value: object) -> bytes:
    """The ``rfc8785`` package's bytes for a value of the data model."""
    encoded: bytes = rfc8785.dumps(cast(Any, value))
    return encoded


def outcome(encoder: object, value: object) -> tuple[object, ...]:
    """Bytes, or the refusal as (class, reason, requirement): what callers may depend on."""
    assert callable(encoder)
    try:
        return ("bytes", encoder(value))
    except CanonicalJsonError as error:
        return ("refused", type(error), error.reason, error.requirement)


# -- agreement with the clear encoder --------------------------------------------


@properties
@given(any_values())
@example({True: 1})
@example({"\U0001f600": 1, "\ufb01": 2})
@example(["\ud800"])
@example({"\udc00": 1})
@example([1.0, -0.0, 1e16, 1e-7, 2**53])
@example({"n": MAX + 1, "m": -MAX - 1})
@example((1, (2, "x")))
def test_fast_agrees_with_clear_on_any_value(value: object) -> None:
    """Fast and clear give the same bytes or the same refusal for any value."""
    assert outcome(fast.encode, value) == outcome(canonical.encode, value)


@properties
@given(json_values(floats=False, member_names=st.text(scalar_chars().filter(BMP_END.__gt__))))
def test_fast_path_admits_every_float_free_value_with_bmp_names(value: object) -> None:
    """Values without floats and with BMP names take the C path and match the clear bytes."""
    assert fast.exact(value)
    assert fast.encode(value) == canonical.encode(value)


@properties
@given(json_values())
def test_fast_agrees_with_clear_and_rfc8785_on_json_values(value: object) -> None:
    """Every value of the data model encodes to the same bytes in fast, clear and rfc8785."""
    expected = canonical.encode(value)
    assert fast.encode(value) == expected
    assert jcs(value) == expected


@properties
@given(json_values())
def test_the_part_writer_alone_writes_every_json_value(value: object) -> None:
    """Without the clear fallback, the fast writer gives every value of the model its bytes.

    So values with ``1.0`` or astral names are written at part-by-part speed,
    not handed whole to the clear encoder (a private function, tested because
    that is the speed the export depends on).
    """
    assert fast._write(value, fast._UNLIMITED).encode("utf-8") == canonical.encode(value)


@properties
@given(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(SPECIAL_FLOATS)))
def test_fast_agrees_with_clear_and_rfc8785_on_floats(number: float) -> None:
    """A finite float, alone, in an array and as a member, encodes alike in all three."""
    for value in (number, [number, -number], {"x": number, "\U0001f600": [number]}):
        expected = canonical.encode(value)
        assert fast.encode(value) == expected
        assert jcs(value) == expected


@properties
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_the_fast_path_admits_prints_as_its_repr(number: float) -> None:
    """When exact() admits a float, its repr is already its ECMAScript form (CAN-005)."""
    if fast.exact(number):
        assert repr(number) == canonical.format_number(number)


@properties
@given(
    json_values(member_names=st.text(scalar_chars().filter(BMP_END.__gt__))),
    st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=6),
)
def test_orjson_writes_what_the_c_writer_writes_where_exact_admits(
    value: object, numbers: list[float]
) -> None:
    """Where exact() admits a container, orjson's bytes are the C writer's and the clear ones."""
    for container in ([value], {"v": value, "n": numbers}, numbers):
        if fast.exact(container):
            expected = canonical.encode(container)
            assert fast._dump_exact(container) == expected
            assert fast._write_json(container).encode("utf-8") == expected


def test_orjson_is_the_writer_of_exact_containers() -> None:
    """The dependency is installed, so the property above compares orjson, not the C writer."""
    assert fast.orjson is not None
    assert fast._dump_exact({"b": [1.5, "\x1f"], "a": None}) == b'{"a":null,"b":[1.5,"\\u001f"]}'


@properties
@given(st.dictionaries(names(surrogates=False), st.integers(0, 9), min_size=2, max_size=8))
def test_member_order_agrees_with_rfc8785_for_tricky_names(members: dict[str, int]) -> None:
    """Names mixing U+E000..U+FFFF and astral code points sort by UTF-16 units (CAN-002)."""
    expected = jcs(members)
    assert fast.encode(members) == expected
    assert canonical.encode(members) == expected


# -- examples with known bytes -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, b"1"),
        (-0.0, b"0"),
        (1e16, b"10000000000000000"),
        (1e21, b"1e+21"),
        (1e-6, b"0.000001"),
        (1e-7, b"1e-7"),
        (0.1, b"0.1"),
        (MAX, b"9007199254740991"),
        ({"\ufb01": 1, "\U0001f600": 2}, '{"\U0001f600":2,"\ufb01":1}'.encode()),
        ("\x1f\x7f\u2028\b", b'"\\u001f\x7f\xe2\x80\xa8\\b"'),
        ((1, [True, None]), b"[1,[true,null]]"),
        ({"b": [], "a": {}}, b'{"a":{},"b":[]}'),
    ],
)
def test_known_values_encode_to_known_bytes(value: object, expected: bytes) -> None:
    """The examples of CAN-002 .. CAN-005 give the bytes the spec states."""
    assert fast.encode(value) == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (math.nan, "non_finite_number"),
        ([math.inf], "non_finite_number"),
        (MAX + 1, "integer_out_of_range"),
        ({"a": [-(2**53)]}, "integer_out_of_range"),
        ({"a": 2**53}, "integer_out_of_range"),
        ({1: "x"}, "non_string_key"),
        ({None: "x"}, "non_string_key"),
        ({True: "x"}, "non_string_key"),
        ({"a\ud800": 1}, "lone_surrogate"),
        (["ok", "\udfff"], "lone_surrogate"),
        ({"a": object()}, "unsupported_type"),
        ([{1, 2}], "unsupported_type"),
        (b"x", "unsupported_type"),
    ],
)
def test_values_outside_the_model_are_refused_with_the_clear_reason(
    value: object, reason: str
) -> None:
    """Each refusal of CAN-006 .. CAN-008 comes with the reason the clear encoder gives."""
    with pytest.raises(CanonicalJsonError) as refused:
        fast.encode(value)
    assert refused.value.reason == reason
    assert outcome(fast.encode, value) == outcome(canonical.encode, value)


@pytest.mark.parametrize("value", SUBCLASSED, ids=lambda value: type(value).__name__)
def test_subclasses_of_json_types_encode_as_the_clear_encoder_does(value: object) -> None:
    """An IntEnum, str or list subclass, OrderedDict or mapping proxy gets the clear bytes."""
    assert not fast.exact(value)
    assert outcome(fast.encode, value) == outcome(canonical.encode, value)


def test_structures_that_contain_themselves_are_refused_like_the_clear_encoder() -> None:
    """A list or dict that contains itself is refused as unsupported_type (CAN-006)."""
    cycle: list[object] = ["x"]
    cycle.append(cycle)
    members: dict[str, object] = {}
    members["self"] = [members]
    for value in (cycle, members):
        assert outcome(fast.encode, value) == outcome(canonical.encode, value)
        assert outcome(fast.encode, value)[2] == "unsupported_type"


def test_shared_but_acyclic_structure_encodes() -> None:
    """The same list twice is not a cycle, and takes the C path (CAN-001)."""
    shared = [1, 2]
    value = [shared, {"a": shared}]
    assert fast.exact(value)
    assert fast.encode(value) == b'[[1,2],{"a":[1,2]}]'


def test_nesting_beyond_the_recursion_limit_encodes_like_the_clear_encoder() -> None:
    """A value nested 20,000 deep gets the clear encoder's bytes, not RecursionError (CAN-009)."""
    value: object = "leaf"
    for _ in range(20_000):
        value = {"a": [value]}
    assert fast.encode(value) == canonical.encode(value)


def _accepted_vectors() -> list[tuple[str, bytes, bytes]]:
    """(name, input, canonical bytes) of every vector that is not a refusal."""
    document = json.loads(VECTORS.read_text("utf-8"))
    return [
        (
            case["name"],
            base64.b64decode(case["input_base64"], validate=True),
            base64.b64decode(case["canonical_base64"], validate=True),
        )
        for case in document["cases"]
        if "canonical_base64" in case
    ]


@pytest.mark.parametrize(
    ("name", "data", "expected"), _accepted_vectors(), ids=[v[0] for v in _accepted_vectors()]
)
def test_fast_writes_the_canonical_bytes_of_every_accepted_vector(
    name: str, data: bytes, expected: bytes
) -> None:
    """Each accepted vector of spec/vectors/canonical re-encodes to its canonical bytes."""
    assert fast.encode(canonical.decode(data)) == expected, name


# -- the fast path is taken, and each of its exclusions is needed ------------------------


def test_a_realistic_envelope_takes_the_c_path() -> None:
    """A provider message envelope is admitted by exact(), so export runs at C speed."""
    envelope = {
        "schemaVersion": 1,
        "eventId": "01J9Z3K4M5N6P7Q8R9S0T00001",
        "conversationId": "conv-7f3a9c2e",
        "seq": 7,
        "kind": "provider/message",
        "occurredAt": "2026-05-09T07:35:25.123456Z",
        "payload": {
            "sha256": "0" * 64,
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "café ☕ 😀 done"}],
                "usage": {"inputTokens": 1834, "outputTokens": 96},
            },
        },
    }
    assert fast.exact(envelope)
    assert fast.encode(envelope) == canonical.encode(envelope) == jcs(envelope)


@pytest.mark.parametrize(
    "value",
    [
        1.0,
        -0.0,
        1e16,
        1e-7,
        {"\ufb01": 1, "\U0001f600": 2},
        MAX + 1,
        {1: "x"},
        {True: "x"},
        {None: "x"},
    ],
    ids=repr,
)
def test_the_c_writer_alone_is_wrong_where_exact_says_no(value: object) -> None:
    """Each exclusion of exact() guards a real difference between the C writer and CAN."""
    assert not fast.exact(value)
    written = fast._write_json(value).encode("utf-8")
    assert outcome(canonical.encode, value) != ("bytes", written)
