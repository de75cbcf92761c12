"""The runner and its report: one status per requirement (CAP-004), JSON, table, JUnit.

These tests run the real runner against the reference in-memory store with
small checks defined here (not registered), so they do not depend on the
registered checks.
"""

from __future__ import annotations

import io
import json
import os
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from convledger import MemoryStore
from convledger.store import Capability
from convledger_conformance.profiles import settings_for
from convledger_conformance.registry import Check, CheckContext, CheckFailure
from convledger_conformance.report import (
    NOT_APPLICABLE,
    NOT_RUN,
    PASSED,
    CheckResult,
    Report,
    requirement_status,
)
from convledger_conformance.requirements import conformance_ids
from convledger_conformance.runner import DECLARATION_CHECK, FRESH_CHECK, run_suite
from convledger_conformance.runsettings import ProgressLine


def make(
    name: str,
    ids: tuple[str, ...],
    run: Callable[[CheckContext], None],
    *,
    capability: Capability = Capability.LEDGER,
) -> Check:
    """A check that is not registered, for one test."""
    return Check(name=name, ids=ids, capability=capability, run=run, doc=f"{name} doc")


def passes(context: CheckContext) -> None:
    """A check that reads the head of an empty conversation and passes."""
    store = context.factory()
    try:
        assert store.head("c") == 0
    finally:
        store.close()


def fails_on_led_002(context: CheckContext) -> None:
    """A check that always proves LED-002 broken."""
    raise CheckFailure(["LED-002"], "seq 2 was skipped")


def crashes(context: CheckContext) -> None:
    """A check that fails with an unexpected error."""
    raise RuntimeError("the store exploded")


def hypothesis_fails(context: CheckContext) -> None:
    """A property that fails for every integer, so Hypothesis shrinks it to 0."""

    @settings_for(context.profile)
    @given(st.integers(min_value=0))
    def prop(number: int) -> None:
        raise CheckFailure(["LED-008"], f"window broken at {number}")

    prop()


class LedgerOnlyStore(MemoryStore):
    """The reference store, declaring only ``ledger``."""

    declared = frozenset({Capability.LEDGER})


class PersistentDeclaringStore(MemoryStore):
    """Declares ``persistence`` as well (the checks here never call reopen)."""

    declared = frozenset({Capability.LEDGER, Capability.PERSISTENCE})


class NoLedgerStore(MemoryStore):
    """Breaks CAP-003: does not declare ``ledger``."""

    declared = frozenset({Capability.PERSISTENCE})


class StringCapabilitiesStore(MemoryStore):
    """Breaks CAP-001: declares strings, not capabilities."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        """Strings where capabilities belong."""
        return frozenset({"ledger"})  # type: ignore[arg-type]


SAMPLE = (
    make("declares_refusal", ("CAP-002",), passes),
    make("reads_empty", ("LED-011", "LED-012"), passes),
    make("contiguous", ("LED-002", "LED-004"), fails_on_led_002),
    make("crashing", ("LED-005", "LED-006"), crashes),
    make("reopen_same", ("LED-015",), passes, capability=Capability.PERSISTENCE),
)


@pytest.fixture(scope="module")
def sample_report() -> Report:
    """One run of the sample checks against the ledger-only store."""
    return run_suite(LedgerOnlyStore, profile="smoke", checks=SAMPLE, store_name="sample")


def test_every_active_id_appears_exactly_once(sample_report: Report) -> None:
    """The report lists every active requirement id of the index exactly once (CAP-004)."""
    listed = [result.id for result in sample_report.requirements]
    assert sorted(listed) == sorted(conformance_ids())
    assert len(listed) == len(set(listed))


def test_passing_check_passes_its_ids(sample_report: Report) -> None:
    """A check that ran and passed makes its ids passed."""
    assert sample_report.status_of("LED-011") == PASSED
    assert sample_report.status_of("LED-012") == PASSED


def test_check_failure_fails_only_the_named_ids(sample_report: Report) -> None:
    """A CheckFailure fails the ids it names; the check's other ids are not passed by it."""
    assert sample_report.status_of("LED-002") == "failed"
    assert sample_report.status_of("LED-004") == NOT_RUN


def test_unexpected_error_fails_every_id_of_the_check(sample_report: Report) -> None:
    """Any other exception fails all ids of the check, with the traceback in the detail."""
    assert sample_report.status_of("LED-005") == "failed"
    assert sample_report.status_of("LED-006") == "failed"
    crashed = next(result for result in sample_report.checks if result.name == "crashing")
    assert crashed.failed_ids == ("LED-005", "LED-006")
    assert "RuntimeError" in crashed.detail
    assert "Traceback" in crashed.detail


def test_failure_naming_an_id_the_check_does_not_cover_fails_all_its_ids() -> None:
    """A CheckFailure citing an id outside the check's ids is a defect: every id fails."""

    def cites_other(context: CheckContext) -> None:
        raise CheckFailure(["LED-010"], "cites an id the check does not cover")

    checks = (make("stray", ("LED-008", "LED-009"), cites_other),)
    report = run_suite(LedgerOnlyStore, profile="smoke", checks=checks)
    assert report.status_of("LED-008") == "failed"
    assert report.status_of("LED-009") == "failed"
    assert report.status_of("LED-010") == NOT_RUN


def test_group_of_check_failures_fails_their_union() -> None:
    """A group of CheckFailures (distinct bugs) fails exactly the ids they name together."""

    def two_bugs(context: CheckContext) -> None:
        raise ExceptionGroup(
            "two bugs",
            [CheckFailure(["LED-008"], "first"), CheckFailure(["LED-009"], "second")],
        )

    checks = (make("two", ("LED-008", "LED-009", "LED-011"), two_bugs),)
    report = run_suite(LedgerOnlyStore, profile="smoke", checks=checks)
    assert report.status_of("LED-008") == "failed"
    assert report.status_of("LED-009") == "failed"
    assert report.status_of("LED-011") == NOT_RUN


def test_uncovered_ids_are_not_run(sample_report: Report) -> None:
    """An id no check covers is not_run, never passed."""
    assert sample_report.status_of("ARC-001") == NOT_RUN


def test_absent_capability_is_not_applicable_when_refusal_passed(sample_report: Report) -> None:
    """A requirement of an undeclared capability is not_applicable once CAP-002 passed."""
    assert sample_report.status_of("CAP-002") == PASSED
    assert sample_report.status_of("LED-015") == NOT_APPLICABLE
    reopen = next(result for result in sample_report.checks if result.name == "reopen_same")
    assert reopen.status == NOT_RUN
    assert "persistence" in reopen.message


def test_absent_capability_is_not_run_when_refusal_failed() -> None:
    """Without a passing CAP-002 check, requirements of undeclared capabilities stay not_run."""
    checks = (
        make("declares_refusal", ("CAP-002",), crashes),
        make("reopen_same", ("LED-015",), passes, capability=Capability.PERSISTENCE),
    )
    report = run_suite(LedgerOnlyStore, profile="smoke", checks=checks)
    assert report.status_of("CAP-002") == "failed"
    assert report.status_of("LED-015") == NOT_RUN


def test_declared_capability_checks_run() -> None:
    """A check of a declared optional capability runs and can pass."""
    checks = (make("reopen_same", ("LED-015",), passes, capability=Capability.PERSISTENCE),)
    report = run_suite(PersistentDeclaringStore, profile="smoke", checks=checks)
    assert report.status_of("LED-015") == PASSED
    assert report.capabilities == frozenset({Capability.LEDGER, Capability.PERSISTENCE})


def test_declaration_without_ledger_fails_cap_003_and_runs_nothing() -> None:
    """A store not declaring ledger fails CAP-003 and no check runs (CAP-003)."""
    report = run_suite(NoLedgerStore, profile="smoke", checks=SAMPLE)
    assert report.status_of("CAP-003") == "failed"
    assert report.checks[0].name == DECLARATION_CHECK
    assert all(result.status == NOT_RUN for result in report.checks[1:])
    assert report.status_of("LED-011") == NOT_RUN
    assert report.status_of("LED-015") == NOT_RUN
    assert not report.ok


def test_malformed_declaration_fails_cap_001() -> None:
    """Capabilities that are not Capability members fail CAP-001."""
    report = run_suite(StringCapabilitiesStore, profile="smoke", checks=SAMPLE)
    assert report.status_of("CAP-001") == "failed"
    assert report.status_of("LED-011") == NOT_RUN


def test_hypothesis_reproduction_is_kept_in_the_detail() -> None:
    """A Hypothesis failure keeps the shrunk falsifying example in the check's detail."""
    report = run_suite(
        LedgerOnlyStore, profile="smoke", checks=(make("window", ("LED-008",), hypothesis_fails),)
    )
    window = next(result for result in report.checks if result.name == "window")
    assert window.failed_ids == ("LED-008",)
    assert "number=0" in window.detail
    assert "window broken at 0" in window.message


def test_derandomize_and_no_shrink_reach_the_checks_and_are_restored() -> None:
    """derandomize and shrink=False change the profiles' settings during the run only."""
    seen: list[tuple[bool, bool]] = []

    def record(context: CheckContext) -> None:
        chosen = settings_for(context.profile)
        seen.append((chosen.derandomize, Phase.shrink in chosen.phases))

    before = settings.get_current_profile_name()
    settings.register_profile("test-report-random", derandomize=False)
    settings.load_profile("test-report-random")
    try:
        report = run_suite(
            LedgerOnlyStore,
            profile="smoke",
            checks=(make("record", ("LED-012",), record),),
            derandomize=True,
            shrink=False,
        )
        assert settings.get_current_profile_name() == "test-report-random"
        assert settings_for("smoke").derandomize is False
        assert Phase.shrink in settings_for("smoke").phases
    finally:
        settings.load_profile(before)
    assert seen == [(True, False)]
    assert report.suite.derandomize is True
    assert report.suite.shrink is False


def test_requirement_status_table() -> None:
    """requirement_status follows the CAP-004 table row by row."""
    ledger, persistence = Capability.LEDGER, Capability.PERSISTENCE
    declared = frozenset({ledger})
    passed = CheckResult("a", ("X-1",), ledger, PASSED)
    failed = CheckResult("b", ("X-1",), ledger, "failed", failed_ids=("X-1",))
    other_failed = CheckResult("c", ("X-1", "X-2"), ledger, "failed", failed_ids=("X-2",))
    absent = CheckResult("d", ("X-1",), persistence, NOT_RUN)
    assert requirement_status("X-1", [passed, failed], declared, absence_checked=True) == "failed"
    assert requirement_status("X-1", [passed, absent], declared, absence_checked=True) == PASSED
    assert requirement_status("X-1", [other_failed], declared, absence_checked=True) == NOT_RUN
    assert requirement_status("X-1", [absent], declared, absence_checked=True) == NOT_APPLICABLE
    assert requirement_status("X-1", [absent], declared, absence_checked=False) == NOT_RUN
    assert requirement_status("X-1", [], declared, absence_checked=True) == NOT_RUN


def test_json_has_exactly_the_documented_shape(sample_report: Report) -> None:
    """to_json gives suite, store, capabilities, requirements, checks and summary."""
    document = json.loads(sample_report.to_json())
    # and, for a failing run, where to start and the failures in that order (issue 35)
    assert set(document) == {"suite", "store", "capabilities", "requirements", "checks", "summary",
                             "startHere", "failureOrder"}
    assert document["startHere"].startswith(f"Start here: {document['failureOrder'][0]} ")
    seed = document["suite"].pop("seed")
    assert isinstance(seed, int) and seed == sample_report.suite.seed  # drawn: no seed given
    assert document["suite"] == {
        "name": "convledger-conformance",
        "version": "0.1.0",
        "specVersion": "0.1",
        "profile": "smoke",
        "derandomize": False,
        "shrink": True,
    }
    assert document["store"] == "sample"
    assert document["capabilities"] == ["ledger"]
    for entry in document["requirements"]:
        assert set(entry) == {"id", "status", "chapter", "level", "checks"}
    assert set(document["summary"]) == {"passed", "failed", "not_applicable", "not_run"}
    assert sum(document["summary"].values()) == len(conformance_ids())
    led_002 = next(entry for entry in document["requirements"] if entry["id"] == "LED-002")
    assert led_002 == {
        "id": "LED-002",
        "status": "failed",
        "chapter": "ledger.md",
        "level": "MUST",
        "checks": ["contiguous"],
    }
    names = [entry["name"] for entry in document["checks"]]
    assert names == [DECLARATION_CHECK, FRESH_CHECK, *(item.name for item in SAMPLE)]


def test_table_groups_by_chapter_then_failures_then_summary(sample_report: Report) -> None:
    """The terminal table lists chapters with their ids, then failure details, then a summary."""
    text = sample_report.render()
    lines = text.splitlines()
    assert "ledger.md" in lines
    assert lines.index("ledger.md") < next(
        number for number, line in enumerate(lines) if line.strip().startswith("LED-002")
    )
    assert any(line.startswith("Failures, root cause first (") for line in lines)
    assert "--- #1 contiguous [LED-002] (start here): seq 2 was skipped" in text
    summary = next(line for line in lines if line.startswith("convledger-conformance "))
    assert summary.startswith("convledger-conformance 0.1.0 (spec 0.1) on sample")
    assert "3 failed" in summary
    closing = lines[lines.index(summary):]  # the summary, then where to start (issue 35)
    assert lines[0] == closing[-1] and closing[-1].startswith("Start here: contiguous [LED-002]")
    assert len(closing) <= 3 and all(
        line.endswith(")") or " not_applicable: " in line for line in closing[:-1])


def test_junit_has_one_testcase_per_check_with_requirement_properties(
    sample_report: Report, tmp_path: Path
) -> None:
    """JUnit XML parses, has one testcase per check, and requirement ids as properties."""
    target = tmp_path / "report.xml"
    sample_report.to_junit(target)
    root = ElementTree.parse(target).getroot()
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert set(cases) == {DECLARATION_CHECK, FRESH_CHECK, *(item.name for item in SAMPLE)}
    contiguous = cases["contiguous"]
    requirements = [
        prop.get("value")
        for prop in contiguous.iter("property")
        if prop.get("name") == "requirement"
    ]
    assert requirements == ["LED-002", "LED-004"]
    failure = contiguous.find("failure")
    assert failure is not None
    assert "seq 2 was skipped" in (failure.text or "")
    assert cases["reopen_same"].find("skipped") is not None
    assert cases["reads_empty"].find("failure") is None


def test_store_data_in_a_failure_cannot_break_the_report(tmp_path: Path) -> None:
    """Controls and lone surrogates in a failure are escaped; JSON, JUnit and table stay valid."""

    def hostile(context: CheckContext) -> None:
        raise CheckFailure(["LED-014"], "payload \x00\x1b[2J\ud800 changed")

    report = run_suite(
        LedgerOnlyStore, profile="smoke", checks=(make("hostile", ("LED-014",), hostile),)
    )
    assert report.status_of("LED-014") == "failed"
    target = tmp_path / "report.xml"
    report.to_junit(target)
    failure = ElementTree.parse(target).getroot().find(".//failure")
    assert failure is not None
    assert "\\u0000" in (failure.text or "")
    document = json.loads(report.to_json().encode("utf-8"))
    assert document["summary"]["failed"] == 1
    assert "\x1b" not in report.render()
    report.render().encode("utf-8")


def test_progress_lines_on_a_plain_stream() -> None:
    """Without a TTY, progress is one plain line per check: i/N and name.

    N counts every check of the report: the declaration and fresh_store first.
    """
    stream = io.StringIO()
    report = run_suite(LedgerOnlyStore, profile="smoke", checks=SAMPLE, progress=stream)
    lines = stream.getvalue().splitlines()
    total = len(report.checks)
    assert len(lines) == total == len(SAMPLE) + 2
    assert lines[0].startswith(f"conformance [1/{total}] {DECLARATION_CHECK} (")
    assert lines[1].startswith(f"conformance [2/{total}] {FRESH_CHECK} (")
    assert lines[2].startswith(f"conformance [3/{total}] declares_refusal (")
    assert "\r" not in stream.getvalue()


def test_progress_line_is_rewritten_in_place_on_a_tty() -> None:
    """On a TTY the progress line is rewritten with carriage returns and cleared at the end."""
    primary, secondary = os.openpty()
    with os.fdopen(secondary, "w") as terminal:
        line = ProgressLine(terminal)
        line.show(1, 2, "first")
        line.show(2, 2, "second")
        line.close()
    chunks = []
    while True:  # a pty hands the bytes over in pieces; read until the other end is gone
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # EIO: the terminal side is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    written = b"".join(chunks).decode()
    assert written.startswith("\r\x1b[Kconformance [1/2] first (")
    assert "\r\x1b[Kconformance [2/2] second (" in written
    assert "\n" not in written
    assert written.endswith("\r\x1b[K")


def test_run_suite_refuses_bad_arguments() -> None:
    """run_suite rejects an unknown profile and a non-callable factory with clear errors."""
    with pytest.raises(ValueError):
        run_suite(LedgerOnlyStore, profile="fast", checks=())
    with pytest.raises(TypeError):
        run_suite(LedgerOnlyStore(), profile="smoke", checks=())  # type: ignore[arg-type]


def test_a_check_needing_an_undeclared_further_capability_is_not_run_and_not_applicable() -> None:
    """A check whose ``also`` capability is undeclared does not run; its ids are not_applicable."""
    ran: list[str] = []

    def records(context: CheckContext) -> None:
        ran.append("ran")

    needs_more = Check(
        name="needs_persistence_too", ids=("LED-015",), capability=Capability.LEDGER,
        run=records, doc="needs persistence too", also=(Capability.PERSISTENCE,),
    )
    checks = (make("declares_refusal", ("CAP-002",), passes), needs_more)
    report = run_suite(MemoryStore, profile="smoke", checks=checks)
    assert ran == []
    assert {r.name: r.status for r in report.checks}["needs_persistence_too"] == "not_run"
    assert report.status_of("LED-015") == NOT_APPLICABLE
