"""The Node.js server (``interop/node/server.js``, on the TypeScript kit) passes the ledger core.

The kit is built first (tests/node_kit.py); without node or npm these tests skip, and fail
under CI=true.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from convledger.store import Capability
from convledger_conformance.report import FAILED
from convledger_conformance.runner import run_suite
from convledger_conformance.wire.client import WireStoreFactory
from node_kit import built_kit, node_or_skip

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "interop" / "node" / "server.js"
CORE = ("ENV", "LED", "RPL", "ARC", "CAN", "KND", "ERR", "CAP")


@pytest.fixture
def node() -> Iterator[WireStoreFactory]:
    """A factory over the Node server (the kit built first), stopped afterwards."""
    built_kit()
    factory = WireStoreFactory([node_or_skip(), str(SERVER)])
    yield factory
    factory.close()


def test_node_server_passes_the_ledger_core_chapters(node: WireStoreFactory) -> None:
    """At smoke every ledger-core requirement passes; only persistence and multi_process are n/a.

    LED-015 is capability persistence's, LED-016 .. LED-019 and LED-021 multi_process's;
    the Node server declares neither.
    """
    report = run_suite(node, profile="smoke", derandomize=True)
    statuses = {
        item["id"]: item["status"] for item in json.loads(report.to_json())["requirements"]
    }
    assert not [r.id for r in report.requirements if r.status == FAILED], report.render()
    core = {i: s for i, s in statuses.items() if i.startswith(CORE)}
    absent = {"LED-015", "LED-016", "LED-017", "LED-018", "LED-019", "LED-021"}
    assert {i for i, s in core.items() if s != "passed"} == absent
    assert {core[i] for i in absent} == {"not_applicable"}
    assert report.capabilities == frozenset({Capability.LEDGER})


def test_node_server_declares_ledger_only(node: WireStoreFactory) -> None:
    """The Node server greets with protocol 1 and declares only capability ledger (WIR-021)."""
    store = node()
    assert node.connection.hello["server"] == "convledger-node"
    assert store.capabilities == frozenset({Capability.LEDGER})
    store.close()


def test_node_exports_the_reference_bytes(node: WireStoreFactory) -> None:
    """An archive exported by the Python reference imports into Node and exports identically."""
    from convledger.memory import MemoryStore
    from convledger_conformance.support import draft

    reference = MemoryStore()
    reference.append("c", [draft("e1", 1.5), draft("e2", {"z": [1e21, 1e-7, "\u2028"]}),
                           draft("e3", 10**15, ignorable=True)])
    data = reference.export_conversation("c")
    store = node()
    assert store.import_conversation(data).head_seq == 3
    assert store.export_conversation("c") == data
    assert store.read("c").items == reference.read("c").items
    store.close()


def test_node_server_exits_2_on_a_cut_frame() -> None:
    """Input that ends inside a frame gets an invalid_input reply and exit status 2 (WIR-004)."""
    built_kit()
    result = subprocess.run(
        [node_or_skip(), str(SERVER)], input=b"\x00\x00\x00\x10\xa1", capture_output=True,
        timeout=60, check=False,
    )
    assert result.returncode == 2
    assert result.stdout[4:].find(b"invalid_input") > 0
