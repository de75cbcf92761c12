"""Freshness of every read across handles, processes and reopen (LED-019, issue 20).

:mod:`.checks_handles` checks ``head``, ``read`` and ``export`` across handles
and processes. These checks cover every read operation of the capability table that a
store declares (runtime reads, checkpoints, spills and bundles, search, fact
rows, exports) right after every write operation it declares (append,
transition, catch-up, put, delete, import of archives and bundles, fact rows,
purge); the pairs come from :mod:`.freshness_support`, whose tables are keyed
by the capability table's operations (issue 37). An observer reads everything first
(so a cache is primed), a writer elsewhere writes, and the observer, which
never writes itself, must at once answer exactly what the writer answers:

* ``every_read_fresh_across_handles``: the writer is another handle of this
  process, against a store that caches what it read in each handle; for a
  store that also declares ``persistence``, a reopened handle must answer the
  same again after every write.
* ``every_read_fresh_across_processes``: the writer is another process (one
  :class:`~.handles_support.Worker`, started once per check), against a store
  that caches in the process (a module-level or class-level cache shared by
  every handle of the process and emptied by the process's own writes), which
  passes the first check. The observers are the first handle and, for a store
  that declares ``persistence``, a second handle reopened after each write.

Both need ``multi_process``, which the wire never carries (WIR-021): over
``--command`` they are not applicable, like the checks of
:mod:`.checks_handles`.

A failure names the read, the write that preceded it, the handle and the
process, what was expected (the writer's answer) and what came.
"""

from __future__ import annotations

from typing import Final

from convledger.interface import require
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.freshness_support import WRITE_BY_NAME, answers, plan, shown
from convledger_conformance.ledger.handles_support import Worker, second_handles, workers
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import accepted, fail, fresh_store

IDS: Final = ("LED-019", "LED-021")
OPTIONAL: Final = (Capability.TRANSITIONS, Capability.PROJECTIONS, Capability.SPILLS,
                   Capability.SEARCH, Capability.PERSISTENCE)


def _expect_same(observer: LedgerStore, writer: LedgerStore, name: str, after: str) -> None:
    expected, got = answers(writer), answers(observer)
    for read, answer in expected.items():
        if got[read] != answer:
            fail(IDS, f"{read} through {name} right after {after} through another handle: "
                      f"expected {answer!r:.300}, got {got[read]!r:.300}")


@check(*IDS, capability=Capability.MULTI_PROCESS, optional=OPTIONAL)
def check_every_read_fresh_across_handles(ctx: CheckContext) -> None:
    """LED-019: every declared read through an observing handle sees another handle's write."""
    with fresh_store(ctx) as store, second_handles(store, 1, IDS) as (observer,):
        declared = store.capabilities
        for number, name in enumerate(plan(declared), start=1):
            answers(observer)  # prime whatever the observing handle keeps
            WRITE_BY_NAME[name](store, number)
            _expect_same(observer, store, "open_handle()", f"{name} #{number}")
        if Capability.PERSISTENCE in declared:
            extra = require(store, Capability.MULTI_PROCESS).open_handle()
            reopened = require(extra, Capability.PERSISTENCE).reopen()
            try:
                _expect_same(reopened, store, "a reopened handle", "every write")
            finally:
                reopened.close()


def _expect_shown(observer: LedgerStore, expected: dict[str, str], name: str,
                  after: str) -> None:
    got = shown(observer)
    for read, answer in expected.items():
        if got.get(read) != answer:
            fail(IDS, f"{read} through {name} in this process right after {after} (another "
                      f"process, which then read it): expected {answer:.300}, got "
                      f"{got.get(read, 'no answer'):.300}")


def _write_in(other: Worker, name: str, number: int) -> dict[str, str]:
    """Make write ``name`` in the other process; every answer it then reads there."""
    found = other.call({"op": "fresh", "write": name, "number": number})["answers"]
    assert isinstance(found, dict)
    return {str(read): str(answer) for read, answer in found.items()}


@check(*IDS, capability=Capability.MULTI_PROCESS, optional=OPTIONAL)
def check_every_read_fresh_across_processes(ctx: CheckContext) -> None:
    """LED-019: every declared read in this process sees a write another process made."""
    with fresh_store(ctx) as store, workers(store, 1, IDS) as (other,):
        declared = store.capabilities
        reopening = Capability.PERSISTENCE in declared
        extra: LedgerStore | None = None
        if reopening:
            extra = accepted(require(store, Capability.MULTI_PROCESS).open_handle, IDS,
                             "open_handle")
        try:
            for number, name in enumerate(plan(declared), start=1):
                for observer in (store, extra):
                    if observer is not None:
                        answers(observer)  # prime whatever this process keeps
                expected = _write_in(other, name, number)
                after = f"{name} #{number} in {other.name}"
                _expect_shown(store, expected, "the first handle", after)
                if extra is not None:
                    handle, extra = extra, None  # reopen closes it, even when it then fails
                    extra = accepted(require(handle, Capability.PERSISTENCE).reopen, IDS,
                                     "reopen")
                    _expect_shown(extra, expected, "a handle reopened after it", after)
        finally:
            if extra is not None:
                extra.close()
