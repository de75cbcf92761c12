"""The fast stored-text decoder gives what the strict decoder gives, value and type alike.

Spec chapter ``canonical-json.md`` (CAN-010 .. CAN-013) and SQL-005:
``convledger.canonical.decode`` is the definition; ``convledger.fast.decode.decode_stored``
must return an equal value with equal types (``1`` is not ``1.0``, ``True`` is
not ``1``) for every canonical text, and must refuse every non-canonical text
the strict decoder refuses, except a repeated member name (see its module).
"""

from __future__ import annotations

import json

import orjson
from hypothesis import assume, example, given
from hypothesis import strategies as st

from convledger import canonical
from convledger.envelope import Envelope
from convledger.errors import CanonicalJsonError
from convledger.fast import decode as fast_decode
from convledger.fast import strict
from convledger.fast.decode import (
    decode_canonical,
    decode_stored,
    decode_stored_bytes,
    decode_stored_page,
)
from convledger.sqlite import rows
from test_fast_canonical import MAX, SPECIAL_FLOATS, json_values, properties, texts


def typed(value: object) -> object:
    """The value with every leaf tagged by its exact type, so ``1 == 1.0 == True`` cannot hide."""
    if isinstance(value, dict):
        return ("object", {key: typed(member) for key, member in value.items()})
    if isinstance(value, list):
        return ("array", [typed(item) for item in value])
    return (type(value).__name__, value)


def strict_outcome(data: str) -> object:
    """What the strict decoder gives for ``data``: a typed value, or the refusal's reason."""
    try:
        return typed(canonical.decode(data.encode("utf-8")))
    except CanonicalJsonError as error:
        return ("refused", error.reason)


def fast_outcome(data: str) -> object:
    """What the fast decoder gives for ``data``, in the form of :func:`strict_outcome`."""
    try:
        return typed(decode_stored(data))
    except CanonicalJsonError as error:
        return ("refused", error.reason)


@properties
@given(json_values())
@example([1.0, -0.0, 1e15, 1e16, 2.0**53, 1e21, 5e-324, MAX, -MAX])
@example({"\U0001f600": "\x00\x1f\u2028", "\ufb01": ["\\", '"']})
@example(SPECIAL_FLOATS)
def test_fast_decode_agrees_with_strict_on_canonical_text(value: object) -> None:
    """Every canonical text decodes to the same value with the same types."""
    text = canonical.encode(value).decode("utf-8")
    assert fast_outcome(text) == strict_outcome(text)


def has_repeated_names(data: str) -> bool:
    """Whether some object in ``data`` (when it parses at all) names a member twice."""
    repeated = False

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        nonlocal repeated
        repeated = repeated or len({key for key, _ in items}) < len(items)
        return dict(items)

    try:
        json.loads(data, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return False
    return repeated


@properties
@given(
    st.one_of(
        texts(surrogates=False),
        st.from_regex(r"\A[\[\]{}\",:0-9eE.+\- a-z\\]{0,24}\Z"),
        st.sampled_from(
            [
                "NaN", "[Infinity]", "-Infinity", "1e400", "[1] ", " 1", "",
                '"\\ud800"', '{"\\udc00":1}', str(MAX + 1), str(2**53), "1" * 30,
                "123456789012345678901", "[10000000000000000]", "-0", "1.0", "[1,]",
                "\ufeff1", '"\\u00e9"', "[[[[[[[[]]]]]]]]",
            ]
        ),
    )
)
@example("[" * 100_000 + "]" * 100_000)
def test_fast_decode_refuses_what_strict_refuses(data: str) -> None:
    """On any text without repeated member names, refusals and values agree too."""
    assume(not has_repeated_names(data))
    assert fast_outcome(data) == strict_outcome(data)


def test_repeated_member_names_are_the_one_difference() -> None:
    """A repeated name (never in canonical text) is refused strictly, kept last-wins here."""
    data = '{"a":1,"a":2}'
    assert strict_outcome(data) == ("refused", "duplicate_key")
    assert decode_stored(data) == {"a": 2}


@properties
@given(json_values())
def test_a_stored_row_reads_back_to_the_same_canonical_bytes(payload: object) -> None:
    """SQL-005, ENV-011: envelope -> row -> envelope keeps the canonical bytes."""
    envelope = Envelope(1, "e", "c", 1, "k/x", "2026-01-01T00:00:00Z", payload)  # type: ignore[arg-type]
    again = rows.envelope_of(rows.event_row(envelope))
    assert again.canonical_bytes() == envelope.canonical_bytes()
    assert typed(again.payload) == typed(canonical.decode(canonical.encode(payload)))


# -- the read path's decoder of stored bytes (msgspec), one text and a page ----------------------


def strict_bytes_outcome(data: bytes) -> object:
    """What the strict decoder gives for ``data``: a typed value, or the refusal's reason."""
    try:
        return typed(canonical.decode(data))
    except CanonicalJsonError as error:
        return ("refused", error.reason)


def fast_bytes_outcome(data: bytes) -> object:
    """What :func:`decode_stored_bytes` gives for ``data``, as :func:`strict_bytes_outcome`."""
    try:
        return typed(decode_stored_bytes(data))
    except CanonicalJsonError as error:
        return ("refused", error.reason)


LONG_NUMBERS = [
    9007199254740991, -9007199254740991, 1e16, -1e16, 2.0**53, 2.0**64, 1e20, 1e21,
    123456789012345.0, 1234567890123456.0, 0.1234567890123456789,
]
"""Numbers whose canonical literal has 15..22 characters: the guard's edge."""


@properties
@given(st.one_of(json_values(), st.lists(st.sampled_from(LONG_NUMBERS), max_size=3)))
@example([1.0, -0.0, 1e15, 1e16, 2.0**53, 1e21, 5e-324, MAX, -MAX])
@example({"\U0001f600": "\x00\x1f\u2028", "\ufb01": ["\\", '"']})
@example(SPECIAL_FLOATS)
@example(LONG_NUMBERS)
@example({"digest": "1234567890123456789012", "n": 1e16, "m": [":1234567890123456"]})
@example(1e16)
@example(-9007199254740991)
def test_fast_bytes_decode_agrees_with_strict_on_canonical_text(value: object) -> None:
    """Every canonical text, as bytes, decodes to the same value with the same types."""
    data = canonical.encode(value)
    assert fast_bytes_outcome(data) == strict_bytes_outcome(data)


def escaped(value: str) -> str:
    """A JSON string literal of ``value`` with every non-ASCII character as a ``\\u`` escape."""
    return json.dumps(value, ensure_ascii=True)


@properties
@given(
    st.one_of(
        texts(surrogates=False).map(lambda text: text.encode("utf-8")),
        texts(surrogates=True).map(lambda text: escaped(text).encode("ascii")),
        texts(surrogates=True).map(lambda text: ("{" + escaped(text) + ":1}").encode("ascii")),
        st.from_regex(rb"\A[\[\]{}\",:0-9eE.+\- \t\na-z\\]{0,24}\Z"),
        st.binary(max_size=12),
        st.sampled_from(
            [
                b"NaN", b"[Infinity]", b"-Infinity", b"1e400", b"[1e-400]", b"[1] ", b" 1", b"",
                b'"\\ud800"', b'{"\\udc00":1}', b'"\\ud800\\u0041"', b'"\\ud83d\\ude00"',
                str(MAX + 1).encode(), str(2**53).encode(), b"1" * 30, b"[ 10000000000000000]",
                b"123456789012345678901", b"[10000000000000000]", b"-0", b"1.0", b"[1,]",
                b"\xef\xbb\xbf1", b'"\\u00e9"', b"[[[[[[[[]]]]]]]]", b'"\xff"', b'"\xed\xa0\x80"',
                b'{"a":\n12345678901234567}', b"[0.30000000000000004441]", b"1E+2",
            ]
        ),
    )
)
@example(b"[" * 100_000 + b"]" * 100_000)
def test_fast_bytes_decode_refuses_what_strict_refuses(data: bytes) -> None:
    """On any bytes without repeated member names, refusals and values agree too."""
    assume(not has_repeated_names_in(data))
    assert fast_bytes_outcome(data) == strict_bytes_outcome(data)


def has_repeated_names_in(data: bytes) -> bool:
    """:func:`has_repeated_names` of bytes (False when they are not UTF-8)."""
    try:
        return has_repeated_names(data.decode("utf-8"))
    except UnicodeDecodeError:
        return False


@properties
@given(
    st.lists(
        st.one_of(
            json_values().map(canonical.encode),
            st.sampled_from([b'"\\ud800"', b"10000000000000000", b"1e400", b"[1,]", b""]),
        ),
        max_size=6,
    )
)
def test_fast_page_decode_is_the_strict_decoder_on_each_text(page: list[bytes]) -> None:
    """A page decodes to the strict values in order, or raises the strict refusal of its first
    text that the strict decoder refuses."""
    expected: list[object] = []
    refusal: object = None
    for data in page:
        outcome = strict_bytes_outcome(data)
        if isinstance(outcome, tuple) and outcome[0] == "refused":
            refusal = outcome
            break
        expected.append(outcome)
    try:
        found = [typed(value) for value in decode_stored_page(page)]
    except CanonicalJsonError as error:
        assert refusal == ("refused", error.reason)
    else:
        assert refusal is None
        assert found == expected


def test_a_repeated_member_name_is_the_one_difference_of_the_bytes_decoder() -> None:
    """As for text: refused strictly, kept last-wins here (never in canonical text)."""
    assert strict_bytes_outcome(b'{"a":1,"a":2}') == ("refused", "duplicate_key")
    assert decode_stored_bytes(b'{"a":1,"a":2}') == {"a": 2}
    assert decode_stored_page([b'{"a":1,"a":2}']) == [{"a": 2}]


# -- an archive's one decoding pass: canonical bytes by msgspec, proven by encoding again ------


def canonical_outcome(data: bytes) -> object:
    """What the clear code concludes: the typed value of canonical ``data``, else "no"."""
    try:
        value = canonical.decode(data)
    except CanonicalJsonError:
        return "no"
    return typed(value) if canonical.encode(value) == data else "no"


def fast_canonical_outcome(data: bytes) -> object:
    """What :func:`decode_canonical` concludes, in the form of :func:`canonical_outcome`."""
    value = decode_canonical(data)
    return "no" if value is None else typed(value)


@properties
@given(
    st.one_of(
        json_values().map(canonical.encode),
        st.lists(st.sampled_from(LONG_NUMBERS), max_size=3).map(canonical.encode),
        json_values().map(lambda value: json.dumps(value, ensure_ascii=False).encode("utf-8")),
        texts(surrogates=True).map(lambda text: escaped(text).encode("ascii")),
        st.from_regex(rb"\A[\[\]{}\",:0-9eE.+\- \t\na-z\\]{0,24}\Z"),
        st.binary(max_size=12),
        st.sampled_from(
            [
                b'{"a":1,"a":1}', b'{"b":1,"a":2}', b"1.0", b"1E+21", b"10000000000000000",
                b"[1e16]", b'"\\u00e9"', b'"\\u001f"', b"\xef\xbb\xbf1", b'"\xed\xa0\x80"',
                b"[" * 995 + b"]" * 995, b"[" * 100_000 + b"]" * 100_000,
            ]
        ),
    )
)
def test_fast_canonical_decode_is_decode_then_compare(data: bytes) -> None:
    """A value only when the clear code finds ``data`` canonical, and then the same value; on
    canonical bytes always a value (None stands for null) unless they hold a long number
    literal, names whose code-point and UTF-16 orders may part, more than 255 levels, or a
    float that orjson lays out otherwise than CAN-005 (from 1e-7 to 1e-4)."""
    found = fast_canonical_outcome(data)
    if found != "no":
        assert found == canonical_outcome(data)
    elif canonical_outcome(data) != "no" and data != b"null":
        assert (
            fast_decode._may_hold_long_number(data)
            or not strict.orders_agree(data)
            or data.count(b"[") + data.count(b"{") > 255
            or any(
                orjson.dumps(number) != canonical.format_number(number).encode()
                for number in floats_in(canonical.decode(data))
            )
        )


def floats_in(value: object) -> list[float]:
    """Every float in a decoded value (orjson writes 1e-6 as ``1e-6``, CAN-005 as ``0.000001``)."""
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [number for item in value for number in floats_in(item)]
    return []
