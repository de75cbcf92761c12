"""Bounded operational reads on MemoryStore (spec ``transitions.md``, TRN-080 .. TRN-085)."""

from __future__ import annotations

import pytest

from convledger.errors import InvalidInputError
from convledger.memory import MemoryStore
from convledger.runtime import Accept, Acquire, RecoveryCursor
from test_runtime_memory import scan_all
from test_runtime_rules import AT

CONVERSATIONS = ["\U00010000", "a", "B", "\uffff", "é", "a\x00", "Z"]
"""Ids whose code-point order differs from UTF-16 order and from case-folded order."""


def running_everywhere() -> MemoryStore:
    """One running run in each conversation of CONVERSATIONS."""
    store = MemoryStore()
    for index, conversation in enumerate(CONVERSATIONS):
        store.transition(conversation, Accept("k", "i", "r", "a", {}), event_id=f"e{index}a",
                         occurred_at=AT)
        store.transition(conversation, Acquire("r", "w"), event_id=f"e{index}b", occurred_at=AT)
    return store


def test_scan_orders_by_conversation_code_points() -> None:
    """TRN-083/TRN-085: recoverable runs come in code-point (UTF-8 byte) order of conversationId."""
    store = running_everywhere()
    found = [run.conversation_id for run in store.scan_recoverable().runs]
    assert found == sorted(CONVERSATIONS, key=lambda c: c.encode("utf-8"))
    assert found == sorted(CONVERSATIONS)
    assert found.index("\uffff") < found.index("\U00010000")


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 8])
def test_scan_cursor_returns_each_recoverable_run_once(limit: int) -> None:
    """TRN-084: next is present exactly when more follow; following it returns each run once."""
    store = running_everywhere()
    seen = []
    cursor = None
    pages = 0
    while True:
        page = store.scan_recoverable(after=cursor, limit=limit)
        pages += 1
        seen.extend(run.conversation_id for run in page.runs)
        assert len(page.runs) <= limit
        if page.next is None:
            break
        assert page.next == RecoveryCursor.after(page.runs[-1])
        cursor = page.next
    assert seen == sorted(CONVERSATIONS)
    assert pages == -(-len(CONVERSATIONS) // limit)
    assert [run.conversation_id for run in scan_all(store)] == seen


def test_scan_skips_queued_and_terminal_runs() -> None:
    """TRN-083: only running and interrupt_requested runs are recoverable."""
    store = MemoryStore()
    store.transition("c", Accept("k", "i", "r", "a", {}), event_id="e1", occurred_at=AT)
    assert store.scan_recoverable().runs == ()
    assert store.scan_recoverable().next is None


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 2.0, "5", None])
def test_scan_limit_out_of_range_is_invalid_input(limit: object) -> None:
    """TRN-083: limit must be an integer from 1 to 1000."""
    with pytest.raises(InvalidInputError):
        MemoryStore().scan_recoverable(limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "after",
    [("c", 1), RecoveryCursor("", 1), RecoveryCursor("c", True), RecoveryCursor("c", "1")],  # type: ignore[arg-type]
)
def test_malformed_cursor_is_invalid_input(after: object) -> None:
    """TRN-083: a cursor that is not a (conversationId, ordinal) pair is invalid_input."""
    with pytest.raises(InvalidInputError):
        MemoryStore().scan_recoverable(after=after)  # type: ignore[arg-type]


def test_scan_limit_defaults_to_one_hundred() -> None:
    """TRN-083: without a limit a page holds at most 100 runs."""
    store = MemoryStore()
    for n in range(101):
        conversation = f"c{n:03d}"
        store.transition(conversation, Accept("k", "i", "r", "a", {}), event_id=f"{n}a",
                         occurred_at=AT)
        store.transition(conversation, Acquire("r", "w"), event_id=f"{n}b", occurred_at=AT)
    page = store.scan_recoverable()
    assert len(page.runs) == 100 and page.next == RecoveryCursor("c099", 1)
    assert [run.conversation_id for run in store.scan_recoverable(after=page.next).runs] == [
        "c100"]


def test_active_runs_are_ordered_by_ordinal_not_by_run_id() -> None:
    """TRN-081/TRN-085: list_active_runs is by ordinal, never by run id."""
    store = MemoryStore()
    for n, run_id in enumerate(["zeta", "alpha", "Mu"]):
        store.transition("c", Accept(f"k{n}", f"i{n}", run_id, f"a{n}", {}), event_id=f"e{n}",
                         occurred_at=AT)
        if n == 0:
            store.transition("c", Acquire("zeta", "w"), event_id="acq", occurred_at=AT)
    runs = store.list_active_runs("c")
    assert [(run.run_id, run.ordinal) for run in runs] == [("zeta", 1), ("alpha", 2)]
    snapshot = store.load_snapshot("c")
    assert snapshot.active_runs == runs and snapshot.head.version == 4


def test_load_run_never_crosses_conversations() -> None:
    """TRN-080: load_run answers the run of the named conversation only."""
    store = MemoryStore()
    store.transition("c1", Accept("k", "i", "r", "a", {"c": 1}), event_id="e1", occurred_at=AT)
    store.transition("c2", Accept("k", "i", "r", "a", {"c": 2}), event_id="e2", occurred_at=AT)
    store.transition("c2", Acquire("r", "w"), event_id="e3", occurred_at=AT)
    first, second = store.load_run("c1", "r"), store.load_run("c2", "r")
    assert first is not None and second is not None
    assert (first.conversation_id, first.owner) == ("c1", None)
    assert (second.conversation_id, second.owner) == ("c2", "w")
    assert store.load_run("c3", "r") is None
