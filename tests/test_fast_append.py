"""The one-pass append checks answer every batch as ``validated_batch`` does (LED-001, ERR-010).

``convledger.batch.validated_batch`` is the definition; ``convledger.fast.append.fused``
is its one-pass twin, which the stores call on the fast code (``batch.checked_batch``).
These properties hand both the same generated batches, valid and hostile (huge and
boolean integers, floats, subclasses, deep nesting, lone surrogates, NUL, identifiers at
and beyond LIM-001's bytes, date-times at the edge of every field and of LIM-008, wrong
types, runtime kinds, repeated eventIds, sequences that are not lists, expected heads at
LIM-007's edge) and require the same answer: the same drafts (their fields, each payload
by type and value, its canonical text and bytes, the class ``DetachedDraft``) or the same
refusal (class, kind, requirement, field, identity and message: every member of the
error, so the same ``details`` on the wire, WIR-025).
"""

from __future__ import annotations

import collections
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from convledger import batch, limits
from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.fast import append as fast_append
from convledger.kinds import KindRegistry, default_registry
from convledger.runtime.state import RUNTIME_KINDS
from convledger.store_interface import MAX_BATCH
from convledger_conformance.ledger.strategies_kinds import EXAMPLE_PAYLOADS
from test_fast_canonical import any_values, json_values
from test_fast_validate import _mutated, corpus
from test_write_path import _nested
from test_write_path import _typed as typed

EXAMPLES = max(300, settings().max_examples)
properties = settings(max_examples=EXAMPLES, deadline=None)

REGISTRY = default_registry()
FUSED = fast_append.fused(
    batch.validated_batch, EventDraft, batch.DetachedDraft, RUNTIME_KINDS, MAX_BATCH
)


class NoCompiled:
    """A registry without compiled validators: the definition judges every payload."""

    def __init__(self, registry: KindRegistry) -> None:
        self.registry = registry

    def compiled_accepts(self, kind: str, schema_version: int) -> None:
        return None

    def check_payload(self, kind: str, schema_version: int, payload: Any) -> None:
        self.registry.check_payload(kind, schema_version, payload)

    def check_appended_payload(self, kind: str, schema_version: int, payload: Any) -> None:
        self.registry.check_payload(kind, schema_version, payload)


class Text(str):
    """A ``str`` subclass: the clear checks take it, the pass hands it over."""


class Number(int):
    """An ``int`` subclass."""


class Drafts(Sequence[object]):
    """A sequence that is neither a list nor a tuple."""

    def __init__(self, items: list[object]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: Any) -> Any:
        return self.items[index]


class OwnDraft(EventDraft):
    """A subclass of EventDraft."""


def outcome(check: Any, registry: Any, conversation_id: object, drafts: object,
            expected_head: object) -> tuple[object, ...]:
    """What a check answers: the drafts in full, or every member of its refusal."""
    try:
        checked = check(registry, conversation_id, drafts, expected_head)
    except LedgerError as error:
        members = sorted((name, repr(value)) for name, value in vars(error).items())
        return ("refused", type(error).__name__, error.kind, str(error), tuple(members))
    return ("checked", tuple(
        (type(draft).__name__, draft.event_id, draft.kind, draft.occurred_at,
         typed(draft.payload), draft.schema_version, draft.ignorable,
         draft.canonical_payload, draft.canonical_bytes)
        for draft in checked
    ))


HUGE = [0, -1, 2**53 - 1, 2**53, -(2**53), 2**64, 10**400, True, False, 1.0, "1", None,
        Number(1)]

identifiers = st.one_of(
    st.text(st.characters(codec="ascii"), min_size=1, max_size=12),
    st.text(min_size=0, max_size=12),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=12),
    st.sampled_from([
        "", "\x00", "a/b", "\ud800", "x\udfff", "a" * 1024, "a" * 1025, "é" * 512, "é" * 513,
        "\U0001f600" * 256, "\U0001f600" * 257, "a" * 5000, Text("id"),
    ]),
    st.sampled_from([None, 1, b"id", ["id"], 1.5]),
)


@st.composite
def occurred_ats(draw: st.DrawFn) -> object:
    """Date-times at and beyond the edge of every field, and values that are none."""
    if rarely(draw, 10):
        return draw(st.sampled_from([
            None, 1, Text("2024-01-01T00:00:00Z"), "2024-01-01T00:00:00Z\n", "",
            "2024-01-01T00:00:00", "2024-01-01 00:00:00Z", "２０24-01-01T00:00:00Z",
            "2024-01-01T00:00:00." + "1" * 43 + "Z", "2024-01-01T00:00:00." + "1" * 44 + "Z",
            "2000-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-02-29t23:59:60z",
        ]))
    year = draw(st.sampled_from(["0000", "1900", "2000", "2023", "2024", "9999"]))
    month = draw(st.sampled_from([f"{m:02d}" for m in range(0, 14)]))
    day = draw(st.sampled_from([f"{d:02d}" for d in range(0, 33)]))
    hour = draw(st.sampled_from(["00", "09", "19", "23", "24", "29"]))
    minute = draw(st.sampled_from(["00", "59", "60"]))
    second = draw(st.sampled_from(["00", "59", "60", "61"]))
    fraction = draw(st.sampled_from(["", ".1", ".123456", "." + "9" * 30, "."]))
    offset = draw(st.sampled_from(["Z", "z", "+00:00", "-23:59", "+24:00", "+05:60", "", "+5:00"]))
    separator = draw(st.sampled_from(["T", "t", " "]))
    return f"{year}-{month}-{day}{separator}{hour}:{minute}:{second}{fraction}{offset}"


def rarely(draw: st.DrawFn, times: int) -> bool:
    """True once in about ``times`` draws (a middle value: Hypothesis favours the ends)."""
    return draw(st.integers(1, times)) == times // 2 + 1


kinds = st.one_of(
    st.sampled_from(sorted({kind for kind, _ in REGISTRY.specs})),
    st.sampled_from(sorted(RUNTIME_KINDS)),
    identifiers,
)


@st.composite
def payloads(draw: st.DrawFn, kind: object, version: object) -> object:
    """A payload of the draft's pair (valid or mutated), of another pair, or hostile."""
    choice = draw(st.integers(-2, 5))
    pair = (kind, version) if type(kind) is str and type(version) is int else None
    if choice <= 1 and pair in EXAMPLE_PAYLOADS:
        example = EXAMPLE_PAYLOADS[pair]
        return example if choice <= 0 else draw(_mutated(example))
    if choice == 2:
        return draw(corpus())[2]
    if choice == 3:
        return draw(json_values())
    if choice == 4:
        return draw(st.sampled_from([_nested(128), _nested(129), {"a": _nested(128)},
                                     [float("nan")], (1, 2), {1: "a"}, {"\ud800": 1}]))
    return draw(any_values())


@st.composite
def drafts(draw: st.DrawFn, ids: st.SearchStrategy[object]) -> object:
    """One draft, mostly well formed, each field now and then hostile."""
    def field(good: st.SearchStrategy[object], bad: st.SearchStrategy[object]) -> object:
        return draw(bad) if rarely(draw, 16) else draw(good)

    if rarely(draw, 40):
        return draw(st.sampled_from([None, {"eventId": "e"}, "draft", 1]))
    version = field(st.just(1), st.one_of(st.sampled_from(HUGE), st.integers()))
    kind = field(st.sampled_from(sorted({kind for kind, _ in REGISTRY.specs})), kinds)
    event_id = field(ids, identifiers)
    at = field(st.just("2024-05-01T12:00:00.5+02:00"), occurred_ats())
    ignorable = field(st.booleans(), st.sampled_from([0, 1, None, "true", Number(1)]))
    payload = draw(payloads(kind, version))
    made = OwnDraft if rarely(draw, 40) else EventDraft
    return made(event_id, kind, at, payload, version, ignorable)  # type: ignore[arg-type]


@st.composite
def batches(draw: st.DrawFn) -> tuple[object, object, object]:
    """(conversation_id, drafts, expected_head); eventIds from a small pool, so repeated."""
    ids = st.sampled_from(["e1", "e2", "e3", "é4", "e5"]) | st.uuids().map(str)
    listed = draw(st.lists(drafts(ids), min_size=0 if rarely(draw, 20) else 1,
                           max_size=4))
    shape = draw(st.sampled_from(["list"] * 8 + ["tuple"] * 3 + ["sequence", "deque", "str"]))
    container: object = {
        "list": listed, "tuple": tuple(listed), "sequence": Drafts(listed),
        "deque": collections.deque(listed), "str": "drafts",
    }[shape]
    conversation = draw(identifiers) if rarely(draw, 8) else "conv-1"
    head = draw(st.sampled_from(HUGE)) if rarely(draw, 6) else draw(
        st.one_of(st.none(), st.integers(0, 10)))
    return conversation, container, head


def _valid(index: int, **changed: object) -> EventDraft:
    fields: dict[str, Any] = {
        "event_id": f"e{index}", "kind": "provider/message",
        "occurred_at": "2024-05-01T12:00:00Z",
        "payload": EXAMPLE_PAYLOADS[("provider/message", 1)], "schema_version": 1,
    }
    fields.update(changed)
    return EventDraft(**fields)


def _big(size: int) -> EventDraft:
    """A draft whose canonical payload has ``size`` bytes (a JSON string: 2 quote bytes)."""
    return _valid(0, kind="conformance/note", payload="x" * (size - 2))


@pytest.mark.parametrize("registry", [REGISTRY, NoCompiled(REGISTRY)], ids=["compiled", "none"])
@properties
@given(case=batches())
@example(case=("conv-1", [_valid(i) for i in range(MAX_BATCH)], None))
@example(case=("conv-1", [_valid(i) for i in range(MAX_BATCH + 1)], None))
@example(case=("conv-1", [_big(limits.MAX_PAYLOAD_BYTES)], 0))
@example(case=("conv-1", [_valid(1), _big(limits.MAX_PAYLOAD_BYTES + 1)], 0))
@example(case=("conv-1", [_valid(1), _valid(1, payload={})], 2**53 - 1))
@example(case=("conv-1", [_valid(1, payload={}), _valid(2, occurred_at="x")], None))
@example(case=("conv-1", [_valid(1, payload={}), _valid(1, kind="runtime/transition")], -1))
@example(case=("conv-1", [_valid(1, payload=_nested(129)), _valid(2, payload=[1.5])], None))
@example(case=("c\x00", [_valid(1, payload={"a": [1.0, "\x00"]})], None))
@example(case=("conv-1", [_valid(1, payload={"text": "\ud800"})], None))
@example(case=("conv-1", [_valid(1, payload=2**64)], None))
def test_the_pass_answers_every_batch_as_validated_batch(
    registry: Any, case: tuple[object, object, object]
) -> None:
    conversation_id, listed, expected_head = case
    assert outcome(FUSED, registry, conversation_id, listed, expected_head) == outcome(
        batch.validated_batch, registry, conversation_id, listed, expected_head
    )


def test_the_corpus_reaches_both_answers_and_every_refusal_kind() -> None:
    """The generated batches are accepted often, and refused by each check in turn."""
    seen: collections.Counter[str] = collections.Counter()

    @settings(max_examples=800, deadline=None, database=None)
    @given(batches())
    def collect(case: tuple[object, object, object]) -> None:
        answer = outcome(batch.validated_batch, REGISTRY, *case)
        seen[answer[0] if answer[0] == "checked" else str(dict(answer[4])["requirement"])] += 1

    collect()
    wanted = {"checked", "'LED-001'", "'LED-003'", "'LED-005'", "'ENV-003'", "'ENV-004'",
              "'ENV-005'", "'ENV-007'", "'ENV-008'", "'ENV-009'", "'ENV-012'", "'KND-002'",
              "'KND-003'", "'LIM-001'", "'LIM-005'", "'TRN-108'"}
    assert wanted <= set(seen), (wanted - set(seen), seen)
    assert seen["checked"] >= 80, seen


def test_the_stores_call_the_pass_on_the_fast_code() -> None:
    """``checked_batch`` is bound at the seam: the pass on the fast code, else the definition."""
    from convledger import codec

    if codec.CHOSEN == "fast":
        assert batch.checked_batch is not batch.validated_batch
        assert batch.checked_batch.__module__ == "convledger.fast.append"
    else:
        assert batch.checked_batch is batch.validated_batch


def test_a_generator_of_drafts_is_refused_alike() -> None:
    def generated() -> Iterator[EventDraft]:
        yield _valid(1)

    assert outcome(FUSED, REGISTRY, "c", generated(), None)[0] == "refused"
    assert outcome(FUSED, REGISTRY, "c", generated(), None) == outcome(
        batch.validated_batch, REGISTRY, "c", generated(), None
    )
