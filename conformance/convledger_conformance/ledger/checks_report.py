"""The checks of CAP-004, CAP-006 and CAP-007: the runner gives every requirement one honest
status, and a selection of checks leaves the others' ids not selected.

This check judges the suite, not the store: it runs the runner on the store's
factory with four synthetic checks whose outcomes are known and compares the
report's statuses with what CAP-004 demands.
"""

from __future__ import annotations

from collections import Counter

from convledger.store import Capability
from convledger_conformance.helper_calls import stopped_by
from convledger_conformance.ledger.model import (
    DEFAULT_LIMIT,
    HELPER_LIMIT,
    HELPER_READ_IDS,
    helper_call,
)
from convledger_conformance.registry import Check, CheckContext, CheckFailure, check
from convledger_conformance.report import REQUIREMENT_STATUSES, Report
from convledger_conformance.requirements import conformance_ids
from convledger_conformance.runner import run_suite
from convledger_conformance.support import fail, fresh_store


def _passes(ctx: CheckContext) -> None:
    """A synthetic check that passes."""


def _breaks_one(ctx: CheckContext) -> None:
    """A synthetic check that proves one of its two ids broken."""
    raise CheckFailure(("LED-004",), "synthetic failure")


def _synthetic(absent: Capability | None, *, absence_checked: bool) -> list[Check]:
    checks = [
        Check(name="synthetic_pass", ids=("LED-002",), capability=Capability.LEDGER,
              run=_passes),
        Check(name="synthetic_fail", ids=("LED-003", "LED-004"), capability=Capability.LEDGER,
              run=_breaks_one),
    ]
    if absent is not None:
        checks.append(Check(name="synthetic_absent", ids=("LED-015",), capability=absent,
                            run=_passes))
    if absence_checked:
        checks.append(Check(name="synthetic_absence", ids=("CAP-002",),
                            capability=Capability.LEDGER, run=_passes))
    return checks


def _expect(report: Report, requirement: str, status: str) -> None:
    got = report.status_of(requirement)
    if got != status:
        fail("CAP-004", f"{requirement} is {got!r} in the report, expected {status!r}")


@check("CAP-004")
def check_report_statuses(ctx: CheckContext) -> None:
    """CAP-004: one status per requirement; not_run never passes; not_applicable only if checked."""
    absent = next((c for c in Capability if c not in ctx.capabilities), None)
    for absence_checked in (True, False):
        report = run_suite(ctx.factory, profile=ctx.profile,
                           checks=_synthetic(absent, absence_checked=absence_checked))
        ids = Counter(result.id for result in report.requirements)
        if set(ids) != conformance_ids() or set(ids.values()) != {1}:
            fail("CAP-004", "the report does not list every conformance requirement exactly once")
        if any(result.status not in REQUIREMENT_STATUSES for result in report.requirements):
            fail("CAP-004", "the report uses a status outside the four of CAP-004")
        _expect(report, "LED-002", "passed")
        _expect(report, "LED-004", "failed")
        _expect(report, "LED-003", "not_run")
        _expect(report, "ARC-001", "not_run")
        if absent is not None:
            _expect(report, "LED-015", "not_applicable" if absence_checked else "not_run")
        passed = sum(1 for result in report.requirements if result.status == "passed")
        if report.summary.get("passed") != passed or report.ok:
            fail("CAP-004", "the summary counts something other than passed as passed")


@check("CAP-007")
def check_report_of_a_selection(ctx: CheckContext) -> None:
    """CAP-007: a run of some checks lists the ids none covers as not selected, not not_run."""
    report = run_suite(ctx.factory, profile=ctx.profile, focused=True,
                       checks=_synthetic(None, absence_checked=False))
    listed = {result.id for result in report.requirements}
    if not {"LED-002", "LED-003", "LED-004"} <= listed or "ARC-001" in listed:
        fail("CAP-007", f"a selection of checks of LED-002..LED-004 gives {len(listed)} "
             "requirements a status: not the ids of its checks alone")
    if "ARC-001" not in report.not_selected or set(report.not_selected) & listed:
        fail("CAP-007", "ARC-001, which no selected check covers, is not listed as not selected")
    if listed | set(report.not_selected) != conformance_ids():
        fail("CAP-007", "statuses and not selected ids together are not every requirement")
    if sum(report.summary.values()) != len(listed):
        fail("CAP-007", f"the summary counts {sum(report.summary.values())} requirements, "
             f"{len(listed)} have a status")
    _expect(report, "LED-003", "not_run")  # selected, covered, and its check failed on another


def _refused_helper_read(ctx: CheckContext) -> None:
    """A synthetic check whose helper read is refused by the real store (limit 0, LED-010)."""
    with fresh_store(ctx) as store:
        helper_call(f"read with limit {HELPER_LIMIT}", HELPER_READ_IDS,
                    lambda: store.read("c", limit=0))


def _helper_synthetic() -> list[Check]:
    return [
        Check(name="synthetic_pass", ids=("LED-002",), capability=Capability.LEDGER,
              run=_passes),
        Check(name="synthetic_blocked_a", ids=("ARC-001",), capability=Capability.LEDGER,
              run=_refused_helper_read),
        Check(name="synthetic_blocked_b", ids=("ERR-004", "ARC-004"),
              capability=Capability.LEDGER, run=_refused_helper_read),
    ]


@check("CAP-006")
def check_helper_findings(ctx: CheckContext) -> None:
    """CAP-006: a broken helper call is one finding; the checks it stopped are not_run."""
    if HELPER_LIMIT != DEFAULT_LIMIT:
        fail("CAP-006", f"the suite's helpers read with limit {HELPER_LIMIT}, not the "
             f"default {DEFAULT_LIMIT}")
    report = run_suite(ctx.factory, profile=ctx.profile, checks=_helper_synthetic())
    findings = [result for result in report.checks if stopped_by(result, report.checks)]
    expected = (f"read with limit {HELPER_LIMIT} is refused (invalid_input): 2 checks could "
                f"not run; their ids: ARC-001, ARC-004, ERR-004")
    # The finding's message goes on with the first stopped check's own, in parentheses.
    if len(findings) != 1 or not findings[0].message.startswith(f"{expected} ("):
        fail("CAP-006", f"a helper read refused in 2 checks: expected one finding "
             f"{expected!r}, got {[r.message for r in findings]!r}")
    (finding,) = findings
    if finding.status != "failed" or finding.failed_ids != HELPER_READ_IDS:
        fail("CAP-006", f"the finding fails {finding.failed_ids!r} ({finding.status}), "
             f"expected {HELPER_READ_IDS!r}")
    stopped = stopped_by(finding, report.checks)
    if stopped != ("synthetic_blocked_a", "synthetic_blocked_b"):
        fail("CAP-006", f"the checks stopped by the finding are {stopped!r}")
    for requirement, status in (("ARC-001", "not_run"), ("ERR-004", "not_run"),
                                ("LED-002", "passed"), ("LED-008", "failed")):
        got = report.status_of(requirement)
        if got != status:
            fail("CAP-006", f"{requirement} is {got!r} in the report, expected {status!r}")
    if report.ok:
        fail("CAP-006", "a run with a broken helper call is reported ok")
