"""Checks end on a store that lies about its head: they fail it instead of looping forever.

Regression: a store whose ``head`` ran one ahead of its ledger once three
events were stored made ``concurrent_catch_ups_never_regress`` spin on
"catch up until the head" and ``concurrent_appends`` retry a
compare-and-append forever. Both loops are now bounded.
"""

from __future__ import annotations

import threading

import pytest

from convledger.memory import MemoryStore
from convledger_conformance.ledger.checks_ledger import _append_with_retry
from convledger_conformance.registry import CheckFailure, all_checks
from convledger_conformance.report import FAILED, Report
from convledger_conformance.runner import run_suite
from convledger_conformance.support import draft

HANG_GUARD_SECONDS = 600
"""Not a performance bound: only so that a regression fails instead of hanging CI."""


class HeadRunsAhead(MemoryStore):
    """Breaks LED-012: ``head`` answers one more than the last seq once there are three."""

    def head(self, conversation_id: str) -> int:
        """The reference's head, plus one from three events on."""
        found = super().head(conversation_id)
        return found + 1 if found >= 3 else found


def test_compare_and_append_retries_are_bounded() -> None:
    """The retry loop of concurrent_appends gives up with a failure of LED-013."""
    store = HeadRunsAhead()
    store.append("shared", [draft(f"e{n}") for n in range(3)])
    with pytest.raises(CheckFailure) as raised:
        _append_with_retry(store, [draft("late")])
    assert raised.value.ids == ("LED-013",)
    assert store.head("shared") == 4 and len(store.read("shared").items) == 3


@pytest.mark.parametrize("name", ["concurrent_catch_ups_never_regress"])
def test_check_fails_a_store_whose_head_runs_ahead(name: str) -> None:
    """The check ends, and reports the store failed."""
    (item,) = [item for item in all_checks() if item.name == name]
    reports: list[Report] = []
    worker = threading.Thread(
        target=lambda: reports.append(
            run_suite(HeadRunsAhead, profile="smoke", checks=[item], derandomize=True,
                      shrink=False)),
        daemon=True,
    )
    worker.start()
    worker.join(HANG_GUARD_SECONDS)
    assert reports, f"{name} did not end"
    assert {result.name: result.status for result in reports[0].checks}[name] == FAILED
