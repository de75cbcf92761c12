"""The wire checks of the pinned gaps kill every broken wire server of ``galleries/wire.py``.

Each broken server runs as a real subprocess; the check named in its record
runs over the wire at the smoke profile, derandomized, and must fail the id
the server breaks. The reference server passes the same checks
(``test_wire_suite.py`` runs them all over ``serve-wire``).
"""

from __future__ import annotations

import pytest

from convledger_conformance.registry import all_checks
from convledger_conformance.requirements import active_ids
from convledger_conformance.runner import run_suite
from convledger_conformance.wire.client import WireStoreFactory
from galleries.wire import BROKEN, BrokenServer, command


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_named_check_kills_the_broken_server(broken: BrokenServer) -> None:
    """The check in the record fails the server's id over the wire."""
    (selected,) = [item for item in all_checks() if item.name == broken.check]
    assert broken.catches in selected.ids
    factory = WireStoreFactory(command(broken.name))
    try:
        report = run_suite(factory, profile="smoke", derandomize=True, checks=[selected])
    finally:
        factory.close()
    failed = {item.id for item in report.requirements if item.status == "failed"}
    assert broken.catches in failed, report.render()


def test_every_broken_server_names_its_one_bug() -> None:
    """Each docstring names the id the server is tagged with, an active id."""
    for broken in BROKEN:
        assert broken.catches in active_ids()
        assert (broken.cls.__doc__ or "").split(":")[0] == broken.catches
