"""Spec ids, the shipped index, the checks and the reference kept in step both ways.

Regenerate the index after editing ``spec/`` with::

    python -m convledger_conformance.requirements spec --write
"""

from __future__ import annotations

import re
from pathlib import Path

from convledger_conformance.registry import all_checks, covered_ids
from convledger_conformance.requirements import (
    load_index,
    parse_spec,
    render_index,
)

ROOT = Path(__file__).resolve().parents[1]
_ID = re.compile(r"\b[A-Z]{3}-\d{3}\b")


def _index_ids() -> frozenset[str]:
    return frozenset(requirement.id for requirement in load_index())


def _active_ids() -> frozenset[str]:
    """The active ids a conformance check covers: not retired, not reference-only."""
    return frozenset(
        requirement.id for requirement in load_index()
        if not requirement.retired and not requirement.reference_only
    )


def _reference_only_ids() -> frozenset[str]:
    return frozenset(
        requirement.id for requirement in load_index()
        if not requirement.retired and requirement.reference_only
    )


def test_shipped_index_equals_the_spec() -> None:
    """requirements.json is exactly the index generated from spec/*.md."""
    shipped = (ROOT / "conformance" / "convledger_conformance" / "requirements.json").read_text(
        "utf-8"
    )
    assert shipped == render_index(parse_spec(ROOT / "spec")), (
        "requirements.json is stale: run "
        "`python -m convledger_conformance.requirements spec --write`"
    )


def test_every_active_id_is_covered_by_a_check() -> None:
    """Every active requirement id is covered by at least one registered check."""
    uncovered = sorted(_active_ids() - covered_ids())
    assert not uncovered, f"requirement ids no check covers: {uncovered}"


def test_every_id_a_check_cites_exists_and_is_active() -> None:
    """Every id a check covers is in the index and not retired."""
    active = _active_ids()
    unknown = sorted(
        f"{item.name}: {requirement}"
        for item in all_checks()
        for requirement in item.ids
        if requirement not in active
    )
    assert not unknown, f"checks cite ids that are unknown or retired: {unknown}"


def test_every_id_the_reference_cites_exists() -> None:
    """Every requirement id cited anywhere in reference/convledger/**/*.py is in the index."""
    known = _index_ids()
    unknown: dict[str, list[str]] = {}
    reference = ROOT / "reference" / "convledger"
    for path in sorted(reference.rglob("*.py")):
        for requirement in sorted(set(_ID.findall(path.read_text("utf-8"))) - known):
            unknown.setdefault(requirement, []).append(str(path.relative_to(reference)))
    unknown = dict(sorted(unknown.items()))
    listed = [f"{requirement} ({', '.join(paths)})" for requirement, paths in unknown.items()]
    assert not unknown, f"the reference cites ids the index does not have: {listed}"


def test_every_reference_only_id_is_named_by_a_test() -> None:
    """Ids of a reference-only chapter (spec/README.md) are judged by tests, not checks.

    No capability singles out the PostgreSQL store, so no check can be confined
    to it; each PGS id is named by a test of ``tests/test_postgres_*.py``
    instead, and no check may cite one (the test above refuses it).
    """
    named: set[str] = set()
    for path in sorted((ROOT / "tests").glob("test_postgres_*.py")):
        named |= set(_ID.findall(path.read_text("utf-8")))
    missing = sorted(_reference_only_ids() - named)
    assert not missing, f"reference-only ids no test names: {missing}"
