"""Operation-trace vectors: recorded from the reference, shipped, replayed on every store."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from convledger.memory import MemoryStore
from convledger.sqlite import memory_store_factory, new_file_store
from convledger_conformance.registry import all_checks
from convledger_conformance.report import FAILED, PASSED
from convledger_conformance.runner import run_suite
from convledger_conformance.vectors import corpus, traces
from galleries.runtime import DuplicateAnswersProposedIds, PurgeLeavesNoTombstone

ROOT = Path(__file__).resolve().parents[1]
VECTORS = ROOT / "spec" / "vectors"


def _trace_checks() -> list[object]:
    return [item for item in all_checks() if item.name.startswith("trace_vectors_")]


def test_shipped_traces_equal_a_fresh_recording() -> None:
    """spec/vectors/traces and the package copies hold exactly what the corpus records now."""
    assert corpus.main([str(ROOT)]) == 0


def test_every_vector_file_has_a_consumer() -> None:
    """Every file under spec/vectors is read by a runner: canonical, archive or trace cases."""
    files = {
        path.relative_to(VECTORS).as_posix()
        for path in VECTORS.rglob("*") if path.is_file() and path.name != "README.md"
    }
    consumed = {"canonical/cases.json", "archives/cases.json"} | {
        f"traces/{name}" for name in traces.trace_files()
    }
    assert files == consumed


def test_every_trace_file_has_a_check() -> None:
    """Each shipped trace file is registered as one conformance check."""
    names = {item.name for item in _trace_checks()}  # type: ignore[attr-defined]
    expected = {
        "trace_vectors_" + name.removesuffix(".json").replace("-", "_")
        for name in traces.trace_files()
    }
    assert names == expected


@pytest.mark.parametrize(
    "factory", [MemoryStore, new_file_store, memory_store_factory()],
    ids=["memory", "sqlite-file", "sqlite-memory"],
)
def test_reference_stores_pass_every_trace(factory: object) -> None:
    """Both reference stores answer every recorded step and reach every recorded digest."""
    report = run_suite(factory, profile="smoke", checks=_trace_checks(), derandomize=True)  # type: ignore[arg-type]
    statuses = {item.name: item.status for item in report.checks}
    assert all(status == PASSED for status in statuses.values()), statuses


@pytest.mark.parametrize(
    ("broken", "ids"),
    [(DuplicateAnswersProposedIds, {"TRN-021"}), (PurgeLeavesNoTombstone, {"TRN-092"})],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_traces_catch_broken_stores(broken: type[MemoryStore], ids: set[str]) -> None:
    """A store with one runtime bug fails the trace that exercises it, naming its ids."""
    report = run_suite(broken, profile="smoke", checks=_trace_checks(), derandomize=True)
    failed = {item.id for item in report.requirements if item.status == FAILED}
    assert ids <= failed


def test_replay_reports_the_first_differing_step() -> None:
    """A recording tampered at one step is reported at that step, with both answers."""
    document = copy.deepcopy(traces.trace_files()["transitions.json"]["traces"][0])
    document["steps"][1]["expect"] = {"outcome": "applied", "version": 99}
    problems = traces.replay(MemoryStore, document)
    assert len(problems) == 1 and "step 2" in problems[0] and "duplicate" in problems[0]


def test_replay_reports_a_wrong_digest() -> None:
    """A recording whose state digest differs is reported even when the outcome matches."""
    document = copy.deepcopy(traces.trace_files()["transitions.json"]["traces"][0])
    document["steps"][0]["digest"] = "0" * 64
    problems = traces.replay(MemoryStore, document)
    assert len(problems) == 1 and "digest" in problems[0]
