"""Checks of capability ``multi_process`` (chapter LED, "Several handles": LED-016 .. LED-019).

Engine-neutral: these checks use only the store interface and
:mod:`convledger.handles`. A second handle in this process is
``store.open_handle()``; another process is
``python -m convledger_conformance.ledger.handle_worker LOCATOR`` opening
``store.locator()`` with :func:`convledger.handles.open_located`. Nothing here
names a file, a connection or an engine, so a server-database store passes
them exactly as the SQLite store does. What SQLite does to keep these promises
(``BEGIN IMMEDIATE``, its busy timeout, one read transaction per export) is
checked in :mod:`convledger_conformance.sqlite.checks_transactions`.

Every failure names the operation, the handle it went through, what was
expected and what came.

The second handles, worker processes and appending threads they use are in
:mod:`convledger_conformance.ledger.handles_support`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

from convledger.handles import StoreLocator, checked, open_located
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.handles_support import (
    Worker,
    _appender,
    _batches,
    _summary,
    _threads,
    expect_batches_placed,
    handles_of,
    ledger_of,
    second_handles,
    workers,
)
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import accepted, draft, fail, fresh_store

# -- the interface itself -----------------------------------------------------------------------


@check("LED-016", capability=Capability.MULTI_PROCESS)
def check_handle_contract(ctx: CheckContext) -> None:
    """LED-016: open_handle and locator give independent handles onto the same store."""
    ids = ("LED-016",)
    with fresh_store(ctx) as store:
        source = handles_of(store, ids)
        locator = accepted(source.locator, ids, "locator")
        try:
            checked(locator)
            again = StoreLocator.from_json(locator.to_json())
        except Exception as error:
            fail(ids, f"locator: expected a well-formed StoreLocator, got {locator!r} ({error})")
        if again != locator:
            fail(ids, f"locator through JSON: expected {locator!r}, got {again!r}")
        with second_handles(store, 1, ids) as (handle,):
            located = accepted(lambda: open_located(locator), ids, "open_located(locator)")
            try:
                for name, other in (("open_handle()", handle), ("open_located", located)):
                    if other is store or not isinstance(other, LedgerStore):
                        fail(ids, f"{name}: expected another LedgerStore handle, got {other!r}")
                    if other.capabilities != store.capabilities:
                        fail(ids, f"capabilities through {name}: expected "
                                  f"{sorted(c.value for c in store.capabilities)}, got "
                                  f"{sorted(c.value for c in other.capabilities)}")
                store.append("c", [draft("contract-1")])
                for name, other in (("open_handle()", handle), ("open_located", located)):
                    if other.head("c") != 1:
                        fail(ids, f"head through {name} after an append through the first "
                                  f"handle: expected 1, got {other.head('c')}")
                located.append("c", [draft("contract-2")])
                handle.close()
                placed = accepted(lambda: store.append("c", [draft("contract-3")]), ids,
                                  "append through the first handle after another was closed")
                if placed[0].seq != 3:
                    fail(ids, f"append after a handle was closed: expected seq 3, got "
                              f"{placed[0].seq}")
                nested = accepted(handles_of(located, ids).open_handle, ids,
                                  "open_handle of a located handle")
                try:
                    if ledger_of(nested, "c") != [(1, "contract-1"), (2, "contract-2"),
                                                  (3, "contract-3")]:
                        fail(ids, f"read through a handle of a located handle: expected "
                                  f"contract-1..3 at seqs 1..3, got {ledger_of(nested, 'c')!r}")
                finally:
                    nested.close()
            finally:
                located.close()
        if store.head("c") != 3:
            fail(ids, f"head after the other handles closed: expected 3, got {store.head('c')}")


# -- appends through several handles and processes -------------------------------------------


@check("LED-017", capability=Capability.MULTI_PROCESS)
def check_handles_append_together(ctx: CheckContext) -> None:
    """LED-017: threads over three handles append batches at once: 1..n, each batch whole."""
    ids = ("LED-017",)
    with fresh_store(ctx) as store, second_handles(store, 2, ids) as (one, two):
        writers = {"the first handle": store, "the first handle again": store,
                   "open_handle() #1": one, "open_handle() #2": two}
        batches = {name: _batches(f"t{n}", 15) for n, name in enumerate(writers)}
        placed: dict[str, list[list[int]]] = {name: [] for name in writers}
        errors = _threads([_appender(handle, "c", batches[name], placed[name])
                           for name, handle in writers.items()])
        if errors:
            fail(ids, f"append through several handles at once: expected success, got "
                      f"{errors[0]!r}")
        expect_batches_placed(ids, "c", placed, batches, ledger_of(store, "c"))


@check("LED-017", capability=Capability.MULTI_PROCESS)
def check_processes_append_together(ctx: CheckContext) -> None:
    """LED-017: two other processes and this one append batches at once: 1..n, each whole."""
    ids = ("LED-017",)
    with fresh_store(ctx) as store, workers(store, 2, ids) as others:
        batches = {"this process": _batches("p0", 20)}
        for number, worker in enumerate(others, start=1):
            batches[worker.name] = _batches(f"p{number}", 20)
        placed: dict[str, list[list[int]]] = {name: [] for name in batches}
        for worker in others:
            worker.send({"op": "append", "conversation": "shared",
                         "batches": batches[worker.name]})
        try:
            _appender(store, "shared", batches["this process"], placed["this process"])()
        except Exception as error:
            fail(ids, f"append through this process beside two others: expected success, got "
                      f"{error!r}")
        for worker in others:
            placed[worker.name] = worker.placed()
        expect_batches_placed(ids, "shared", placed, batches, ledger_of(store, "shared"))
        for worker in others:  # the other processes read the same ledger
            seen = worker.read("shared")
            if seen != ledger_of(store, "shared"):
                fail(ids, f"read of 'shared' in {worker.name}: expected the ledger this process "
                          f"reads, got {_summary([seq for seq, _ in seen])}")


# -- exports beside appends ---------------------------------------------------------------------


@check("LED-018", capability=Capability.MULTI_PROCESS)
def check_exports_hold_whole_batches(ctx: CheckContext) -> None:
    """LED-018: exports taken while another handle and process append hold whole batches only."""
    ids = ("LED-018",)
    size = 4
    with fresh_store(ctx) as store, second_handles(store, 1, ids) as (writer,), \
            workers(store, 1, ids) as (other,):
        mine = _batches("x-handle", 20, sizes=(size,))
        theirs = _batches("x-process", 15, sizes=(size,))
        done = threading.Event()
        errors: list[BaseException] = []

        def write() -> None:
            try:
                _appender(writer, "c", mine, [])()
            except BaseException as error:
                errors.append(error)
            finally:
                done.set()

        other.send({"op": "append", "conversation": "c", "batches": theirs})
        thread = threading.Thread(target=write)
        thread.start()
        exports = 0
        try:
            while True:
                finished = done.is_set()
                _expect_whole_export(store, ids, size)
                exports += 1
                if finished:
                    break
        finally:
            thread.join()
        other.placed()
        if errors:
            fail(ids, f"append through open_handle() during exports: expected success, got "
                      f"{errors[0]!r}")
        final = _expect_whole_export(store, ids, size)
        if final != size * (len(mine) + len(theirs)):
            fail(ids, f"export after the appends: expected {size * (len(mine) + len(theirs))} "
                      f"events, got {final}")


def _expect_whole_export(store: LedgerStore, ids: Sequence[str], size: int) -> int:
    """One export of ``c`` (none yet is fine): seqs 1..n, made of whole batches of ``size``."""
    try:
        data = store.export_conversation("c")
    except Exception as error:
        if getattr(error, "kind", None) == "not_found":
            return 0  # no batch yet when the export began; the final export counts them all
        fail(ids, f"export while other handles append: expected an archive, got {error!r}")
    events = json.loads(data)["events"]
    seqs = [event["seq"] for event in events]
    if seqs != list(range(1, len(seqs) + 1)):
        fail(ids, f"export while other handles append: expected seqs 1..n, got {_summary(seqs)}")
    for start in range(0, len(events), size):
        batch = {event["eventId"].rsplit("-", 1)[0] for event in events[start:start + size]}
        if len(events[start:start + size]) != size or len(batch) != 1:
            fail(ids, f"export while other handles append: expected whole batches of {size}, "
                      f"seqs {start + 1}..{start + size} hold "
                      f"{[e['eventId'] for e in events[start:start + size]]}")
    return len(events)


# -- freshness ----------------------------------------------------------------------------------


@check("LED-019", capability=Capability.MULTI_PROCESS)
def check_handles_read_fresh(ctx: CheckContext) -> None:
    """LED-019: after an append returns through one handle, every other handle reads it."""
    ids = ("LED-019",)
    with fresh_store(ctx) as store, second_handles(store, 1, ids) as (handle,), \
            workers(store, 1, ids) as (other,):
        located = accepted(lambda: open_located(handles_of(store, ids).locator()), ids,
                           "open_located(locator) in this process")
        try:
            local = {"the first handle": store, "open_handle()": handle,
                     "open_located in this process": located}
            expected: list[tuple[int, str]] = []
            writers = [*local, other.name]
            for round_ in range(8):
                _expect_everywhere(local, other, expected, ids, "before")
                writer = writers[round_ % len(writers)]
                batch = [f"fresh-{round_}-{n}" for n in range(1 + round_ % 2)]
                if writer == other.name:
                    other.call({"op": "append", "conversation": "c", "batches": [batch]})
                else:
                    local[writer].append("c", [draft(event_id) for event_id in batch])
                expected += [(len(expected) + n, e) for n, e in enumerate(batch, start=1)]
                _expect_everywhere(local, other, expected, ids,
                                   f"after an append of {len(batch)} through {writer} returned")
        finally:
            located.close()


def _expect_everywhere(local: dict[str, LedgerStore], other: Worker,
                       expected: list[tuple[int, str]], ids: Sequence[str], when: str) -> None:
    """head, read and export through every handle, and head and read in the other process."""
    head = len(expected)
    for name, handle in local.items():
        if handle.head("c") != head:
            fail(ids, f"head through {name} {when}: expected {head}, got {handle.head('c')}")
        if ledger_of(handle, "c") != expected:
            fail(ids, f"read through {name} {when}: expected {expected[-3:]} at the end, got "
                      f"{ledger_of(handle, 'c')[-3:]}")
        if head:
            exported = [(e["seq"], e["eventId"])
                        for e in json.loads(handle.export_conversation("c"))["events"]]
            if exported != expected:
                fail(ids, f"export through {name} {when}: expected {head} events, got "
                          f"{len(exported)}")
    got = other.head("c")
    if got != head:
        fail(ids, f"head in {other.name} {when}: expected {head}, got {got}")
    seen = other.read("c")
    if seen != expected:
        fail(ids, f"read in {other.name} {when}: expected {expected[-3:]} at the end, got "
                  f"{seen[-3:]}")
