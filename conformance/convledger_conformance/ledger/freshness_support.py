"""What the freshness checks stand on: every read, every write, the answers (LED-019, issue 20).

The reads and writes of :mod:`.checks_freshness`, by the capability that
offers each, so that the observing handle of a check and the writer in
another process (:mod:`.handle_worker`, command ``fresh``) read and write
exactly alike. An answer crosses the pipe as its ``repr``: the values the
reads return are attrs values, tuples and bytes, whose ``repr`` is the same
in every process for the same stored state.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import Any, Final

from convledger.errors import LedgerError
from convledger.projections.named import counting
from convledger.runtime.transitions import Accept
from convledger.store import Capability
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.support import STAMP, draft

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
"""Every write, in the order the checks make them (each once, then an append and a catch-up)."""

WRITE_BY_NAME: Final = {name: write for _, name, write in WRITES}


def plan(declared: Set[Capability]) -> list[str]:
    """The writes a store declaring ``declared`` gets: every write once, then an append and a
    catch-up again (a second catch-up over an event it has not folded yet)."""
    names = [name for capability, name, _ in WRITES if capability in declared]
    names += [name for capability, name, _ in WRITES
              if capability in (Capability.LEDGER, Capability.PROJECTIONS)
              and capability in declared]
    return names


def answer(read: Read, store: Any) -> object:
    """The value read, or the kind of the refusal (``not_found`` before the first write)."""
    try:
        return read(store)
    except LedgerError as error:
        return f"refused: {error.kind}"


def answers(store: Any) -> dict[str, object]:
    """The answer of every read the store declares, by read name."""
    declared = store.capabilities
    return {name: answer(read, store) for capability, name, read in READS
            if capability in declared}


def shown(store: Any) -> dict[str, str]:
    """:func:`answers` as text, the same in every process: what crosses the worker's pipe."""
    return {name: repr(value) for name, value in answers(store).items()}
