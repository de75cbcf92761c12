"""Checks of chapter CAN through the store: export bytes and import refusals.

The store's only JSON outputs are archives and its only JSON input is import,
so canonical JSON is checked there. The expected bytes of the vectors are
written out by hand from the spec's examples and RFC 8785, not computed by
the reference encoder.
"""

from __future__ import annotations

from functools import partial
from typing import cast

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.store import LedgerStore
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.spec_values import MAX_SAFE_INTEGER
from convledger_conformance.support import (
    STAMP,
    accepted,
    draft,
    expect_same_bytes,
    fail,
    fresh_store,
    refused,
    run_once,
    run_property,
)

PLACEHOLDER = b'"@@value@@"'


def expected_archive(conversation: str, value_text: bytes) -> bytes:
    """The archive of ``draft(conversation, value)`` written out by hand (CAN-001, CAN-002).

    ``conversation`` is plain ASCII and also the eventId.
    """
    name = conversation.encode("ascii")
    return (
        b'{"companions":{},"conversationId":"' + name + b'","events":[{"conversationId":"'
        + name + b'","eventId":"' + name + b'","kind":"state/set","occurredAt":"'
        + STAMP.encode("ascii") + b'","payload":{"actor":"conformance","name":"slot","value":'
        + value_text + b',"version":1},"schemaVersion":1,"seq":1}],'
        b'"format":"convledger.archive","formatVersion":1}'
    )


VECTORS: tuple[tuple[str, JsonValue, str], ...] = (
    ("CAN-005", 1.0, "1"),
    ("CAN-005", -0.0, "0"),
    ("CAN-005", 1e16, "10000000000000000"),
    ("CAN-005", 1e20, "100000000000000000000"),
    ("CAN-005", 1e21, "1e+21"),
    ("CAN-005", 1e23, "1e+23"),
    ("CAN-005", 1e-6, "0.000001"),
    ("CAN-005", 1e-7, "1e-7"),
    ("CAN-005", 1.2345e-7, "1.2345e-7"),
    ("CAN-005", 0.000001234, "0.000001234"),
    ("CAN-005", 0.1, "0.1"),
    ("CAN-005", 4.35, "4.35"),
    ("CAN-005", -1.5, "-1.5"),
    ("CAN-005", 5e-324, "5e-324"),
    ("CAN-005", 1.7976931348623157e308, "1.7976931348623157e+308"),
    ("CAN-005", 333333333.33333329, "333333333.3333333"),
    ("CAN-005", 123456789012345680.0, "123456789012345680"),
    ("CAN-005", 2.0**60, "1152921504606847000"),
    ("CAN-005", MAX_SAFE_INTEGER, "9007199254740991"),
    ("CAN-005", -MAX_SAFE_INTEGER, "-9007199254740991"),
    ("CAN-002", {"ﬁ": 1, "😀": 2}, '{"😀":2,"ﬁ":1}'),
    ("CAN-002", {"b": 1, "a": 2, "": 3, "aa": 4, "A": 5}, '{"":3,"A":5,"a":2,"aa":4,"b":1}'),
    (
        "CAN-002",
        {"€": 1, "\r": 2, "1": 3, "\u0080": 4, "ö": 5, "😀": 6, "\ufb33": 7},
        '{"\\r":2,"1":3,"\u0080":4,"ö":5,"€":1,"😀":6,"\ufb33":7}',
    ),
    ("CAN-003", [None, True, False], "[null,true,false]"),
    ("CAN-003", [3, 1, 2, [], {}], "[3,1,2,[],{}]"),
    ("CAN-003", {"z": [{"b": False, "a": None}]}, '{"z":[{"a":null,"b":false}]}'),
    ("CAN-004", "\x00\x08\t\n\x0c\r\x1b\x1f\x7f", '"\\u0000\\b\\t\\n\\f\\r\\u001b\\u001f\x7f"'),
    ("CAN-004", '"\\/', '"\\"\\\\/"'),
    ("CAN-004", "\u2028\u2029😀é\U0010ffff", '"\u2028\u2029😀é\U0010ffff"'),
)
"""(requirement, value, canonical text) vectors of the spec's examples and RFC 8785."""


@check("CAN-001", "CAN-002", "CAN-003", "CAN-004", "CAN-005")
def check_export_vectors(ctx: CheckContext) -> None:
    """CAN-001 .. CAN-005: exports of known payloads are exactly the hand-written bytes."""

    def body(store: LedgerStore) -> None:
        for number, (requirement, value, text) in enumerate(VECTORS):
            conversation = f"v{number}"
            store.append(conversation, [draft(conversation, value)])
            got = store.export_conversation(conversation)
            want = expected_archive(conversation, text.encode("utf-8"))
            if got != want:
                prefix, suffix = expected_archive(conversation, b"\x00").split(b"\x00")
                in_value = got.startswith(prefix) and got.endswith(suffix)
                ids = (requirement,) if in_value else ("CAN-001",)
                fail(ids, f"payload value {value!r} exported as {got!r}, expected {want!r}")

    run_once(ctx, body)


@check("CAN-001", "CAN-009")
def check_equal_values_equal_bytes(ctx: CheckContext) -> None:
    """CAN-001, CAN-009: equal values export identically; canonical bytes decode to themselves."""

    def body(store: LedgerStore, value: JsonValue) -> None:
        store.append("c", [draft("c", value)])
        first = store.export_conversation("c")
        want = expected_archive("c", canonical.encode(value))
        if first != want:
            fail("CAN-001", f"value {value!r} exported as {first!r}, expected {want!r}")
        again = cast(JsonValue, canonical.decode(canonical.encode(value)))
        expect_same_bytes("CAN-009", f"{value!r} and its decoded canonical form export differently",
                          expected=first, got=_export_of(ctx, again))

    run_property(ctx, body, gen.json_values())
    for left, right in EQUAL_VALUES:
        expect_same_bytes("CAN-009", f"{left!r} and {right!r} are equal but export differently",
                          expected=_export_of(ctx, right), got=_export_of(ctx, left))


EQUAL_VALUES: tuple[tuple[JsonValue, JsonValue], ...] = (
    ({"a": 1, "b": 2.0, "c": -0.0, "d": 1e16}, {"d": 1e16, "c": 0, "b": 2, "a": 1.0}),
    ([1.0, 0.5, -0.0], [1, 0.50, 0]),
    ({"😀": [], "ﬁ": {}}, {"ﬁ": {}, "😀": []}),
)
"""Pairs of values that are equal in the data model of CAN (CAN-009)."""


def _export_of(ctx: CheckContext, value: JsonValue) -> bytes:
    """The export of ``draft("c", value)`` from a fresh store."""
    with fresh_store(ctx) as store:
        store.append("c", [draft("c", value)])
        return store.export_conversation("c")


@check("CAN-006", "CAN-007", "CAN-008")
def check_encoder_refusals(ctx: CheckContext) -> None:
    """CAN-006 .. CAN-008: payloads without a canonical form are refused as invalid_input."""

    def body(store: LedgerStore) -> None:
        for why, breaks, change in gen.INVALID_DRAFT_CHANGES:
            ids = [i for i in breaks if i in ("CAN-006", "CAN-007", "CAN-008")]
            if ids:
                bad = gen.broken_draft(change, event_id="bad")
                refused(partial(store.append, "c", [bad]), "invalid_input", ids,
                        f"append of {why}", store=store, touched=["c"])

    run_once(ctx, body)


def _archive_with(token: bytes) -> bytes:
    """A canonical archive of conversation ``t`` whose payload value is the raw ``token``."""
    return expected_archive("t", PLACEHOLDER).replace(PLACEHOLDER, token)


DECODER_REFUSALS: tuple[tuple[str, str, bytes], ...] = (
    ("CAN-010", "truncated", _archive_with(b"1")[:-1]),
    ("CAN-010", "trailing text", _archive_with(b"1") + b" "),
    ("CAN-010", "two JSON texts", _archive_with(b"1") + b"{}"),
    ("CAN-010", "empty input", b""),
    ("CAN-010", "a trailing comma", _archive_with(b"[1,]")),
    ("CAN-010", "a single-quoted string", _archive_with(b"'x'")),
    ("CAN-010", "a comment", _archive_with(b"/*x*/1")),
    ("CAN-010", "NaN", _archive_with(b"NaN")),
    ("CAN-010", "Infinity", _archive_with(b"-Infinity")),
    ("CAN-010", "a leading plus", _archive_with(b"+1")),
    ("CAN-011", "a byte order mark", b"\xef\xbb\xbf" + _archive_with(b"1")),
    ("CAN-011", "a stray continuation byte", _archive_with(b'"\x80"')),
    ("CAN-011", "an invalid byte", _archive_with(b'"\xff"')),
    ("CAN-011", "an overlong encoding", _archive_with(b'"\xc0\xaf"')),
    ("CAN-011", "an encoded surrogate", _archive_with(b'"\xed\xa0\x80"')),
    ("CAN-011", "a cut multi-byte sequence", _archive_with(b'"\xe2\x82"')),
    ("CAN-012", "a duplicate member", b'{"companions":{},' + _archive_with(b"1")[1:]),
    ("CAN-012", "a duplicate payload member", _archive_with(b'{"a":1,"a":1}')),
    ("CAN-013", "a lone high surrogate escape", _archive_with(b'"\\ud800"')),
    ("CAN-013", "a lone low surrogate escape", _archive_with(b'"\\udc00"')),
    ("CAN-013", "a high surrogate escape before text", _archive_with(b'"\\ud83dx"')),
    ("CAN-013", "the integer 2**53+1", _archive_with(b"9007199254740993")),
    ("CAN-013", "the integer -(2**53+1)", _archive_with(b"-9007199254740993")),
    ("CAN-013", "a 25-digit integer", _archive_with(b"1234567890123456789012345")),
    ("CAN-013", "a number overflowing a double", _archive_with(b"1e400")),
    ("CAN-013", "a negative number overflowing a double", _archive_with(b"-1e400")),
)
"""(requirement, what, bytes): archives a strict decoder must refuse as invalid_input."""

DECODER_ACCEPTS: tuple[bytes, ...] = (b"10000000000000000", b"9007199254740992", b"1e+21")
"""Integer literals beyond 2**53-1 that are exactly the canonical form of a double (CAN-013)."""


@check("CAN-010", "CAN-011", "CAN-012", "CAN-013")
def check_decoder_refusals(ctx: CheckContext) -> None:
    """CAN-010 .. CAN-013: import refuses what a strict decoder refuses, and repairs nothing."""

    def body(store: LedgerStore) -> None:
        for requirement, what, data in DECODER_REFUSALS:
            refused(partial(store.import_conversation, data), "invalid_input", requirement,
                    f"import of an archive with {what}", store=store, touched=["t"])
        for number, token in enumerate(DECODER_ACCEPTS):
            data = _archive_with(token).replace(b'"t"', f'"t{number}"'.encode())
            accepted(partial(store.import_conversation, data), "CAN-013",
                     f"import of the canonical double {token.decode()}")
            expect_same_bytes("CAN-013", f"{token.decode()} did not re-export as itself",
                              expected=data, got=store.export_conversation(f"t{number}"))

    run_once(ctx, body)


DEPTH = 64
"""The nesting depth every decoder must accept (CAN-016)."""


@check("CAN-016")
def check_nesting_depth(ctx: CheckContext) -> None:
    """CAN-016: payloads nested 64 deep append, export, import and re-export unchanged."""

    def nested(leaf: JsonValue, depth: int, as_object: bool) -> JsonValue:
        value = leaf
        for _ in range(depth):
            value = {"a": value} if as_object else [value]
        return value

    def body(store: LedgerStore) -> None:
        for as_object in (False, True):
            conversation = "objects" if as_object else "arrays"
            value = nested(1, DEPTH, as_object)
            accepted(
                partial(store.append, conversation, [draft(conversation, value)]),
                "CAN-016",
                f"append of {conversation} nested {DEPTH} deep",
            )
            exported = store.export_conversation(conversation)
            text = canonical.encode(value)
            expect_same_bytes("CAN-016", f"{conversation} nested {DEPTH} deep exported differently",
                              expected=expected_archive(conversation, text), got=exported)
            with fresh_store(ctx) as target:
                accepted(
                    partial(target.import_conversation, exported),
                    "CAN-016",
                    f"import of {conversation} nested {DEPTH} deep",
                )
                expect_same_bytes("CAN-016",
                                  f"{conversation} nested {DEPTH} deep re-exported differently",
                                  expected=exported, got=target.export_conversation(conversation))

    run_once(ctx, body)
