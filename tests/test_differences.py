"""A digest difference names the first differing conversation, part and member (issue 37)."""

from __future__ import annotations

from convledger.memory import MemoryStore
from convledger_conformance.differences import first_difference
from convledger_conformance.ledger.model import state_digest
from convledger_conformance.support import draft


def test_equal_states_have_no_difference() -> None:
    store = MemoryStore()
    store.append("a", [draft("e1", 1)])
    assert first_difference(state_digest(store, ["a"]), state_digest(store, ["a"])) is None


def test_an_appended_event_is_named_by_conversation_head_and_event() -> None:
    store = MemoryStore()
    store.append("a", [draft("e1", 1)])
    before = state_digest(store, ["a", "b"])
    store.append("b", [draft("e2", 2)])
    found = first_difference(before, state_digest(store, ["a", "b"]))
    assert found == "conversation 'b' head: expected 0, got 1", found


def test_a_changed_member_is_named_with_both_values() -> None:
    one, two = MemoryStore(), MemoryStore()
    one.append("a", [draft("e1", 1), draft("e2", 2)])
    two.append("a", [draft("e1", 1), draft("e2", 3)])
    found = first_difference(state_digest(one, ["a"]), state_digest(two, ["a"]))
    assert found == "conversation 'a' events event #2.payload.value: expected 2, got 3", found


def test_lengths_and_long_texts() -> None:
    assert first_difference([1, 2], [1]) == "the whole: expected 2 items, got 1 (first missing 2)"
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
    found = first_difference(long_a, long_b)
    assert found is not None and "at character 300" in found and "'a'" not in found[:20]
