"""Child links and schedules beside the ledger in the in-memory store, through the step loop."""

from __future__ import annotations

import pytest

from convledger.errors import DuplicateError, NotSupportedError, PurgedError
from convledger.host import FakeClock, Host, events_of
from convledger.host.rows import ChildLink, ScheduleRow
from convledger.memory import MemoryStore
from convledger.store import Capability
from convledger_conformance.facts.checks_facts import host_for


def test_memory_store_keeps_links_through_both_purges() -> None:
    """A link outlives the purge of parent and child; the last state lands on the row alone."""
    store = MemoryStore()
    host = host_for(Host, store)
    host.spawn_child("p", "k", budget={"steps": 1})
    assert store.child_links("p") == (ChildLink("p", "k", "spawned", 0, {"steps": 1}),)
    store.purge("p")
    host.settle_child("p", "k", "finished")
    assert [event.payload["state"] for event in events_of(store, "k")  # type: ignore[index]
            ] == ["spawned", "finished"]
    store.purge("k")
    host.settle_child("p", "k", "stopped")
    assert [link.state for link in store.child_links("p")] == ["stopped"]


def test_memory_store_row_writes_are_all_or_nothing() -> None:
    """A clashing event id or a purged conversation leaves neither row nor events."""
    store = MemoryStore()
    host = host_for(Host, store)
    host.spawn_child("p", "k", budget={})
    first = next(iter(events_of(store, "p")))
    row = ChildLink("p", "k2", "spawned", 0, {})
    with pytest.raises(DuplicateError):
        store.write_fact_rows(row, [("p", [first])])
    assert len(store.child_links("p")) == 1
    store.purge("x")
    with pytest.raises(PurgedError):
        store.write_fact_rows(row, [("p", []), ("x", [])])
    assert len(store.child_links("p")) == 1


def test_schedule_rows_follow_their_facts_and_purge_drops_them() -> None:
    """set, fire and cancel update the schedule rows; a purge deletes them."""
    clock = FakeClock()
    store = MemoryStore()
    host = host_for(Host, store, clock=clock)
    host.set_schedule("c", "once", after_ms=5)
    host.set_schedule("c", "never", after_ms=50)
    clock.advance(5)
    host.fire_due()
    host.cancel_schedule("never")
    assert [(row.schedule_id, row.state, row.occurrence) for row in store.schedules("c")] == [
        ("never", "cancelled", 0), ("once", "done", 1)]
    assert isinstance(store.schedules("c")[0], ScheduleRow)
    store.purge("c")
    assert store.schedules("c") == ()


def test_a_store_without_rows_refuses_and_the_loop_still_records_events() -> None:
    """Without capability fact_rows the row operations refuse; the loop appends events alone."""

    class NoRows(MemoryStore):
        declared = MemoryStore.declared - {Capability.FACT_ROWS}

    store = NoRows()
    host = host_for(Host, store)
    host.spawn_child("p", "k", budget={})
    host.settle_child("p", "k", "running")
    kinds = [event.kind for event in events_of(store, "p")]
    assert kinds == ["child/spawned", "child/state", "child/state"]
    with pytest.raises(NotSupportedError):
        store.child_links("p")
