"""One encoding per payload on the append path (issue 18): LIM-004, LIM-005, ENV-009, LED-014.

``convledger.batch.validated_batch`` encodes each payload once, checking the depth
limit (LIM-005) in the encoder's own walk, and hands the stores that canonical text
(``DetachedDraft.canonical_payload``): the SQLite store writes it as it is, the memory
store decodes the caller's copy from it. These tests pin what that must keep: the
refusals and their order, the stored bytes, and that no object of the caller's
reaches the ledger or is shared between the ledger and what a caller is handed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from convledger import canonical, codec, limits
from convledger.batch import DetachedDraft, detached_payloads, validated_batch
from convledger.envelope import EventDraft
from convledger.errors import CanonicalJsonError, InvalidInputError
from convledger.kinds import default_registry
from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger.store import LedgerStore
from test_fast_canonical import any_values

AT = "2026-05-09T07:35:25Z"


def _state(value: Any, event_id: str = "e1") -> EventDraft:
    return EventDraft(event_id, "state/set", AT, {"name": "n", "version": 1, "value": value,
                                                 "actor": "a"})


def _nested(levels: int) -> Any:
    """A value whose arrays nest ``levels`` deep (the outermost array is level 1)."""
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerStore]:
    made: LedgerStore = MemoryStore() if request.param == "memory" else SqliteStore(
        tmp_path / "l.db"
    )
    yield made
    made.close()


def test_validated_batch_carries_the_one_canonical_text() -> None:
    """The text a store writes is the canonical encoding the size limit measured (LIM-004)."""
    payload = {"name": "n", "version": 1, "value": [1.0, -0.0, 1e21, "é"], "actor": "a"}
    (checked,) = validated_batch(default_registry(), "c", [_state(payload["value"])], None)
    assert type(checked) is DetachedDraft
    assert checked.canonical_payload == canonical.encode(payload).decode("utf-8")
    assert checked.canonical_bytes == canonical.encode(payload)
    assert checked.payload == canonical.decode(checked.canonical_payload.encode())
    assert detached_payloads((checked,)) == (checked.canonical_payload,)
    assert detached_payloads((checked, _state(1))) is None


def test_sqlite_stores_exactly_the_text_encoded_at_append(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    store = SqliteStore(path)
    (placed,) = store.append("c", [_state({"b": [1.5, None], "a": "😀"})])
    store.close()
    with sqlite3.connect(path) as connection:
        (stored,) = connection.execute("SELECT payload FROM events").fetchone()
    assert stored == canonical.encode(placed.payload).decode("utf-8")


def test_depth_limit_is_checked_by_the_encoder_walk(store: LedgerStore) -> None:
    """LIM-005: 128 levels (the payload object is level 1) accepted, 129 refused, nothing kept."""
    assert store.append("c", [_state(_nested(limits.MAX_DEPTH - 1))])[0].seq == 1
    with pytest.raises(InvalidInputError) as refused:
        store.append("c", [_state(_nested(limits.MAX_DEPTH), "e2")])
    assert (refused.value.requirement, refused.value.field) == ("LIM-005", "payload")
    assert store.head("c") == 1


def test_a_payload_too_deep_and_not_json_is_refused_for_its_depth(store: LedgerStore) -> None:
    """The order of refusals stays: LIM-005 before ENV-009 (the encoder meets the set first)."""
    value = [{1, 2}, _nested(limits.MAX_DEPTH)]
    with pytest.raises(InvalidInputError) as refused:
        store.append("c", [_state(value)])
    assert refused.value.requirement == "LIM-005"
    with pytest.raises(InvalidInputError) as not_json:
        store.append("c", [_state([{1, 2}, _nested(3)])])
    assert not_json.value.requirement == "ENV-009"
    assert store.head("c") == 0


def test_fast_and_clear_payload_encoders_agree_on_the_limit() -> None:
    for levels in (1, limits.MAX_DEPTH - 1, limits.MAX_DEPTH):
        value = {"v": _nested(levels)}
        if levels < limits.MAX_DEPTH:
            expected = canonical.encode(value, max_depth=limits.MAX_DEPTH)
            assert codec.encode_payload(value) == expected
        else:
            with pytest.raises(canonical.NestingTooDeep):
                codec.encode_payload(value)
            with pytest.raises(canonical.NestingTooDeep):
                canonical.encode(value, max_depth=limits.MAX_DEPTH)


def test_a_caller_mutating_its_drafts_after_append_changes_nothing(store: LedgerStore) -> None:
    """LED-014 for a batch: neither the drafts' payloads nor the returned ones reach the ledger."""
    values = [{"list": [1, 2], "nested": {"a": "b"}}, {"list": [3]}]
    drafts = [_state(value, f"e{number}") for number, value in enumerate(values)]
    placed = store.append("c", drafts)
    before = store.export_conversation("c")
    for draft, value in zip(drafts, values, strict=True):
        value["list"].append("later")
        assert isinstance(draft.payload, dict)
        draft.payload["actor"] = "someone else"
    for envelope in placed:
        assert isinstance(envelope.payload, dict)
        envelope.payload["value"]["list"].append("from append")
    read = store.read("c").items
    assert isinstance(read[0].payload, dict)
    read[0].payload["value"]["list"].append("from read")
    assert store.export_conversation("c") == before
    assert placed[0].payload is not read[0].payload


def _typed(value: Any) -> Any:
    """``value`` with each number tagged by its type (1 == 1.0 == True in Python)."""
    if isinstance(value, dict):
        return {name: _typed(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def test_the_copies_of_a_batch_are_what_the_strict_decoder_reads(store: LedgerStore) -> None:
    """LED-014, CAN-013: the stored and the handed-out payloads of a batch, decoded from the
    bytes the append encoded, are the strict decoder's values, types included: a long
    integer literal (1e16 is written ``10000000000000000``) is a float, 2**53 - 1 an int."""
    values = [[1e16, 2**53 - 1, True], {"x": [1, 1.5, None]}, "\u2028\x7f\U0001f600"]
    drafts = [_state(value, f"e{index}") for index, value in enumerate(values)]
    placed = store.append("c", drafts)
    expected = [canonical.decode(canonical.encode(draft.payload)) for draft in drafts]
    assert [_typed(envelope.payload) for envelope in placed] == _typed(expected)
    read = store.read("c").items
    assert [_typed(envelope.payload) for envelope in read] == _typed(expected)
    assert all(one.payload is not other.payload for one, other in zip(placed, read, strict=True))
    assert type(placed[0].payload["value"][0]) is float  # type: ignore[index]


def test_a_detached_draft_handed_back_is_detached_again(store: LedgerStore) -> None:
    """A caller may pass a DetachedDraft it got hold of; its payload is encoded anew."""
    (checked,) = validated_batch(default_registry(), "c", [_state([1])], None)
    assert isinstance(checked.payload, dict)
    checked.payload["value"] = [2]
    (placed,) = store.append("c", [checked])
    assert placed.payload == {"name": "n", "version": 1, "value": [2], "actor": "a"}
    assert store.read("c").items[0].payload == placed.payload


def _clear_expectation(value: Any) -> tuple[str, Any]:
    """What the clear code says of ``_state(value)``: the stored payload, or the refusal's id."""
    payload = {"name": "n", "version": 1, "value": value, "actor": "a"}
    try:
        encoded = canonical.encode(payload, max_depth=limits.MAX_DEPTH)
    except canonical.NestingTooDeep:
        return ("refused", "LIM-005")
    except CanonicalJsonError:
        return ("refused", "ENV-009")
    return ("stored", _typed(canonical.decode(encoded)))


@settings(max_examples=max(100, settings().max_examples), deadline=None)
@given(value=any_values())
def test_any_payload_value_is_stored_or_refused_as_the_clear_code_says(value: Any) -> None:
    """An append through the fast path stores the strict decoder's value of the clear bytes,
    types included, or refuses with the clear code's requirement and keeps nothing (LED-004)."""
    for made in (MemoryStore(), SqliteStore(":memory:")):
        try:
            expected = _clear_expectation(value)
            try:
                (placed,) = made.append("c", [_state(value)])
            except InvalidInputError as refused:
                assert ("refused", refused.requirement) == expected
                assert made.head("c") == 0
                continue
            assert ("stored", _typed(placed.payload)) == expected
            assert _typed(made.read("c").items[0].payload) == expected[1]
        finally:
            made.close()
