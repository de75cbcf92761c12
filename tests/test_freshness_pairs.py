"""Every operation of the capability table has its freshness pairs (LED-019, issue 37).

The freshness checks compare every read right after every write; the reads and
writes are tables keyed by the operations of ``convledger.capabilities.OPERATIONS``,
and an operation added to that table without a read or write there fails here.
"""

from __future__ import annotations

from convledger.capabilities import OPERATIONS, Capability
from convledger_conformance.ledger.freshness_support import (
    HANDLE_OPERATIONS,
    READS,
    WRITES,
    pairs,
    plan,
    unpaired,
)


def test_every_operation_of_the_table_is_a_read_a_write_or_a_handle_operation() -> None:
    assert unpaired() == []


def test_unpaired_names_an_operation_the_tables_lack() -> None:
    """The guard is not vacuous: drop one read or one write and it is named."""
    names = {f"{c.value}.{o.name}" for c, ops in OPERATIONS.items() for o in ops}
    assert "spills.deleteSpill" in names and "spills.getSpill" in names
    no_get = tuple(read for read in READS if read[1] != "getSpill")
    no_delete = tuple(write for write in WRITES if write[1] != "deleteSpill")
    assert unpaired(reads=no_get) == ["spills.getSpill"]
    assert unpaired(writes=no_delete) == ["spills.deleteSpill"]
    assert {name for _, name, _ in READS} & HANDLE_OPERATIONS == set()
    assert {name for _, name, _ in WRITES} & HANDLE_OPERATIONS == set()


def test_every_kind_of_write_is_planned_and_every_read_follows_each() -> None:
    declared = frozenset(Capability)
    written = plan(declared)
    for kind in ("append", "transition", "deleteSpill", "purge", "importConversation",
                 "importBundle", "catchUp", "writeFactRows", "putSpill"):
        assert kind in written, kind
    assert written[-1] == "purge"
    reads = {name for _, name, _ in READS}
    checked = pairs(declared)
    assert {(read, write) for read in reads for write in written} == set(checked)
    assert len(checked) == len(reads) * len(written)


def test_every_read_changes_under_the_plan(tmp_path: object) -> None:
    """A pair whose read answers the same before and after every write could not catch a
    stale cache: over the plan, each read's answer changes at least once (on SQLite, which
    declares every capability the reads need)."""
    from pathlib import Path

    from convledger.sqlite import SqliteStore
    from convledger_conformance.ledger.freshness_support import WRITE_BY_NAME, answers

    assert isinstance(tmp_path, Path)
    store = SqliteStore(str(tmp_path / "fresh.sqlite"))
    try:
        seen: dict[str, list[object]] = {}
        for name, answer in answers(store).items():
            seen.setdefault(name, []).append(repr(answer))
        for number, name in enumerate(plan(store.capabilities), start=1):
            WRITE_BY_NAME[name](store, number)
            for read, answer in answers(store).items():
                seen[read].append(repr(answer))
    finally:
        store.close()
    unchanged = sorted(read for read, values in seen.items() if len(set(values)) == 1)
    assert unchanged == []
