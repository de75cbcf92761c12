"""The ledger on the in-memory reference store (spec chapter ``ledger.md``, LED-001 .. LED-015).

Every refusal is checked to leave the store exactly as it was (ERR-004,
LED-004) by comparing everything the store holds before and after.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import draft, draft_batches, memory_state, state_set, wire_events
from convledger import canonical
from convledger.envelope import EventDraft
from convledger.errors import (
    ConflictError,
    DuplicateError,
    InvalidInputError,
    LedgerError,
    NotSupportedError,
)
from convledger.memory import MemoryStore
from convledger.store import MAX_BATCH, Capability, LedgerStore


def _seeded() -> MemoryStore:
    """A store holding two conversations: conv (e1..e3) and other (o1)."""
    store = MemoryStore()
    store.append("conv", [draft("e1"), draft("e2"), draft("e3")])
    store.append("other", [draft("o1")])
    return store


def _refused_unchanged(
    store: MemoryStore, call: Callable[[MemoryStore], object], error: type[LedgerError]
) -> LedgerError:
    """Run a call that must be refused with ``error``; assert the store did not change."""
    before = memory_state(store)
    with pytest.raises(error) as caught:
        call(store)
    assert memory_state(store) == before
    return caught.value


# -- append ------------------------------------------------------------------------


def test_store_is_a_ledger_store() -> None:
    """CAP-003: the memory store implements the interface and declares ledger."""
    store = MemoryStore()
    assert isinstance(store, LedgerStore)
    assert Capability.LEDGER in store.capabilities


@pytest.mark.parametrize(
    "drafts",
    [[], (), "e1", b"e1", None, draft("e1"), {"e1": draft("e1")}, iter([draft("e1")])],
    ids=lambda value: type(value).__name__,
)
def test_append_needs_a_sequence_of_drafts(drafts: Any) -> None:
    """LED-001: an empty batch or something that is not a sequence is refused."""
    error = _refused_unchanged(_seeded(), lambda s: s.append("conv", drafts), InvalidInputError)
    assert error.requirement == "LED-001"


@pytest.mark.parametrize("item", [None, "e9", {"eventId": "e9"}, 1], ids=repr)
def test_append_items_must_be_drafts(item: object) -> None:
    """LED-001: every item of the batch is an EventDraft."""
    _refused_unchanged(
        _seeded(), lambda s: s.append("conv", [draft("e9"), item]), InvalidInputError
    )


def test_append_batch_size_bounds() -> None:
    """LED-001: 10000 drafts are one append; 10001 are refused."""
    store = MemoryStore()
    batch = [draft(f"b{index}") for index in range(MAX_BATCH + 1)]
    error = _refused_unchanged(store, lambda s: s.append("conv", batch), InvalidInputError)
    assert error.requirement == "LED-001"
    stored = store.append("conv", batch[:MAX_BATCH])
    assert [envelope.seq for envelope in stored] == list(range(1, MAX_BATCH + 1))


@given(st.lists(draft_batches(), min_size=1, max_size=4))
def test_seqs_are_head_plus_one_in_order(batches: list[list[EventDraft]]) -> None:
    """LED-002: each append gets head+1, head+2, ... in the order given."""
    store = MemoryStore()
    seen: set[str] = set()
    expected_seq = 1
    for batch in batches:
        fresh = [d for d in batch if d.event_id not in seen]
        if not fresh:
            continue
        seen.update(d.event_id for d in fresh)
        stored = store.append("conv", fresh)
        assert [e.seq for e in stored] == list(range(expected_seq, expected_seq + len(fresh)))
        assert [e.event_id for e in stored] == [d.event_id for d in fresh]
        assert all(e.conversation_id == "conv" for e in stored)
        expected_seq += len(fresh)
    assert store.head("conv") == expected_seq - 1


def test_conversations_have_their_own_seqs() -> None:
    """LED-002: every conversation counts from 1."""
    store = _seeded()
    assert store.append("third", [draft("t1")])[0].seq == 1
    assert store.append("other", [draft("o2")])[0].seq == 2


@pytest.mark.parametrize(
    ("conversation_id", "batch"),
    [
        ("conv", [draft("e2")]),
        ("other", [draft("e1")]),
        ("new", [draft("x"), draft("o1")]),
        ("conv", [draft("x"), draft("x")]),
    ],
    ids=["same-conversation", "other-conversation", "second-in-batch", "twice-in-batch"],
)
def test_repeated_event_id_refused(conversation_id: str, batch: list[EventDraft]) -> None:
    """LED-003: an eventId stored anywhere, or twice in the batch, is refused with duplicate."""
    error = _refused_unchanged(
        _seeded(), lambda s: s.append(conversation_id, batch), DuplicateError
    )
    assert error.kind == "duplicate"


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (draft("e9", kind="future/kind"), InvalidInputError),
        (draft("e9", occurred_at="2024-05-01"), InvalidInputError),
        (draft("e9", payload={"actor": "a"}), InvalidInputError),
        (draft("e1"), DuplicateError),
    ],
    ids=["unregistered", "bad-date", "bad-payload", "duplicate"],
)
def test_append_is_all_or_nothing(bad: EventDraft, error: type[LedgerError]) -> None:
    """LED-004: one refused draft stores nothing of its batch and consumes no seq."""
    store = _seeded()
    _refused_unchanged(store, lambda s: s.append("conv", [draft("n1"), bad, draft("n2")]), error)
    assert store.append("conv", [draft("n1")])[0].seq == 4


def test_expected_head_matches() -> None:
    """LED-005: an append with the right expected head succeeds."""
    store = _seeded()
    assert store.append("conv", [draft("n1")], expected_head=3)[0].seq == 4
    assert store.append("fresh", [draft("f1")], expected_head=0)[0].seq == 1


@pytest.mark.parametrize("expected", [0, 2, 4, 100])
def test_expected_head_mismatch_is_conflict_with_actual_head(expected: int) -> None:
    """LED-005, ERR-005: a stale expected head is a conflict carrying the actual head."""
    error = _refused_unchanged(
        _seeded(), lambda s: s.append("conv", [draft("n1")], expected_head=expected), ConflictError
    )
    assert isinstance(error, ConflictError)
    assert error.actual == 3


@pytest.mark.parametrize("expected", [-1, True, 1.0, "3", [3]], ids=repr)
def test_expected_head_must_be_a_count(expected: Any) -> None:
    """LED-005: an expected head that is not an integer >= 0 is invalid_input."""
    error = _refused_unchanged(
        _seeded(), lambda s: s.append("conv", [draft("n1")], expected_head=expected),
        InvalidInputError,
    )
    assert error.requirement == "LED-005"


@pytest.mark.parametrize("conversation_id", ["", None, 1, "a\ud800"], ids=repr)
def test_conversation_id_checked(conversation_id: Any) -> None:
    """ENV-005: the conversationId of an append, read, head or export is a non-empty string."""
    store = _seeded()
    _refused_unchanged(store, lambda s: s.append(conversation_id, [draft("n")]), InvalidInputError)
    for call in (store.read, store.head, store.export_conversation):
        with pytest.raises(InvalidInputError):
            call(conversation_id)


@pytest.mark.parametrize(
    "changes",
    [
        {"event_id": ""},
        {"kind": ""},
        {"schema_version": 0},
        {"occurred_at": "2024-05-01T12:00:00"},
        {"payload": {"actor": "a", "name": "n", "value": float("nan"), "version": 1}},
        {"ignorable": "yes"},
    ],
    ids=repr,
)
def test_draft_must_satisfy_env_and_knd(changes: dict[str, Any]) -> None:
    """LED-006: a draft breaking chapter ENV or KND is refused before it is stored."""
    bad = attrs.evolve(draft("n1"), **changes)
    _refused_unchanged(_seeded(), lambda s: s.append("conv", [bad]), InvalidInputError)


# -- bounded read ------------------------------------------------------------------


def _filled(count: int) -> MemoryStore:
    store = MemoryStore()
    if count:
        store.append("conv", [draft(f"e{seq}", value=seq) for seq in range(1, count + 1)])
    return store


def test_read_defaults() -> None:
    """LED-007: from 1, no upper bound, limit 1000."""
    store = _filled(1001)
    page = store.read("conv")
    assert [e.seq for e in page.items] == list(range(1, 1001))
    assert page.next_seq == 1001
    assert [e.seq for e in store.read("conv", from_seq=1001).items] == [1001]


@given(
    st.integers(0, 12),
    st.integers(1, 15),
    st.none() | st.integers(1, 15),
    st.integers(1, 6),
)
def test_read_window_and_cursor(count: int, from_seq: int, to_seq: int | None, limit: int) -> None:
    """LED-008, LED-009, LED-011: the window in order, limited, with nextSeq exactly when more."""
    if to_seq is not None and to_seq < from_seq:
        to_seq = from_seq
    store = _filled(count)
    last = count if to_seq is None else min(count, to_seq)
    window = list(range(from_seq, last + 1))
    page = store.read("conv", from_seq=from_seq, to_seq=to_seq, limit=limit)
    assert [e.seq for e in page.items] == window[:limit]
    assert page.next_seq == (window[limit - 1] + 1 if len(window) > limit else None)


@given(st.integers(0, 20), st.integers(1, 7))
def test_following_next_seq_reads_everything_once(count: int, limit: int) -> None:
    """LED-009: following nextSeq until it is absent returns every event exactly once."""
    store = _filled(count)
    seqs: list[int] = []
    next_seq: int | None = 1
    while next_seq is not None:
        page = store.read("conv", from_seq=next_seq, limit=limit)
        seqs.extend(e.seq for e in page.items)
        next_seq = page.next_seq
    assert seqs == list(range(1, count + 1))


def test_to_seq_is_inclusive() -> None:
    """LED-007: toSeq is inclusive."""
    assert [e.seq for e in _filled(5).read("conv", from_seq=2, to_seq=4).items] == [2, 3, 4]


@pytest.mark.parametrize(
    "window",
    [
        {"limit": 0},
        {"limit": 10_001},
        {"limit": -1},
        {"limit": 1.0},
        {"limit": True},
        {"limit": None},
        {"from_seq": 0},
        {"from_seq": -5},
        {"from_seq": "1"},
        {"to_seq": 0},
        {"to_seq": 1.5},
        {"from_seq": 3, "to_seq": 2},
    ],
    ids=repr,
)
def test_read_arguments_refused(window: dict[str, Any]) -> None:
    """LED-010: a bad limit, fromSeq or toSeq is invalid_input."""
    with pytest.raises(InvalidInputError) as caught:
        _filled(3).read("conv", **window)
    assert caught.value.requirement == "LED-010"


def test_read_limit_bounds_accepted() -> None:
    """LED-010: limits 1 and 10000 are allowed."""
    store = _filled(2)
    assert len(store.read("conv", limit=1).items) == 1
    assert len(store.read("conv", limit=10_000).items) == 2


@pytest.mark.parametrize(
    ("conversation_id", "from_seq"), [("missing", 1), ("conv", 4), ("conv", 2**60)]
)
def test_empty_read_is_not_an_error(conversation_id: str, from_seq: int) -> None:
    """LED-011: no events, or a window after the head, is an empty page without nextSeq."""
    page = _filled(3).read(conversation_id, from_seq=from_seq)
    assert page.items == ()
    assert page.next_seq is None


def test_head() -> None:
    """LED-012: the last seq, or 0 without events."""
    store = _seeded()
    assert (store.head("conv"), store.head("other"), store.head("missing")) == (3, 1, 0)


# -- consistency -------------------------------------------------------------------


def test_concurrent_appends_from_threads() -> None:
    """LED-013: appends from many threads get contiguous, unrepeated seqs and unique ids."""
    store = MemoryStore()
    threads_count, batches, size = 8, 20, 3
    start = threading.Barrier(threads_count)
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        start.wait()
        try:
            for batch in range(batches):
                store.append(
                    "conv", [draft(f"w{worker}-{batch}-{item}") for item in range(size)]
                )
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads_count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    total = threads_count * batches * size
    items = store.read("conv", limit=10_000).items
    assert [e.seq for e in items] == list(range(1, total + 1))
    assert len({e.event_id for e in items}) == total
    for first in range(0, total, size):
        prefixes = {e.event_id.rsplit("-", 1)[0] for e in items[first : first + size]}
        assert len(prefixes) == 1, "a batch was interleaved with another"


def test_concurrent_duplicate_appends_one_wins() -> None:
    """LED-013: of many threads appending the same eventId, exactly one succeeds."""
    store = MemoryStore()
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(6)

    def writer() -> None:
        start.wait()
        try:
            store.append("conv", [draft("same")])
            result = "stored"
        except DuplicateError:
            result = "duplicate"
        with lock:
            outcomes.append(result)

    workers = [threading.Thread(target=writer) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(outcomes) == ["duplicate"] * 5 + ["stored"]
    assert store.head("conv") == 1


def test_mutating_the_draft_payload_after_append_changes_nothing() -> None:
    """LED-014: the caller's payload object is not the stored one."""
    store = MemoryStore()
    value: dict[str, Any] = {"list": [1, 2], "nested": {"a": "b"}}
    payload = state_set(value)
    store.append("conv", [draft("e1", payload=payload)])
    before = store.export_conversation("conv")
    value["list"].append(3)
    value["nested"]["a"] = "changed"
    payload["actor"] = "someone else"
    assert store.export_conversation("conv") == before


def test_mutating_returned_envelopes_changes_nothing() -> None:
    """LED-014: payloads returned by append and read are copies."""
    store = MemoryStore()
    stored = store.append("conv", [draft("e1", value={"list": [1]})])
    before = store.export_conversation("conv")
    payload = stored[0].payload
    assert isinstance(payload, dict)
    payload["value"]["list"].append("from append")
    read_payload = store.read("conv").items[0].payload
    assert isinstance(read_payload, dict)
    read_payload["value"]["list"].append("from read")
    read_payload["actor"] = "x"
    assert store.export_conversation("conv") == before


@given(draft_batches())
def test_read_returns_the_appended_canonical_bytes(batch: list[EventDraft]) -> None:
    """ENV-011: append and read return envelopes with the same canonical bytes."""
    store = MemoryStore()
    stored = store.append("conv", batch)
    assert wire_events(store.read("conv").items) == wire_events(stored)
    for envelope, original in zip(stored, batch, strict=True):
        assert canonical.encode(envelope.payload) == canonical.encode(original.payload)
        assert envelope.occurred_at == original.occurred_at


def test_reopen_not_supported() -> None:
    """LED-015, CAP-002: the memory store does not declare persistence and refuses reopen."""
    store = MemoryStore()
    assert Capability.PERSISTENCE not in store.capabilities
    with pytest.raises(NotSupportedError) as caught:
        store.reopen()
    assert caught.value.kind == "not_supported"


# -- regressions -------------------------------------------------------------------


def test_tuple_and_read_only_mapping_payloads_accepted() -> None:
    """KND-003: a tuple is a JSON array and a read-only mapping an object (regression)."""
    store = MemoryStore()
    payload = MappingProxyType(state_set(("a", MappingProxyType({"k": (1, 2)}))))
    stored = store.append("conv", [draft("e1", payload=payload)])
    assert stored[0].payload == state_set(["a", {"k": [1, 2]}])
    assert canonical.encode(store.read("conv").items[0].payload) == canonical.encode(payload)


def test_deeply_nested_payload_appends_and_reads() -> None:
    """LED-014, ENV-011, LIM-005: a payload nested 128 deep (the limit) is stored and copied."""
    value: Any = "leaf"
    for _ in range(127):  # the payload object is the 128th level
        value = [value]
    store = MemoryStore()
    stored = store.append("conv", [draft("e1", value=value)])
    assert store.read("conv").items[0].canonical_bytes() == stored[0].canonical_bytes()


def test_payload_too_deep_to_read_back_refused() -> None:
    """LIM-005: a payload nested 5,000 deep is refused unstored; the encoder stops at level 129."""
    value: Any = 0
    for _ in range(5_000):
        value = [value]
    error = _refused_unchanged(
        _seeded(), lambda s: s.append("conv", [draft("n1", value=value)]), InvalidInputError
    )
    assert error.requirement == "LIM-005"
