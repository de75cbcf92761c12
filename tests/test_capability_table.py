"""The capability table is written once: spec/capabilities.md == convledger.capabilities.OPERATIONS.

Everything else is derived from that one table and checked here: each
capability's protocol names exactly its operations, a store that does not
implement an operation refuses it (CAP-002), the wire server carries exactly
the operations the table marks as carried (WIR-013, WIR-021), and the
suite's probes cover every optional operation (CAP-002).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convledger.capabilities import OPERATIONS, Capability, optional_operations
from convledger.errors import NotSupportedError
from convledger.interface import PROTOCOLS, require
from convledger.memory import MemoryStore
from convledger.store_base import StoreBase
from convledger.wire import server
from convledger_conformance.ledger.machine_operations import OPTIONAL_OPERATIONS
from convledger_conformance.ledger.probes import PROBES, probes

SPEC = Path(__file__).resolve().parent.parent / "spec" / "capabilities.md"
LEDGER_MEMBERS = {"capabilities", "registry", "close"}


def spec_table() -> dict[str, list[str]]:
    """The capability -> operations rows of the spec's table, by name."""
    rows: dict[str, list[str]] = {}
    for line in SPEC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `(\w+)`(?: \(required\))? \| (.*?) \| ([A-Z, ]+) \|$", line)
        if match:
            rows[match.group(1)] = re.findall(r"`(\w+)`", match.group(2))
    return rows


def members_of(protocol: object) -> set[str]:
    """The public members a protocol and the protocols it extends declare."""
    assert isinstance(protocol, type)
    return {
        name
        for klass in protocol.__mro__
        if getattr(klass, "_is_protocol", False)
        for name in vars(klass)
        if not name.startswith("_")
    }


def test_spec_table_is_the_code_table() -> None:
    """Every capability and every operation name, in the spec and in code alike."""
    table = spec_table()
    assert set(table) == {capability.value for capability in Capability}
    for capability, operations in OPERATIONS.items():
        assert table[capability.value] == [operation.name for operation in operations], capability


def test_each_protocol_names_exactly_its_operations() -> None:
    """A capability's protocol adds exactly the operations of its row to LedgerStore."""
    ledger = members_of(PROTOCOLS[Capability.LEDGER])
    assert ledger == {op.method for op in OPERATIONS[Capability.LEDGER]} | LEDGER_MEMBERS
    for capability, protocol in PROTOCOLS.items():
        members = members_of(protocol)
        own = {op.method for op in OPERATIONS[capability]}
        assert members - ledger == own - ledger, capability
    without = {c for c in Capability if c not in PROTOCOLS}
    assert without == {c for c, ops in OPERATIONS.items() if not ops}


def test_a_store_refuses_what_it_does_not_implement() -> None:
    """StoreBase carries a CAP-002 refusal for every optional operation of the table."""

    class LedgerOnly(StoreBase):
        def _append(self, *args: object) -> tuple[()]:
            return ()

        def _read(self, *args: object) -> list[object]:
            return []

        def _head(self, conversation_id: str) -> int:
            return 0

        def _snapshot_events(self, conversation_id: str) -> list[object]:
            return []

        def _import(self, archive: object) -> None:
            return None

    store = LedgerOnly()
    for capability, operation in optional_operations():
        with pytest.raises(NotSupportedError) as raised:
            getattr(store, operation.method)("c")
        assert raised.value.kind == "not_supported"
        assert raised.value.capability == capability.value


def test_require_checks_the_declaration() -> None:
    """require narrows a store that declares the capability and refuses one that does not."""
    store = MemoryStore()
    assert require(store, Capability.SPILLS) is store
    with pytest.raises(NotSupportedError):
        require(store, Capability.SEARCH)


def test_the_wire_carries_the_table() -> None:
    """WIR-013, WIR-021: the server's requests are the table's carried operations."""
    carried = {
        op.name for ops in OPERATIONS.values() for op in ops if op.wire
    } - server.SERVER_REQUESTS
    assert set(server.OPERATIONS) == carried
    for name, entry in server.OPERATIONS.items():
        assert any(op.name == name for op in OPERATIONS[entry.capability])
    assert Capability.FACT_ROWS not in server.CARRIED
    assert {Capability.MIGRATION, Capability.MULTI_PROCESS}.isdisjoint(server.CARRIED)


def test_probes_cover_every_optional_operation() -> None:
    """CAP-002: one or more probes per optional operation, and none of anything else."""
    assert set(PROBES) == {operation.method for _, operation in optional_operations()}
    assert {label for _, label, _ in OPTIONAL_OPERATIONS} <= {label for _, label, _ in probes()}
    carried = {op.method for _, op in optional_operations() if op.wire}
    assert {PROBES_BY_LABEL[label] for _, label, _ in OPTIONAL_OPERATIONS} == carried


PROBES_BY_LABEL = {label: method for method, calls in PROBES.items() for label, _ in calls}
