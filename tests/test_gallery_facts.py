"""The PRV and FCT check bodies kill every broken host of ``galleries/facts.py``, on both stores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from convledger.memory import MemoryStore
from convledger.sqlite import SqliteStore
from convledger.store import LedgerStore
from convledger_conformance.facts import checks_facts as facts
from convledger_conformance.facts import checks_provider as provider
from convledger_conformance.facts.machine import HOST_MACHINE_IDS, build_host_machine
from convledger_conformance.profiles import settings_for
from convledger_conformance.registry import CheckFailure
from galleries import BrokenStore
from galleries.facts import BROKEN

BODIES: dict[str, Callable[..., None]] = {**provider.BODIES, **facts.BODIES}


def _stores(directory: Path) -> list[LedgerStore]:
    directory.mkdir()
    return [MemoryStore(), SqliteStore(directory / "ledger.sqlite")]


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_every_named_body_kills_the_broken_host(broken: BrokenStore, tmp_path: Path) -> None:
    """Each check body a broken host names fails it with the ids it breaks."""
    for name in broken.checks:
        for store in _stores(tmp_path / name):
            try:
                with pytest.raises(CheckFailure) as caught:
                    BODIES[name](store, host_class=broken.factory)
            finally:
                store.close()
            assert set(broken.catches) <= set(caught.value.ids), (name, caught.value)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_every_body_passes_the_reference_host(name: str) -> None:
    """The same bodies pass the reference host on the in-memory store."""
    store = MemoryStore()
    BODIES[name](store)
    assert store.capabilities


@pytest.mark.parametrize(
    "broken", [b for b in BROKEN if set(b.catches) <= set(HOST_MACHINE_IDS)],
    ids=lambda b: b.name,
)
def test_the_host_machine_kills_the_broken_host(broken: BrokenStore) -> None:
    """The random-provider state machine fails every broken host whose ids it covers."""
    machine = build_host_machine(MemoryStore, host_class=broken.factory)
    with pytest.raises(CheckFailure) as caught:
        run_state_machine_as_test(machine, settings=settings(
            settings_for("ci"), derandomize=True, phases=[Phase.generate]))
    assert set(broken.catches) <= set(caught.value.ids)
