"""Archive vectors: recorded from the reference, shipped, and imported by every store."""

from __future__ import annotations

import base64
import copy
from pathlib import Path

import pytest

from convledger.memory import MemoryStore
from convledger.sqlite import new_file_store
from convledger_conformance.ledger import archive_cases
from convledger_conformance.registry import all_checks
from convledger_conformance.report import FAILED, PASSED
from convledger_conformance.runner import run_suite
from galleries.runtime import ImportForgetsRuntime

ROOT = Path(__file__).resolve().parents[1]


def _checks() -> list[object]:
    return [item for item in all_checks() if item.name.startswith("archive_vectors_")]


def test_shipped_cases_equal_a_fresh_recording() -> None:
    """spec/vectors/archives/cases.json and the package copy hold exactly what is recorded now."""
    assert archive_cases.main([str(ROOT)]) == 0


def test_cases_cover_valid_and_every_refusal_kind() -> None:
    """The file holds valid archives and refusals of kinds invalid_input, integrity,
    replay_refused and not_supported."""
    kinds = {case["expect"].get("error", "imported") for case in archive_cases.shipped()["cases"]}
    assert kinds == {"imported", "invalid_input", "integrity", "replay_refused", "not_supported"}


@pytest.mark.parametrize("factory", [MemoryStore, new_file_store], ids=["memory", "sqlite"])
def test_reference_stores_pass_every_archive_case(factory: object) -> None:
    """Both reference stores import, refuse and re-export every case as recorded."""
    report = run_suite(factory, profile="smoke", checks=_checks(), derandomize=True)  # type: ignore[arg-type]
    statuses = {item.name: item.status for item in report.checks}
    del statuses["capability_declaration"], statuses["fresh_store"]
    assert statuses == {
        "archive_vectors_ledger": PASSED, "archive_vectors_transitions": PASSED,
    }


def test_archive_cases_catch_a_store_that_drops_the_runtime() -> None:
    """A store that imports events but not the runtime companion fails TRN-106's cases."""
    report = run_suite(ImportForgetsRuntime, profile="smoke", checks=_checks(), derandomize=True)
    failed = {item.id for item in report.requirements if item.status == FAILED}
    assert "TRN-106" in failed


def test_replay_reports_a_wrong_expectation() -> None:
    """A case whose recorded kind differs from what the store answers is reported by name."""
    case = copy.deepcopy(archive_cases.shipped()["cases"][-1])
    case["expect"] = {"error": "integrity"}
    problem = archive_cases.replay(MemoryStore, case)
    assert problem is not None and case["name"] in problem


def test_valid_case_bytes_are_canonical_archives() -> None:
    """Every valid case's bytes decode and re-encode to themselves (ARC-003)."""
    from convledger import canonical

    for case in archive_cases.shipped()["cases"]:
        if case["expect"].get("imported"):
            data = base64.b64decode(case["archiveBase64"])
            assert canonical.encode(canonical.decode(data)) == data, case["name"]
