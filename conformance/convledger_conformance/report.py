"""The conformance report: one status per requirement (CAP-004), rendered.

The statuses themselves, and how a requirement's follows from the results of
the checks that cover it, are :mod:`convledger_conformance.results` (re-exported here).

The report renders as JSON (:meth:`Report.to_json`), as a terminal table
(:meth:`Report.render`) and as JUnit XML (:meth:`Report.to_junit`). The table
gives the reason of each ``not_applicable`` row, the undeclared capabilities
its checks need, with a note when those are the database-file capabilities a
store served over the wire never declares (WIR-021); the JSON report keeps each
not-run check's reason in its ``message``.
"""

from __future__ import annotations

import json
import shlex
import textwrap
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from convledger.store import Capability
from convledger_conformance.results import (
    ABSENCE_REQUIREMENT,
    CHECK_STATUSES,
    FAILED,
    NOT_APPLICABLE,
    NOT_RUN,
    PASSED,
    REQUIREMENT_STATUSES,
    SUITE_NAME,
    CheckResult,
    RequirementResult,
    SuiteInfo,
    requirement_results,
    requirement_status,
)

__all__ = [
    "ABSENCE_REQUIREMENT",
    "CHECK_STATUSES",
    "FAILED",
    "FILE_CAPABILITIES",
    "FILE_CAPABILITIES_NOTE",
    "NOT_APPLICABLE",
    "NOT_RUN",
    "PASSED",
    "REQUIREMENT_STATUSES",
    "SUITE_NAME",
    "CheckResult",
    "Report",
    "RequirementResult",
    "SuiteInfo",
    "not_applicable_line",
    "requirement_results",
    "requirement_status",
    "summary_line",
]

FILE_CAPABILITIES: Final = frozenset(
    {Capability.MIGRATION, Capability.MULTI_PROCESS, Capability.FACT_ROWS}
)
"""Capabilities whose operations are called in process only, never over the wire (WIR-021)."""
FILE_CAPABILITIES_NOTE: Final = (
    "note: 'migration', 'multi_process' and 'fact_rows' are judged in process only: the "
    "wire protocol has no requests for them (WIR-021), so a store served over it never "
    "declares them; 'migration' is a property of a SQLite file, so a store on no file, or "
    "on another engine, does not declare it either."
)
"""Why ids of :data:`FILE_CAPABILITIES` are ``not_applicable`` for a wire store."""


@attrs.frozen
class Report:
    """The outcome of one conformance run."""

    suite: SuiteInfo
    store: str
    capabilities: frozenset[Capability]
    requirements: tuple[RequirementResult, ...]
    checks: tuple[CheckResult, ...]
    not_selected: tuple[str, ...] = ()
    """In a run of a selection of checks (``-k``, ``--chapter``, ``--lf``): the ids no
    selected check covers. They have no status and are counted in none (CAP-007)."""

    @property
    def summary(self) -> dict[str, int]:
        """How many requirements have each status (CAP-004)."""
        counts = dict.fromkeys(REQUIREMENT_STATUSES, 0)
        for result in self.requirements:
            counts[result.status] += 1
        return counts

    @property
    def ok(self) -> bool:
        """True when no requirement and no check failed."""
        return not any(result.status == FAILED for result in self.requirements) and not any(
            result.status == FAILED for result in self.checks
        )

    @property
    def duration(self) -> float:
        """Seconds spent running checks."""
        return sum(result.duration for result in self.checks)

    def status_of(self, requirement_id: str) -> str:
        """The status of one requirement; ``KeyError`` for an id not in the report."""
        for result in self.requirements:
            if result.id == requirement_id:
                return result.status
        raise KeyError(requirement_id)

    def reproduce(self, name: str) -> str:
        """The command line that runs check ``name`` alone as in this run ("" if unknown)."""
        if not self.suite.rerun:
            return ""
        from convledger_conformance.selection import keyword_for
        name = next((r.name for r in self.checks if f"helper: {r.blocked_by}" == name), name)

        expression = keyword_for(name, [result.name for result in self.checks])
        return f"{self.suite.rerun} -k {shlex.quote(expression)}"

    def to_dict(self) -> dict[str, object]:
        """The JSON report as a Python value."""
        checks = [result.to_dict() for result in self.checks]
        for entry, result in zip(checks, self.checks, strict=True):
            if result.status == FAILED and self.suite.rerun:
                entry["reproduce"] = self.reproduce(result.name)
        return {
            "suite": self.suite.to_dict(),
            "store": self.store,
            "capabilities": sorted(capability.value for capability in self.capabilities),
            "requirements": [result.to_dict() for result in self.requirements],
            "checks": checks,
            "summary": self.summary,
            **({"notSelected": list(self.not_selected)} if self.not_selected else {}),
            **({"startHere": start} if (start := self.start_here()) else {}),
            **({"failureOrder": order} if (order := self._failure_order()) else {}),
            **({"missingHooks": hooks} if (hooks := self._missing_hooks()) else {}),
        }

    def _failure_order(self) -> list[str]:
        """The failed checks' names, root cause first (diagnosis.py)."""
        from convledger_conformance.diagnosis import root_first

        return [result.name for group in root_first(self.checks) for result in group.results]

    def _missing_hooks(self) -> list[dict[str, object]]:
        from convledger_conformance.diagnosis import missing_hooks

        return [{"hook": hook.name, "capability": hook.capability, "checks": hook.checks}
                for hook in missing_hooks(self.checks)]

    def start_here(self) -> str:
        """The "start here" line of a failing run: the failure to fix first ("" if none)."""
        from convledger_conformance.diagnosis import start_here

        return start_here(self.checks)

    def to_json(self) -> str:
        """The JSON report as text (UTF-8, indented, ending in a newline)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def render(self) -> str:
        """A terminal table grouped by chapter, then failure details and a summary line."""
        from convledger_conformance.diagnosis import hook_lines

        start = self.start_here()
        closing = filter(None, [summary_line(self), not_applicable_line(self), start])
        hooks = hook_lines(self.checks)
        opening = [start, *hooks, ""] if start else []
        return "\n".join(
            [*opening, *_table_lines(self), *_failure_lines(self), *closing]) + "\n"

    def to_junit(self, path: str | Path) -> None:
        """Write JUnit XML: one testcase per check, requirement ids as properties."""
        tree = ElementTree.ElementTree(_junit_element(self))
        ElementTree.indent(tree)
        tree.write(path, encoding="utf-8", xml_declaration=True)


def summary_line(report: Report) -> str:
    """One line: suite, store, profile and the count of each status."""
    counts = ", ".join(f"{count} {status}" for status, count in report.summary.items())
    seed = "derandomized" if report.suite.seed is None else f"seed {report.suite.seed}"
    return (
        f"{report.suite.name} {report.suite.version} (spec {report.suite.spec_version}) "
        f"on {report.store}, profile {report.suite.profile}, {seed}: {counts}"
        + (f", {len(report.not_selected)} not selected" if report.not_selected else "")
        + f" ({len(report.checks)} checks in {report.duration:.1f}s)"
    )


def not_applicable_line(report: Report) -> str:
    """One line: how many requirements are not_applicable, and the capabilities behind them."""
    count = report.summary[NOT_APPLICABLE]
    if not count:
        return ""
    return (f"{count} requirements not_applicable: capabilities not declared: "
            f"{', '.join(sorted(c.value for c in _absent_behind(report)))}")


def _absent_behind(report: Report) -> set[Capability]:
    """The undeclared capabilities the not_applicable requirements' checks need."""
    needs = {result.name: result.needs() for result in report.checks}
    return {
        capability
        for result in report.requirements if result.status == NOT_APPLICABLE
        for name in result.checks
        for capability in needs.get(name, frozenset()) - report.capabilities
    }


def _table_lines(report: Report) -> list[str]:
    lines = [f"  {'id':<7}  {'level':<6}  {'status':<14}  checks"]
    chapter = None
    needs = {result.name: result.needs() for result in report.checks}
    absent: set[Capability] = set()
    for result in report.requirements:
        if result.chapter != chapter:
            chapter = result.chapter
            lines.extend(["", chapter])
        covering = ", ".join(result.checks) or "(no check)"
        if result.status == NOT_APPLICABLE:
            missing = {
                capability
                for name in result.checks
                for capability in needs.get(name, frozenset()) - report.capabilities
            }
            absent |= missing
            covering += f" (not declared: {', '.join(sorted(c.value for c in missing))})"
        lines.append(f"  {result.id}  {result.level:<6}  {result.status:<14}  {covering}")
    if absent & FILE_CAPABILITIES:
        lines.extend(["", *textwrap.wrap(FILE_CAPABILITIES_NOTE, width=100)])
    return lines


def _failure_lines(report: Report) -> list[str]:
    """The failed checks, root cause first (:mod:`convledger_conformance.diagnosis`)."""
    from convledger_conformance.diagnosis import root_first

    groups = root_first(report.checks)
    if not groups:
        return [""]
    count = sum(len(group.results) for group in groups)
    lines = ["", f"Failures, root cause first ({count} checks)", "=" * 40]
    number = 0
    for place, group in enumerate(groups):
        for member, result in enumerate(group.results):
            number += 1
            label = ("start here" if place == 0 and member == 0
                     else f"same first divergence as #{number - member}: likely a consequence"
                     if member else "")
            lines.extend(["", f"--- #{number} {result.name} [{', '.join(result.failed_ids)}]"
                          f"{f' ({label})' if label else ''}: {result.message}"])
            if result.divergence:
                lines.append(f"First diverging operation: {result.divergence}")
            lines.append(result.detail.rstrip())
            if report.suite.rerun:
                lines.append(f"Reproduce this check alone: {report.reproduce(result.name)}")
    lines.append("")
    return lines


def _junit_element(report: Report) -> ElementTree.Element:
    counts = Counter(result.status for result in report.checks)
    suites = ElementTree.Element("testsuites")
    suite = ElementTree.SubElement(
        suites,
        "testsuite",
        {
            "name": report.suite.name,
            "tests": str(len(report.checks)),
            "failures": str(counts.get(FAILED, 0)),
            "errors": "0",
            "skipped": str(counts.get(NOT_RUN, 0)),
            "time": f"{report.duration:.3f}",
        },
    )
    _properties(
        suite,
        [
            ("store", report.store),
            ("profile", report.suite.profile),
            ("suiteVersion", report.suite.version),
            ("specVersion", report.suite.spec_version),
        ],
    )
    for result in report.checks:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            {"classname": report.suite.name, "name": result.name, "time": f"{result.duration:.3f}"},
        )
        _properties(case, [("requirement", requirement) for requirement in result.ids])
        if result.status == FAILED:
            failure = ElementTree.SubElement(
                case,
                "failure",
                {"message": f"[{', '.join(result.failed_ids)}] {result.message}"},
            )
            failure.text = result.detail
        elif result.status == NOT_RUN:
            ElementTree.SubElement(case, "skipped", {"message": result.message})
    return suites


def _properties(parent: ElementTree.Element, pairs: Sequence[tuple[str, str]]) -> None:
    properties = ElementTree.SubElement(parent, "properties")
    for name, value in pairs:
        ElementTree.SubElement(properties, "property", {"name": name, "value": value})
