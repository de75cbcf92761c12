"""The classes issue 37 found unseen are killed at smoke, each by a focused check.

Each store below has one bug of a class the held-out round of broken stores
found surviving smoke (a stale read of an operation the freshness checks did
not cover, a transition right after another in an order the machines do not
draw, a fact the producer only claims, and four boundaries only long machine
runs reached). Each is killed at profile ``smoke`` by the checks it is listed
with, and the failure says what was expected and what came back.
"""

from __future__ import annotations

import pytest

from galleries import BrokenStore, cases
from galleries.freshness import CachesSpillsPerHandle
from galleries.ledger import DedupesBodiesByClaimedHash, ReservesIdsOfRefusedImport
from galleries.limits import CountsIdentifierCharacters
from galleries.projections import StatusHeadAtLastCatchUp
from galleries.runtime import AcceptJoinsRequeuedRun, ForeignEventIdAnsweredDuplicate
from kill_table import kill_with_report

UNSEEN = (CachesSpillsPerHandle, AcceptJoinsRequeuedRun, DedupesBodiesByClaimedHash,
          ReservesIdsOfRefusedImport, StatusHeadAtLastCatchUp, ForeignEventIdAnsweredDuplicate,
          CountsIdentifierCharacters)
"""The gallery classes added for issue 37."""


def _records() -> list[BrokenStore]:
    names = {cls.__name__ for cls in UNSEEN}
    found = [record for record in cases() if record.name in names]
    assert sorted(record.name for record in found) == sorted(names)
    return found


@pytest.mark.parametrize("broken", _records(), ids=lambda b: b.name)
def test_killed_at_smoke_with_expected_and_got(broken: BrokenStore) -> None:
    row, report = kill_with_report(broken, list(broken.selected()), profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed), row.line()
    failed = [result for result in report.checks if result.status == "failed"]
    assert failed
    for result in failed:
        assert "expected" in result.message and "got" in result.message, result.message
