"""A store that breaks a call the suite makes for itself is reported once (CAP-006, issue 20).

The suite reads whole ledgers and heads to compare states. A store that refuses
such a read used to fail every check comparing states (71 checks for one bug);
now each such check is ``not_run``, blocked by the call, and the call gets one
failed finding naming itself, how many checks it stopped and their ids.
"""

from __future__ import annotations

import json

import pytest

from convledger.memory import MemoryStore
from convledger.store import Capability
from convledger_conformance.helper_calls import HELPER_CHECK, helper_findings, stopped_by
from convledger_conformance.registry import Check, all_checks
from convledger_conformance.report import FAILED, NOT_RUN, PASSED, CheckResult
from galleries import BrokenStore
from galleries.helpers import BROKEN, PagesCappedBelowTheDefault
from kill_table import focused, kill_with_report

# The four checks that used to read with limit 10000 themselves, and checks comparing states.
ROUTED = ("seqs_follow_the_head", "head", "concurrent_appends",
          "unknown_ignorable_keeps_its_place")


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_focused_checks_kill_the_broken_store(broken: BrokenStore) -> None:
    """The checks of the broken call's own ids fail it."""
    row, _ = kill_with_report(broken, list(broken.selected()), profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed), row.line()


def _selection() -> list[Check]:
    wanted = ("ERR-004", "LED-002", "LED-012", "LED-013", "RPL-002")
    chosen = {item.name for item in focused(wanted)}
    return [item for item in all_checks() if item.name in chosen]


def test_a_refused_helper_read_is_one_finding() -> None:
    """One finding for the refused read; the checks it stopped are not_run, not failed."""
    row, report = kill_with_report(BROKEN[0], _selection(), profile="smoke")
    findings = [r for r in report.checks if r.name.startswith(f"{HELPER_CHECK}: ")]
    assert len(findings) == 1, [r.name for r in findings]
    (finding,) = findings
    assert finding.status == FAILED
    assert finding.failed_ids == ("LED-008", "LED-010")
    assert finding.message.startswith(
        "read with limit 1000 is refused (invalid_input): "), finding.message
    blocked = [r for r in report.checks if r.blocked_by]
    assert len(blocked) >= 5 and f"{len(blocked)} checks could not run" in finding.message
    assert stopped_by(finding, report.checks) == tuple(r.name for r in blocked)
    assert all(r.status == NOT_RUN and not r.failed_ids for r in blocked)
    for name in ROUTED:  # these read through the helper now, so they are stopped, not failed
        (result,) = [r for r in report.checks if r.name == name]
        assert result.blocked_by == finding.name.removeprefix(f"{HELPER_CHECK}: "), result
    others = [r for r in report.checks if r.status == FAILED and r is not finding]
    assert all(not r.blocked_by for r in others)
    assert len(others) < len(blocked), [r.name for r in others]
    entries = json.loads(report.to_json())["checks"]
    assert [e["name"] for e in entries if e.get("blockedBy")] == [r.name for r in blocked]
    assert "LED-010" in row.failed


def test_the_reference_has_no_helper_finding() -> None:
    """MemoryStore: the same checks pass and nothing is blocked."""
    row, report = kill_with_report(BROKEN[0], _selection(), factory=MemoryStore,
                                   profile="smoke")
    assert report.ok, row.line()
    assert not any(r.blocked_by or stopped_by(r, report.checks) for r in report.checks)


def test_the_largest_limit_refused_no_longer_floods() -> None:
    """A store refusing exactly limit 10000 fails LED-010's own checks, and blocks nothing."""
    from galleries.boundaries import BROKEN as BOUNDARIES

    (largest,) = [b for b in BOUNDARIES if b.name == "RefusesTheLargestReadLimit"]
    selected = [item for item in all_checks() if item.name in ROUTED]
    row, report = kill_with_report(largest, selected, profile="smoke")
    assert report.ok and not row.failed, row.line()


def _blocked(name: str, outcome: str, ids: tuple[str, ...]) -> CheckResult:
    return CheckResult(name=name, ids=ids, capability=Capability.LEDGER, status=NOT_RUN,
                       message=f"not run: the suite's helper call {outcome}: KeyError('c')",
                       blocked_by=outcome, blocked_ids=("LED-012",))


def test_findings_group_by_call() -> None:
    """One finding per broken call, however many checks it stopped; passed checks count none."""
    passed = CheckResult(name="fine", ids=("LED-001",), capability=Capability.LEDGER,
                         status=PASSED)
    results = [_blocked("a", "head raises KeyError", ("ARC-001",)), passed,
               _blocked("b", "head raises KeyError", ("ERR-004", "ARC-001")),
               _blocked("c", "read with limit 1000 raises OSError", ("RPL-002",))]
    first, second = helper_findings(results)
    assert first.name == f"{HELPER_CHECK}: head raises KeyError"
    assert stopped_by(first, results) == ("a", "b")
    # ... then, in parentheses, the first stopped check's message: it names what was raised
    assert first.message == ("head raises KeyError: 2 checks could not run; their ids: "
                             "ARC-001, ERR-004 (not run: the suite's helper call head raises "
                             "KeyError: KeyError('c'))")
    assert first.failed_ids == ("LED-012",) and stopped_by(second, results) == ("c",)
    assert helper_findings([passed]) == []


def test_the_store_class_is_one_bug() -> None:
    """PagesCappedBelowTheDefault answers a page of 999 as the reference does."""
    store = PagesCappedBelowTheDefault()
    reference = MemoryStore()
    assert store.read("c", limit=999) == reference.read("c", limit=999)
