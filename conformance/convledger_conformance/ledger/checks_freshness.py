"""Freshness of every read across handles (LED-019, issue 20).

:mod:`.checks_handles` checks ``head``, ``read`` and ``export`` across handles
and processes. This check covers every other read a store declares (runtime
reads, checkpoints, spills, search) the same way, against a store that caches
what it read in each handle: an observing handle reads everything first (so a
cache is primed), another handle writes, and the observer, which never writes
itself, must at once answer exactly what the writer answers. For a store that
also declares ``persistence``, a reopened handle must answer the same again.

A failure names the read, the write that preceded it, the handle, what was
expected (the writer's answer) and what came.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from convledger.errors import LedgerError
from convledger.interface import require
from convledger.projections.named import counting
from convledger.runtime.transitions import Accept
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.handles_support import second_handles
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import STAMP, draft, fail, fresh_store

IDS: Final = ("LED-019",)
LEDGER: Final = "fresh"
RUNTIME: Final = "fresh-rt"
PROJECTION: Final = "fresh.count"

Read = Callable[[Any], object]
Write = Callable[[Any, int], object]


def _grant(_: object) -> bool:
    return True


READS: Final[tuple[tuple[Capability, str, Read], ...]] = (
    (Capability.LEDGER, "head", lambda s: s.head(LEDGER)),
    (Capability.LEDGER, "read", lambda s: read_whole(s, LEDGER)),
    (Capability.TRANSITIONS, "loadRun", lambda s: (s.load_run(RUNTIME, "fresh-run"),
                                                  s.load_run(RUNTIME, "fresh-run-2"))),
    (Capability.TRANSITIONS, "listActiveRuns", lambda s: s.list_active_runs(RUNTIME)),
    (Capability.TRANSITIONS, "loadSnapshot", lambda s: s.load_snapshot(RUNTIME)),
    (Capability.TRANSITIONS, "scanRecoverable", lambda s: s.scan_recoverable()),
    (Capability.PROJECTIONS, "loadCheckpoint", lambda s: s.load_checkpoint(LEDGER, PROJECTION)),
    (Capability.PROJECTIONS, "projectionStatus",
     lambda s: s.projection_status(LEDGER, PROJECTION)),
    (Capability.SPILLS, "getSpill",
     lambda s: s.get_spill(LEDGER, "fresh-spill", authorize=_grant)),
    (Capability.SEARCH, "search", lambda s: s.search(RUNTIME, "fresh")),
)
"""Every read, by the capability that offers it."""


def _answer(read: Read, store: LedgerStore) -> object:
    """The value read, or the kind of the refusal (``not_found`` before the first write)."""
    try:
        return read(store)
    except LedgerError as error:
        return f"refused: {error.kind}"


def _accept(store: Any, n: int, run: str) -> object:
    return store.transition(RUNTIME, Accept(f"fresh-k{n}", f"fresh-i{n}", run, f"fresh-a{n}",
                                            {"text": f"fresh words {n}"}),
                            event_id=f"fresh-rt-{n}", occurred_at=STAMP)


WRITES: Final[tuple[tuple[Capability, str, Write], ...]] = (
    (Capability.LEDGER, "append", lambda s, n: s.append(LEDGER, [draft(f"fresh-{n}")])),
    (Capability.TRANSITIONS, "transition accept", lambda s, n: _accept(s, n, "fresh-run")),
    (Capability.PROJECTIONS, "catchUp", lambda s, n: s.catch_up(LEDGER,
                                                                counting(name=PROJECTION))),
    (Capability.SPILLS, "putSpill", lambda s, n: s.put_spill(
        LEDGER, b"fresh data", media_type="text/plain",
        operation={"operationId": f"fresh-op-{n}", "authorization": {}},
        reference="fresh-spill", event_id=f"fresh-spill-{n}", occurred_at=STAMP)),
    (Capability.TRANSITIONS, "another transition accept",
     lambda s, n: _accept(s, n, "fresh-run-2")),
)
"""Every write, in the order the check makes them (each once, then an append and a catch-up)."""


def _answers(store: LedgerStore) -> dict[str, object]:
    declared = store.capabilities
    return {name: _answer(read, store) for capability, name, read in READS
            if capability in declared}


def _expect_same(observer: LedgerStore, writer: LedgerStore, name: str, after: str) -> None:
    expected, got = _answers(writer), _answers(observer)
    for read, answer in expected.items():
        if got[read] != answer:
            fail(IDS, f"{read} through {name} right after {after} through another handle: "
                      f"expected {answer!r:.300}, got {got[read]!r:.300}")


@check(*IDS, capability=Capability.MULTI_PROCESS,
       optional=(Capability.TRANSITIONS, Capability.PROJECTIONS, Capability.SPILLS,
                 Capability.SEARCH, Capability.PERSISTENCE))
def check_every_read_fresh_across_handles(ctx: CheckContext) -> None:
    """LED-019: every declared read through an observing handle sees another handle's write."""
    with fresh_store(ctx) as store, second_handles(store, 1, IDS) as (observer,):
        declared = store.capabilities
        plan = [item for item in WRITES if item[0] in declared]
        plan += [item for item in WRITES if item[0] in (Capability.LEDGER,
                                                        Capability.PROJECTIONS)
                 if item[0] in declared]
        for number, (_, name, write) in enumerate(plan, start=1):
            _answers(observer)  # prime whatever the observing handle keeps
            write(store, number)
            _expect_same(observer, store, "open_handle()", f"{name} #{number}")
        if Capability.PERSISTENCE in declared:
            extra = require(store, Capability.MULTI_PROCESS).open_handle()
            reopened = require(extra, Capability.PERSISTENCE).reopen()
            try:
                _expect_same(reopened, store, "a reopened handle", "every write")
            finally:
                reopened.close()
