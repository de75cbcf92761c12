"""Checks of chapter FCT: state slots, schedules, child graphs and sandbox probes.

Each body drives the reference step loop (:class:`convledger.host.Host`) with
deterministic fakes on the store under test, so ``tests/test_gallery_facts.py``
can run the same bodies against broken hosts.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.envelope import Envelope, EventDraft
from convledger.host import (
    FakeChildExecutor,
    FakeClock,
    FakeProvider,
    FakeSandboxProber,
    FakeTimer,
    Host,
    SequentialIds,
    events_of,
)
from convledger.host.rows import ChildLink, ScheduleRow
from convledger.host.rules import LEAVE_CHILDREN, STOP_CHILDREN
from convledger.interface import require
from convledger.projections.builtins import fold_state_slots
from convledger.runtime.records import RESERVED_REASONS
from convledger.sqlite import SqliteStore
from convledger.store import Capability, LedgerStore
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.sqlite.checks import sqlite_store
from convledger_conformance.support import STAMP, fail, refused, run_once

PARENT = "conv-parent"
OTHER = "conv-other"


def host_for(
    host_class: type[Host],
    store: LedgerStore,
    *,
    clock: FakeClock | None = None,
    children: FakeChildExecutor | None = None,
    prober: FakeSandboxProber | None = None,
    namespace: str = "f",
) -> Host:
    """A host with fresh fakes (a provider that always answers)."""
    return host_class(
        store,
        clock=clock or FakeClock(),
        ids=SequentialIds(namespace),
        provider=FakeProvider(),
        timer=FakeTimer(),
        children=children or FakeChildExecutor(),
        prober=prober or FakeSandboxProber(()),
    )


def facts(store: LedgerStore, conversation: str, prefix: str) -> list[tuple[str, Any]]:
    """``(kind, payload)`` of the conversation's events whose kind starts with ``prefix``."""
    return [
        (event.kind, event.payload)
        for event in events_of(store, conversation)
        if event.kind.startswith(prefix)
    ]


def state_slots(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """Versions count per slot and the projection gives the last values (FCT-001)."""
    host = host_for(host_class, store)
    versions = [
        host.set_state(PARENT, "mood", "calm", actor="user"),
        host.set_state(PARENT, "topic", {"name": "tea"}, actor="agent"),
        host.set_state(PARENT, "mood", "busy", actor="agent"),
    ]
    recorded = [payload["version"] for _, payload in facts(store, PARENT, "state/set")]
    if versions != [1, 1, 2] or recorded != [1, 1, 2]:
        fail("FCT-001", f"slot versions {versions} / recorded {recorded}, expected [1, 1, 2]")
    slots: JsonValue = {}
    events: list[Envelope] = list(events_of(store, PARENT))
    for event in events:
        slots = fold_state_slots(slots, event)
    assert isinstance(slots, dict)
    values = {name: slot["value"] for name, slot in slots.items() if isinstance(slot, dict)}
    if values != {"mood": "busy", "topic": {"name": "tea"}}:
        fail("FCT-001", f"the state-slots projection gives {values!r}")


@check("FCT-001")
def check_state_slots(ctx: CheckContext) -> None:
    """``state/set`` versions count per slot; current values are the projection."""
    run_once(ctx, state_slots)


def schedules(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """On time, late, every, cancelled and failing schedules record their facts (FCT-010..014)."""
    clock = FakeClock()
    host = host_for(host_class, store, clock=clock)

    def broken_action() -> None:
        raise RuntimeError("mail server down")

    host.set_schedule(PARENT, "on-time", after_ms=1000)
    host.set_schedule(PARENT, "late", after_ms=1200, action=broken_action)
    host.set_schedule(PARENT, "tick", after_ms=1000, every=True)
    host.set_schedule(PARENT, "dropped", after_ms=500)
    host.cancel_schedule("dropped")
    clock.advance(1000)
    host.fire_due()
    clock.advance(700)
    host.fire_due()
    got = [(kind, payload.get("id"), payload.get("lateByMs"))
           for kind, payload in facts(store, PARENT, "schedule/")]
    expected = [
        ("schedule/set", "on-time", None), ("schedule/set", "late", None),
        ("schedule/set", "tick", None), ("schedule/set", "dropped", None),
        ("schedule/cancelled", "dropped", None),
        ("schedule/fired", "on-time", 0), ("schedule/fired", "tick", 0),
        ("schedule/late", "late", 500), ("schedule/fired", "late", 500),
        ("schedule/failed", "late", None),
    ]
    if got != expected:
        ids = ("FCT-010", "FCT-011", "FCT-012", "FCT-013", "FCT-014")
        fail(ids, f"schedule facts {got!r}, expected {expected!r}")
    tick = [payload for kind, payload in facts(store, PARENT, "schedule/fired")
            if payload["id"] == "tick"]
    if tick[0]["nextAt"] != "2026-01-01T00:00:02.000+00:00" or tick[0]["occurrence"] != 1:
        fail("FCT-011", f"an every schedule fired as {tick[0]!r}")


@check("FCT-010", "FCT-011", "FCT-012", "FCT-013", "FCT-014", optional=(Capability.FACT_ROWS,))
def check_schedules(ctx: CheckContext) -> None:
    """A fake clock drives on-time, late, repeating, cancelled and failing schedules."""
    run_once(ctx, schedules)


def spawning(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """A refused spawn leaves no event; a spawn is recorded on both sides (FCT-020)."""
    executor = FakeChildExecutor(refuse=["kid-refused"])
    host = host_for(host_class, store, children=executor)
    if host.spawn_child(PARENT, "kid-refused", budget={"steps": 1}):
        fail("FCT-020", "a refused spawn answered spawned")
    if facts(store, PARENT, "child/") or facts(store, "kid-refused", "child/"):
        fail("FCT-020", "a refused spawn left child facts")
    host.spawn_child(PARENT, "kid", budget={"steps": 2})
    state = {"parentConversationId": PARENT, "childConversationId": "kid", "state": "spawned"}
    parent = facts(store, PARENT, "child/")
    expected = [("child/spawned", {"childConversationId": "kid", "seedUptoSeq": 0,
                                   "budget": {"steps": 2}}), ("child/state", state)]
    if parent != expected or facts(store, "kid", "child/") != [("child/state", state)]:
        fail("FCT-020", f"spawn recorded as {parent!r}")


@check("FCT-020", optional=(Capability.FACT_ROWS,))
def check_spawn_then_record(ctx: CheckContext) -> None:
    """The executor spawns first; a refused spawn leaves no spawned child."""
    run_once(ctx, spawning)


def fate_table(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """Every terminal reason decides the children as the ADR's table says (FCT-021, FCT-022)."""
    reasons = sorted((STOP_CHILDREN | LEAVE_CHILDREN) - RESERVED_REASONS)
    for index, reason in enumerate(reasons):
        conversation = f"conv-{index}"
        near, far = f"kid-{index}-a", f"kid-{index}-b"
        executor = FakeChildExecutor(unreachable=[far])
        host = host_for(host_class, store, children=executor, namespace=f"f{index}")
        run_id = host.accept(conversation, "go")
        host.run(conversation, run_id, spawn=[near, far], end_reason=reason)
        states = {payload["childConversationId"]: payload["state"]
                  for _, payload in facts(store, conversation, "child/state")}
        own = [payload["state"] for _, payload in facts(store, near, "child/state")]
        if reason in STOP_CHILDREN:
            expected, own_expected, running = (
                {near: "stopped", far: "lost"}, ["spawned", "stopped"], {far},
            )
        else:
            expected, own_expected, running = (
                {near: "spawned", far: "spawned"}, ["spawned"], {near, far},
            )
        if states != expected or own != own_expected or executor.running != running:
            ids = "FCT-021" if reason in STOP_CHILDREN else "FCT-022"
            fail(ids, f"parent {reason}: children {states!r} / {own!r}, expected {expected!r}")


@check("FCT-021", "FCT-022", capability=Capability.TRANSITIONS, optional=(Capability.FACT_ROWS,))
def check_children_fate_table(ctx: CheckContext) -> None:
    """Stopping reasons stop (or lose) the children; every other terminal leaves them."""
    run_once(ctx, fate_table)


def purged_parent(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """A child settling after its parent's purge records on its own side only (FCT-023)."""
    purging = require(store, Capability.PURGE)
    host = host_for(host_class, store)
    host.spawn_child(PARENT, "kid", budget={})
    host.settle_child(PARENT, "kid", "running")
    purging.purge(PARENT)
    host.settle_child(PARENT, "kid", "finished")
    own = [payload["state"] for _, payload in facts(store, "kid", "child/state")]
    if own != ["spawned", "running", "finished"] or store.head(PARENT) != 0:
        fail("FCT-023", f"child states {own!r}, parent head {store.head(PARENT)}")


@check("FCT-023", also=(Capability.PURGE,), optional=(Capability.FACT_ROWS,))
def check_child_outlives_a_purged_parent(ctx: CheckContext) -> None:
    """A purged parent takes no more events; the child records its state on its own side."""
    run_once(ctx, purged_parent)


def sandbox(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """Available, degraded and unavailable probes are recorded as such (FCT-030)."""
    host = host_for(host_class, store, prober=FakeSandboxProber(["net"]))
    results = [host.probe_sandbox(PARENT, required)
               for required in (["net"], ["net", "fs"], ["fs", "gpu"])]
    recorded = [payload for _, payload in facts(store, PARENT, "sandbox/probed")]
    expected = [
        {"result": "available", "required": ["net"], "missing": []},
        {"result": "degraded", "required": ["net", "fs"], "missing": ["fs"]},
        {"result": "unavailable", "required": ["fs", "gpu"], "missing": ["fs", "gpu"]},
    ]
    if recorded != expected or results != ["available", "degraded", "unavailable"]:
        fail("FCT-030", f"probes recorded as {recorded!r}")


@check("FCT-030")
def check_sandbox_probes(ctx: CheckContext) -> None:
    """``sandbox/probed`` records the result, the required and the missing capabilities."""
    run_once(ctx, sandbox)


BODIES = {
    "state_slots": state_slots,
    "schedules": schedules,
    "spawning": spawning,
    "fate_table": fate_table,
    "purged_parent": purged_parent,
    "sandbox": sandbox,
}
"""The check bodies by name, for running them against broken hosts."""


# -- rows beside the ledger, on every store declaring fact_rows (FCT-024, TRN-093) -------------


UTF16_REORDERS = ("\U0001f600", "\ufb01")
"""Two ids in UTF-16 code-unit order, the reverse of their code-point order (FCT-024)."""


def _rows_written(store: LedgerStore) -> dict[tuple[str, str], tuple[object, ...]]:
    """Write links and schedules of two owners, each key twice; the rows expected back."""
    rows = require(store, Capability.FACT_ROWS)
    links = [ChildLink(PARENT, child, "spawned", 0, {}) for child in ("kid-b", "kid-a")]
    links.append(ChildLink(OTHER, "kid-c", "spawned", 0, {}))
    plans = [ScheduleRow(PARENT, "s-b", "at", STAMP, "active", 0),
             ScheduleRow(PARENT, "s-a", "every", STAMP, "active", 0),
             ScheduleRow(OTHER, "s-c", "after", STAMP, "active", 0)]
    # ids that UTF-16 code units order the other way round (U+1F600 before U+FB01)
    astral = [ChildLink(PARENT, child, "spawned", 0, {}) for child in UTF16_REORDERS]
    timers = [ScheduleRow(PARENT, s, "at", STAMP, "active", 0) for s in UTF16_REORDERS]
    written: list[ChildLink | ScheduleRow] = [*links, *plans, *astral, *timers]
    for row in written:
        rows.write_fact_rows(row, [])
    running = attrs.evolve(links[1], state="running")
    fired = attrs.evolve(plans[1], state="done", next_at=None, occurrence=1)
    rows.write_fact_rows(running, [])
    rows.write_fact_rows(fired, [])
    return {
        ("child_links", PARENT): (running, links[0], astral[1], astral[0]),
        ("child_links", OTHER): (links[2],),
        ("schedules", PARENT): (fired, plans[0], timers[1], timers[0]),
        ("schedules", OTHER): (plans[2],),
    }


def _rows_read(
    store: LedgerStore, expected: dict[tuple[str, str], tuple[object, ...]]
) -> dict[tuple[str, str], tuple[object, ...]]:
    rows = require(store, Capability.FACT_ROWS)
    return {(name, owner): tuple(getattr(rows, name)(owner)) for name, owner in expected}


def fact_rows(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """Rows read back as last written, per owner, by id (FCT-024)."""
    expected = _rows_written(store)
    found = _rows_read(store, expected)
    if found != expected:
        fail("FCT-024", f"rows beside the ledger read {found!r}, expected {expected!r} (the "
             "last write of each key, ordered by id, of that owner only)")


def purged_rows(store: LedgerStore, *, host_class: type[Host] = Host) -> None:
    """A purge takes its conversation's schedules and keeps every child link (TRN-093)."""
    expected = _rows_written(store)
    require(store, Capability.PURGE).purge(PARENT)
    expected[("schedules", PARENT)] = ()
    found = _rows_read(store, expected)
    if found != expected:
        fail("TRN-093", f"after purging {PARENT!r} the rows read {found!r}, expected "
             f"{expected!r} (its schedules go, child links outlive the purge, the other "
             "conversation's rows stay)")


@check("FCT-024", capability=Capability.FACT_ROWS)
def check_fact_rows_read_back(ctx: CheckContext) -> None:
    """Links and schedules read back per owner as last written, ordered by id."""
    run_once(ctx, fact_rows)


@check("TRN-093", capability=Capability.PURGE, also=(Capability.FACT_ROWS,))
def check_purge_takes_schedules_keeps_links(ctx: CheckContext) -> None:
    """A purge deletes the conversation's schedules, keeps child links and other rows."""
    run_once(ctx, purged_rows)


# -- the SQLite store's rows beside the ledger (SQL-068, SQL-069) ----------------------------------


def _raw_rows(path: str, table: str) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(path)
    try:
        return list(connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2"))
    finally:
        connection.close()


def sqlite_rows(store: SqliteStore, *, host_class: type[Host] = Host) -> None:
    """Rows and events change together; links outlive purges (SQL-068, SQL-069)."""
    ids = ("SQL-068", "SQL-069")
    clock = FakeClock()
    host = host_for(host_class, store, clock=clock)
    host.spawn_child(PARENT, "kid", budget={"steps": 1})
    link = ChildLink(PARENT, "kid", "spawned", 0, {"steps": 1})
    record = canonical.encode(link.to_json()).decode()
    if _raw_rows(str(store.path), "children") != [(PARENT, "kid", "spawned", 0, record)]:
        fail(ids, f"children rows {_raw_rows(str(store.path), 'children')!r}")
    host.set_schedule(PARENT, "s", after_ms=10)
    clock.advance(10)
    host.fire_due()
    if [row.state for row in store.schedules(PARENT)] != ["done"]:
        fail("SQL-068", f"schedule rows {store.schedules(PARENT)!r}")
    head = store.head(PARENT)
    clash = EventDraft(next(iter(events_of(store, PARENT))).event_id, "child/state", STAMP,
                       {"parentConversationId": PARENT, "childConversationId": "kid2",
                        "state": "spawned"})
    refused(lambda: store.write_fact_rows(attrs.evolve(link, child_conversation_id="kid2"),
                                          [(PARENT, [clash])]),
            "duplicate", "SQL-068", "a row write whose event clashes")
    if store.head(PARENT) != head or len(store.child_links(PARENT)) != 1:
        fail("SQL-068", "a refused row write left its row or events")
    host.settle_child(PARENT, "kid", "running")
    store.purge(PARENT)
    refused(lambda: store.write_fact_rows(link, [(PARENT, [])]), "purged", "SQL-068",
            "a row write naming a purged conversation")
    host.settle_child(PARENT, "kid", "finished")
    store.purge("kid")
    host.settle_child(PARENT, "kid", "stopped")
    states = [row.state for row in store.child_links(PARENT)]
    if states != ["stopped"] or [row[2] for row in _raw_rows(str(store.path), "children")] != [
        "stopped"
    ]:
        fail("SQL-069", f"after both purges the link reads {states!r}")


@check("SQL-068", "SQL-069", capability=Capability.MIGRATION)
def check_sqlite_child_links_and_schedules(ctx: CheckContext) -> None:
    """The SQLite store writes links and schedules with their events and keeps links on purge."""
    with sqlite_store(ctx, ("SQL-068", "SQL-069")) as store:
        sqlite_rows(store)
