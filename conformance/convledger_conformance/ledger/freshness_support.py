"""What the freshness checks stand on: every read, every write, the answers (LED-019, LED-021).

The reads and writes of :mod:`.checks_freshness`, by the operation of the
capability table (:data:`convledger.capabilities.OPERATIONS`) that each one
exercises, so that the observing handle of a check and the writer in another
process (:mod:`.handle_worker`, command ``fresh``) read and write exactly
alike. Every operation of the table is a read (:data:`READS`), a write
(:data:`WRITES`) or a handle operation (:data:`HANDLE_OPERATIONS`), and
:func:`unpaired` names any that is none of them, so an operation added to the
table cannot be forgotten here: ``tests/test_freshness_pairs.py`` fails
until it has its freshness pairs. Every read is compared right after every
write, so the pairs (read, write) are the product of the two tables, limited
to what the store declares.

An answer crosses the pipe as its ``repr``: the values the reads return are
attrs values, tuples and bytes, whose ``repr`` is the same in every process
for the same stored state.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import Any, Final

from convledger.capabilities import OPERATIONS
from convledger.errors import LedgerError
from convledger.host.rows import ChildLink, ScheduleRow
from convledger.memory import MemoryStore
from convledger.projections.named import counting
from convledger.runtime.transitions import Accept, Acquire
from convledger.store import Capability
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.support import STAMP, archive, draft, wires

LEDGER: Final = "fresh"
RUNTIME: Final = "fresh-rt"
IMPORTED: Final = "fresh-imported"
BUNDLED: Final = "fresh-bundled"
PROJECTION: Final = "fresh.count"

Read = Callable[[Any], object]
Write = Callable[[Any, int], object]


def _grant(_: object) -> bool:
    return True


def _spill(store: Any, conversation_id: str, reference: str) -> object:
    try:
        return store.get_spill(conversation_id, reference, authorize=_grant)
    except LedgerError as error:
        return f"refused: {error.kind}"


def _export(store: Any, conversation_id: str) -> object:
    """The archive, or the refusal's kind: the conversation written by every write (whose
    catch-ups change the archive's companions but not its head) and the imported one."""
    try:
        return store.export_conversation(conversation_id)
    except LedgerError as error:
        return f"refused: {error.kind}"


READS: Final[tuple[tuple[Capability, str, Read], ...]] = (
    (Capability.LEDGER, "head", lambda s: (s.head(LEDGER), s.head(IMPORTED))),
    (Capability.LEDGER, "read", lambda s: (read_whole(s, LEDGER), read_whole(s, IMPORTED))),
    (Capability.LEDGER, "exportConversation",
     lambda s: (_export(s, LEDGER), _export(s, IMPORTED))),
    (Capability.TRANSITIONS, "loadRun", lambda s: (s.load_run(RUNTIME, "fresh-run"),
                                                  s.load_run(RUNTIME, "fresh-run-2"))),
    (Capability.TRANSITIONS, "listActiveRuns", lambda s: s.list_active_runs(RUNTIME)),
    (Capability.TRANSITIONS, "loadSnapshot", lambda s: s.load_snapshot(RUNTIME)),
    (Capability.TRANSITIONS, "scanRecoverable", lambda s: s.scan_recoverable()),
    (Capability.PROJECTIONS, "loadCheckpoint", lambda s: s.load_checkpoint(LEDGER, PROJECTION)),
    (Capability.PROJECTIONS, "projectionStatus",
     lambda s: s.projection_status(LEDGER, PROJECTION)),
    (Capability.SPILLS, "getSpill",
     lambda s: (_spill(s, LEDGER, "fresh-spill"), _spill(s, BUNDLED, "fresh-bundle-spill"))),
    (Capability.SPILLS, "exportBundle", lambda s: s.export_bundle(BUNDLED)),
    (Capability.SEARCH, "search", lambda s: s.search(RUNTIME, "fresh")),
    (Capability.FACT_ROWS, "childLinks", lambda s: s.child_links(LEDGER)),
    (Capability.FACT_ROWS, "schedules", lambda s: s.schedules(LEDGER)),
)
"""Every read, by the operation of the capability table it exercises."""


def _accept(store: Any, n: int, run: str) -> object:
    return store.transition(RUNTIME, Accept(f"fresh-k{n}", f"fresh-i{n}", run, f"fresh-a{n}",
                                            {"text": f"fresh words {n}"}),
                            event_id=f"fresh-rt-{n}", occurred_at=STAMP)


def _import(store: Any, n: int) -> object:
    return store.import_conversation(archive(IMPORTED, wires(IMPORTED, [draft(f"fresh-im-{n}")])))


def _bundle(n: int) -> bytes:
    """A bundle of conversation ``BUNDLED`` with one spill, the same in every process."""
    source = MemoryStore()
    source.put_spill(BUNDLED, b"bundled data", media_type="text/plain",
                     operation={"operationId": f"fresh-bop-{n}", "authorization": {}},
                     reference="fresh-bundle-spill", event_id=f"fresh-b-{n}", occurred_at=STAMP)
    return source.export_bundle(BUNDLED)


def _rows(store: Any, n: int) -> object:
    store.write_fact_rows(ChildLink(LEDGER, f"fresh-kid-{n}", "spawned", 0, {}), [])
    return store.write_fact_rows(ScheduleRow(LEDGER, f"fresh-s-{n}", "at", STAMP, "active", 0),
                                 [])


WRITES: Final[tuple[tuple[Capability, str, Write], ...]] = (
    (Capability.LEDGER, "append", lambda s, n: s.append(LEDGER, [draft(f"fresh-{n}")])),
    (Capability.TRANSITIONS, "transition", lambda s, n: _accept(s, n, "fresh-run")),
    (Capability.TRANSITIONS, "transition acquire", lambda s, n: s.transition(
        RUNTIME, Acquire("fresh-run", "fresh-owner"), event_id=f"fresh-aq-{n}",
        occurred_at=STAMP)),
    (Capability.PROJECTIONS, "catchUp", lambda s, n: s.catch_up(LEDGER,
                                                                counting(name=PROJECTION))),
    (Capability.SPILLS, "putSpill", lambda s, n: s.put_spill(
        LEDGER, b"fresh data", media_type="text/plain",
        operation={"operationId": f"fresh-op-{n}", "authorization": {}},
        reference="fresh-spill", event_id=f"fresh-spill-{n}", occurred_at=STAMP)),
    (Capability.TRANSITIONS, "another transition",
     lambda s, n: _accept(s, n, "fresh-run-2")),
    (Capability.SPILLS, "deleteSpill", lambda s, n: s.delete_spill(
        LEDGER, "fresh-spill", event_id=f"fresh-del-{n}", occurred_at=STAMP)),
    (Capability.LEDGER, "importConversation", _import),
    (Capability.SPILLS, "importBundle", lambda s, n: s.import_bundle(_bundle(n))),
    (Capability.FACT_ROWS, "writeFactRows", _rows),
    (Capability.PURGE, "purge", lambda s, n: s.purge(LEDGER)),
)
"""Every write, in the order the checks make them (each once; an append and a catch-up again
before the purge, which is last because nothing may be written to the conversation after it)."""

WRITE_BY_NAME: Final = {name: write for _, name, write in WRITES}

HANDLE_OPERATIONS: Final = frozenset({"reopen", "openHandle", "locator"})
"""Operations of the table that open or name a handle: they neither read nor write state
(the checks reopen and open handles themselves)."""

_ALIASES: Final = {"another transition": "transition", "transition acquire": "transition"}


def unpaired(reads: tuple[tuple[Capability, str, Read], ...] = READS,
             writes: tuple[tuple[Capability, str, Write], ...] = WRITES) -> list[str]:
    """Every operation of the capability table that is neither a read, a write nor a handle
    operation here, or that sits under another capability: each would have no freshness pair."""
    covered = {(capability, name) for capability, name, _ in reads}
    covered |= {(capability, _ALIASES.get(name, name)) for capability, name, _ in writes}
    return [f"{capability.value}.{operation.name}"
            for capability, operations in OPERATIONS.items() for operation in operations
            if operation.name not in HANDLE_OPERATIONS
            and (capability, operation.name) not in covered]


def pairs(declared: Set[Capability]) -> list[tuple[str, str]]:
    """Every (read, write) pair a store declaring ``declared`` is checked on."""
    reads = [name for capability, name, _ in READS if capability in declared]
    return [(read, write) for write in plan(declared) for read in reads]


def plan(declared: Set[Capability]) -> list[str]:
    """The writes a store declaring ``declared`` gets: every write once, an append and a
    catch-up again (a second catch-up over an event it has not folded yet), a put again (so the
    purge takes a live object, whose bytes no handle may serve after it), and the purge last."""
    names = [name for capability, name, _ in WRITES
             if capability in declared and capability is not Capability.PURGE]
    names += [name for capability, name, _ in WRITES
              if capability in (Capability.LEDGER, Capability.PROJECTIONS)
              and capability in declared and name != "importConversation"]
    if Capability.SPILLS in declared and Capability.PURGE in declared:
        names.append("putSpill")  # a live object for the purge to take (LED-021, SPL-032)
    names += [name for capability, name, _ in WRITES
              if capability is Capability.PURGE and capability in declared]
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
