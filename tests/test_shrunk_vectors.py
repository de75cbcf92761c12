"""The shipped shrunk-failure vectors: each still catches the broken store it was found on."""

from __future__ import annotations

from typing import Any

import pytest

from convledger.memory import MemoryStore
from convledger_conformance.vectors import traces
from galleries import cases


def shrunk_traces() -> list[dict[str, Any]]:
    """Every trace of every shipped ``shrunk-*.json`` file."""
    return [
        trace
        for name, document in traces.trace_files().items()
        if name.startswith(traces.SHRUNK_PREFIX)
        for trace in document["traces"]
    ]


def test_there_are_shrunk_vectors_for_ledger_and_transitions() -> None:
    """Shrunk failures ship for the ledger core and for runtime transitions."""
    found = shrunk_traces()
    assert len(found) >= 20
    assert {tuple(trace["capabilities"]) for trace in found} >= {("ledger",), ("transitions",)}
    assert all(trace["name"].startswith("shrunk/") for trace in found)


@pytest.mark.parametrize("trace", shrunk_traces(), ids=lambda trace: trace["name"])
def test_shrunk_vector_catches_its_store(trace: dict[str, Any]) -> None:
    """Replayed on its broken store the trace differs from the recording; on the reference not.

    A shrunk trace is named ``shrunk/<store class>/<check>``; the class name finds
    its record among the galleries' broken stores.
    """
    store_name = trace["name"].split("/")[1]
    (broken,) = [broken for broken in cases() if broken.name == store_name]
    assert traces.replay(broken.factory, trace)
    assert traces.replay(MemoryStore, trace) == []
