"""The fast stored-text decoder gives what the strict decoder gives, value and type alike.

Spec chapter ``canonical-json.md`` (CAN-010 .. CAN-013) and SQL-005:
``convledger.canonical.decode`` is the definition; ``convledger.fast.decode.decode_stored``
must return an equal value with equal types (``1`` is not ``1.0``, ``True`` is
not ``1``) for every canonical text, and must refuse every non-canonical text
the strict decoder refuses, except a repeated member name (see its module).
"""

from __future__ import annotations

import json

from hypothesis import assume, example, given
from hypothesis import strategies as st

from convledger import canonical
from convledger.envelope import Envelope
from convledger.errors import CanonicalJsonError
from convledger.fast.decode import decode_stored
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
