"""Canonical JSON (spec chapter ``canonical-json.md``, CAN-001 .. CAN-014).

The reference is compared with the independent ``rfc8785`` package, with the
published examples of RFC 8785, and with the language-neutral vectors in
``spec/vectors/canonical/cases.json``.
"""

from __future__ import annotations

import base64
import json
import math
import struct
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from conftest import any_text, finite_floats, json_values, safe_integers
from convledger import canonical
from convledger.canonical import MAX_SAFE_INTEGER
from convledger.errors import CANONICAL_REASONS, CanonicalJsonError, InvalidInputError
from convledger_conformance.requirements import load_index

ROOT = Path(__file__).resolve().parents[1]
VECTORS = ROOT / "spec" / "vectors" / "canonical" / "cases.json"


def _reason_of_encode(value: object) -> str:
    with pytest.raises(CanonicalJsonError) as caught:
        canonical.encode(value)
    return caught.value.reason


def _reason_of_decode(data: bytes) -> str:
    with pytest.raises(CanonicalJsonError) as caught:
        canonical.decode(data)
    return caught.value.reason


# -- agreement with rfc8785 --------------------------------------------------------


@given(json_values)
def test_encode_equals_rfc8785(value: Any) -> None:
    """CAN-001: the canonical bytes of any value equal those of the rfc8785 package."""
    assert canonical.encode(value) == rfc8785.dumps(value)


@given(finite_floats)
def test_numbers_equal_rfc8785(number: float) -> None:
    """CAN-005: every finite double is written as rfc8785 writes it, and reads back exactly."""
    text = canonical.format_number(number)
    assert text.encode() == rfc8785.dumps(number)
    assert float(text) == number


@given(safe_integers)
def test_safe_integers_are_plain_digits(number: int) -> None:
    """CAN-005: an integer within +/-(2**53 - 1) is written as its decimal digits."""
    assert canonical.encode(number) == str(number).encode()
    assert canonical.encode(number) == canonical.encode(float(number))


@given(st.dictionaries(any_text, st.integers(0, 9), max_size=8))
def test_members_sorted_by_utf16_code_units(members: dict[str, int]) -> None:
    """CAN-002: members come out in the order of their names' UTF-16 code units."""
    decoded = canonical.decode(canonical.encode(members))
    assert isinstance(decoded, dict)
    assert list(decoded) == sorted(members, key=lambda name: name.encode("utf-16-be"))


# -- RFC 8785 published examples -----------------------------------------------------

APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]
"""RFC 8785 Appendix B: IEEE-754 bits and their ECMAScript serialization."""


def _double(hex_bits: str) -> float:
    value: float = struct.unpack(">d", bytes.fromhex(hex_bits))[0]
    return value


@pytest.mark.parametrize(("hex_bits", "expected"), APPENDIX_B)
def test_rfc8785_appendix_b_numbers(hex_bits: str, expected: str) -> None:
    """CAN-005: each double of RFC 8785 Appendix B is written as the RFC lists it."""
    assert canonical.encode(_double(hex_bits)) == expected.encode()


@pytest.mark.parametrize(("hex_bits", "expected"), APPENDIX_B)
def test_rfc8785_appendix_b_numbers_decode_to_their_double(hex_bits: str, expected: str) -> None:
    """CAN-009, CAN-013: each serialization of Appendix B decodes to its double and back."""
    decoded = canonical.decode(expected.encode())
    assert decoded == _double(hex_bits)
    assert canonical.encode(decoded) == expected.encode()


@pytest.mark.parametrize("hex_bits", ["7fffffffffffffff", "7ff0000000000000", "fff0000000000000"])
def test_rfc8785_appendix_b_non_finite_refused(hex_bits: str) -> None:
    """CAN-006: the NaN and infinity rows of Appendix B have no serialization."""
    assert _reason_of_encode(_double(hex_bits)) == "non_finite_number"


def test_rfc8785_sorting_example() -> None:
    """CAN-002: the member order of RFC 8785 section 3.2.3."""
    document = (
        b'{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With '
        b'Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control",'
        b'"\\u00f6":"Latin Small Letter O With Diaeresis"}'
    )
    decoded = canonical.decode(canonical.canonicalize(document))
    assert isinstance(decoded, dict)
    assert list(decoded) == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def test_rfc8785_serialization_example() -> None:
    """CAN-001, CAN-004, CAN-005: the example of RFC 8785 section 3.2.2."""
    document = (
        b'{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        b'"string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
        b'"literals": [null, true, false]}'
    )
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    ).encode()
    assert canonical.canonicalize(document) == expected


def test_spec_number_examples() -> None:
    """CAN-005: the examples the spec sentence lists."""
    assert canonical.encode([1.0, -0.0, 1e16, 1e21, 1e-6, 1e-7]) == (
        b"[1,0,10000000000000000,1e+21,0.000001,1e-7]"
    )


def test_astral_key_sorts_before_fb01() -> None:
    """CAN-002: U+1F600 (D83D DE00) sorts before U+FB01, unlike in code point order."""
    assert canonical.encode({"\ufb01": 1, "\U0001f600": 2}) == '{"😀":2,"ﬁ":1}'.encode()


def test_string_escapes() -> None:
    """CAN-004: seven short escapes, lower-case \\u00xx for other controls, the rest raw."""
    text = '"\\\b\f\n\r\t\x00\x1f\x7f/é😀'
    expected = '"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\x7f/é😀"'.encode()
    assert canonical.encode(text) == expected


def test_literals_and_array_order() -> None:
    """CAN-003: lower-case literals, array order kept, tuples are arrays."""
    assert canonical.encode([None, True, False, (3, 1, 2)]) == b"[null,true,false,[3,1,2]]"


def test_any_mapping_is_an_object() -> None:
    """CAN-001: a read-only mapping encodes like the dict it wraps."""
    assert canonical.encode(MappingProxyType({"b": 1, "a": [2]})) == b'{"a":[2],"b":1}'


# -- encoder refusals ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (math.nan, "non_finite_number"),
        (math.inf, "non_finite_number"),
        (-math.inf, "non_finite_number"),
        ([1, {"a": math.nan}], "non_finite_number"),
        (2**53, "integer_out_of_range"),
        (-(2**53), "integer_out_of_range"),
        (10**400, "integer_out_of_range"),
        ("\ud800", "lone_surrogate"),
        (["ok", "a\udfffb"], "lone_surrogate"),
        ({"\udc00": 1}, "lone_surrogate"),
        ({1: "a"}, "non_string_key"),
        ({None: "a"}, "non_string_key"),
        ({("a",): 1}, "non_string_key"),
        ({b"a": 1}, "non_string_key"),
        ({1, 2}, "unsupported_type"),
        (b"bytes", "unsupported_type"),
        (Decimal("1.5"), "unsupported_type"),
        (object(), "unsupported_type"),
        (range(3), "unsupported_type"),
    ],
    # repr, but an address-free name for object(): pytest-xdist's workers must collect
    # the same ids (an address differs between processes)
    ids=lambda value: "object()" if type(value) is object else repr(value),
)
def test_encoder_refusals(value: object, reason: str) -> None:
    """CAN-006, CAN-007, CAN-008: values outside the data model are refused with their reason."""
    assert _reason_of_encode(value) == reason


def test_encoder_refusal_is_invalid_input() -> None:
    """CAN-006: the refusal has kind invalid_input."""
    with pytest.raises(InvalidInputError) as caught:
        canonical.encode(math.nan)
    assert caught.value.kind == "invalid_input"
    assert caught.value.reason in CANONICAL_REASONS


def test_cyclic_structure_refused() -> None:
    """CAN-006: a list that contains itself is not a JSON value (and does not recurse forever)."""
    cycle: list[object] = [1]
    cycle.append(cycle)
    assert _reason_of_encode(cycle) == "unsupported_type"
    members: dict[str, object] = {}
    members["self"] = [members]
    assert _reason_of_encode(members) == "unsupported_type"


def test_shared_but_acyclic_structure_encodes() -> None:
    """CAN-001: the same list twice is not a cycle."""
    shared = [1, 2]
    assert canonical.encode([shared, {"a": shared}]) == b'[[1,2],{"a":[1,2]}]'


def test_deep_nesting_encodes_without_recursion() -> None:
    """CAN-009: nesting far beyond Python's recursion limit encodes (regression)."""
    value: object = "leaf"
    for _ in range(20_000):
        value = {"a": [value]}
    data = canonical.encode(value)
    assert data.startswith(b'{"a":[{"a":[') and data.endswith(b"]}]}")
    assert len(data) == len(b'{"a":[]}') * 20_000 + len(b'"leaf"')


def test_deep_object_decoded_encodes_again() -> None:
    """CAN-009: an object nested 600 deep that decodes also re-encodes (regression)."""
    data = b'{"a":' * 600 + b"1" + b"}" * 600
    assert canonical.canonicalize(data) == data


# -- decoder refusals ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xef\xbb\xbf{}", "bom"),
        (b"\xef\xbb\xbf", "bom"),
        (b'"\xff"', "invalid_utf8"),
        (b'"\xc0\xaf"', "invalid_utf8"),
        (b'"\xed\xa0\x80"', "invalid_utf8"),
        (b'"\xe2\x82"', "invalid_utf8"),
        (b'{"a":1,"a":2}', "duplicate_key"),
        (b'[{"x":{"b":1,"b":1}}]', "duplicate_key"),
        (b'{"a":1,"\\u0061":2}', "duplicate_key"),
        (b'"\\ud800"', "lone_surrogate"),
        (b'{"\\udc00":1}', "lone_surrogate"),
        (b'"\\ude00\\ud83d"', "lone_surrogate"),
        (b"9007199254740993", "integer_out_of_range"),
        (b"-9007199254740993", "integer_out_of_range"),
        (b"18446744073709551616", "integer_out_of_range"),
        (b"1000000000000000000000", "integer_out_of_range"),
        (b"9" * 5000, "integer_out_of_range"),
        (b"1e400", "non_finite_number"),
        (b"-1e400", "non_finite_number"),
        (b"NaN", "non_finite_number"),
        (b"[Infinity]", "non_finite_number"),
        (b"-Infinity", "non_finite_number"),
        (b"", "syntax"),
        (b"   ", "syntax"),
        (b'{"a":', "syntax"),
        (b'{"a":1', "syntax"),
        (b'"abc', "syntax"),
        (b"[1,]", "syntax"),
        (b"1 2", "syntax"),
        (b"{1:2}", "syntax"),
        (b"{'a':1}", "syntax"),
        (b"01", "syntax"),
        (b"TRUE", "syntax"),
        (b'"a\x01b"', "syntax"),
        ("[\u0661]".encode(), "syntax"),
        ("\u00a0[]".encode(), "syntax"),
        (b"[" * 100_000 + b"]" * 100_000, "syntax"),
    ],
    ids=lambda data: repr(data)[:40],
)
def test_decoder_refusals(data: bytes, reason: str) -> None:
    """CAN-010 .. CAN-013: refused input raises CanonicalJsonError with its reason."""
    assert _reason_of_decode(data) == reason


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"9007199254740992", 2.0**53),
        (b"-9007199254740992", -(2.0**53)),
        (b"10000000000000000", 1e16),
        (b"295147905179352830000", 2.0**68),
        (b"123456789012345680000", 1.2345678901234568e20),
        (b"9007199254740991", MAX_SAFE_INTEGER),
    ],
)
def test_integer_literals_that_are_canonical_forms_of_doubles(data: bytes, expected: float) -> None:
    """CAN-013: an integer literal outside the safe range is accepted when a double prints so."""
    assert canonical.decode(data) == expected
    assert canonical.canonicalize(data) == data


@given(finite_floats)
def test_every_canonical_number_decodes(number: float) -> None:
    """CAN-009: the canonical bytes of every double decode to that double (regression: 2**68)."""
    data = canonical.encode(number)
    assert canonical.decode(data) == number
    assert canonical.canonicalize(data) == data


# -- round trips and non-repair ------------------------------------------------------


@given(json_values)
def test_decode_encode_round_trip(value: Any) -> None:
    """CAN-009: canonical bytes decode to a value whose canonical bytes are the same."""
    data = canonical.encode(value)
    assert canonical.encode(canonical.decode(data)) == data


@given(json_values, st.integers(0, 2), st.booleans())
def test_non_canonical_input_decodes(value: Any, indent: int, ascii_only: bool) -> None:
    """CAN-014: indented, escaped, unsorted JSON decodes to the same canonical value."""
    text = json.dumps(value, indent=indent or None, ensure_ascii=ascii_only)
    assert canonical.canonicalize(text.encode()) == canonical.encode(value)


@given(json_values.filter(lambda value: isinstance(value, (list, dict))), st.data())
def test_truncated_document_never_repaired(value: Any, data: st.DataObject) -> None:
    """CAN-010: every proper prefix of an array or object document is refused."""
    document = canonical.encode(value)
    cut = data.draw(st.integers(0, len(document) - 1))
    with pytest.raises(CanonicalJsonError):
        canonical.decode(document[:cut])


@given(json_values, st.sampled_from([b",", b"]", b"}", b"x", b"\x00", b"1"]))
def test_trailing_bytes_never_dropped(value: Any, extra: bytes) -> None:
    """CAN-010: bytes after the one JSON text are refused, not ignored."""
    with pytest.raises(CanonicalJsonError):
        canonical.decode(canonical.encode(value) + b" " + extra)


def test_bom_never_stripped() -> None:
    """CAN-011: a BOM is refused even before an otherwise canonical document."""
    assert _reason_of_decode(canonical.BOM + canonical.encode({"a": 1})) == "bom"


def test_equal_values_have_equal_bytes() -> None:
    """CAN-009: 1, 1.0 and 1e0 are one number and have one canonical form."""
    assert canonical.canonicalize(b"[1,1.0,1e0,10E-1]") == b"[1,1,1,1]"
    assert canonical.encode({"a": 1.0, "b": -0.0}) == canonical.encode({"b": 0, "a": 1})


# -- the language-neutral vectors ----------------------------------------------------


def _vector_cases() -> list[dict[str, Any]]:
    document = json.loads(VECTORS.read_text("utf-8"))
    assert document["version"] == 1
    cases: list[dict[str, Any]] = document["cases"]
    return cases


@pytest.mark.parametrize("case", _vector_cases(), ids=lambda case: case["name"])
def test_reference_satisfies_vector(case: dict[str, Any]) -> None:
    """CAN-*: the reference gives each vector's canonical bytes or its refusal reason."""
    data = base64.b64decode(case["input_base64"], validate=True)
    if "error" in case:
        with pytest.raises(CanonicalJsonError) as caught:
            canonical.canonicalize(data)
        assert caught.value.kind == case["error"]["kind"]
        assert caught.value.reason == case["error"]["reason"]
    else:
        assert canonical.canonicalize(data) == base64.b64decode(case["canonical_base64"])


def test_vectors_are_well_formed() -> None:
    """The vector file has unique names, known ids and exactly one expectation per case."""
    cases = _vector_cases()
    known = {requirement.id for requirement in load_index()}
    assert len(cases) >= 40
    assert len({case["name"] for case in cases}) == len(cases)
    for case in cases:
        assert set(case["requirements"]) <= known, case["name"]
        assert ("error" in case) != ("canonical_base64" in case), case["name"]
        if "error" in case:
            assert case["error"]["reason"] in CANONICAL_REASONS, case["name"]


def test_every_can_requirement_has_a_vector() -> None:
    """Every CAN requirement id appears in at least one vector."""
    can_ids = {r.id for r in load_index() if r.id.startswith("CAN-") and not r.retired}
    cited = {ident for case in _vector_cases() for ident in case["requirements"]}
    assert can_ids - cited == set()
