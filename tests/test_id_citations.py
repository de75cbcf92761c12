"""A grep for any requirement id lands on the code that enforces it.

Every id defined in ``spec/*.md`` (``- **LED-002** ...``) must occur literally
in code: in ``reference/convledger`` (the store enforces it), in
``conformance/convledger_conformance`` (the suite, the report or the wire
client enforces it) or in ``interop`` (the TypeScript kit and its servers). An id that occurs
only inside a range (``TRN-040 .. TRN-066``) does not count. The reference
(or a wire server) must cite every id except the few whose code is the
suite's alone, listed in :data:`SUITE_ONLY`; :data:`NO_CODE` lists the ids
that have no code at all. Both lists fail when they go stale.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_ITEM = re.compile(r"^- \*\*(?P<id>[A-Z]{3}-\d{3})\*\* (?P<text>.+)$")
_ID = re.compile(r"\b[A-Z]{3}-\d{3}\b")
_RANGE = re.compile(r"\b[A-Z]{3}-\d{3}\s*(?:\.\.\.?|…|–|—|\bto\b|\bthrough\b)\s*[A-Z]{3}-\d{3}\b")

NO_CODE: dict[str, str] = {
    # id: why no code can cite it. Empty: every id of the spec has code today.
}

SUITE_ONLY: dict[str, str] = {
    # id: where its code is; it binds the suite or the wire client, never a store.
    "CAP-004": "the report's statuses: convledger_conformance/report.py",
    "CAP-006": "one finding per broken helper call: convledger_conformance/runner.py",
    "CAP-007": "a selection's report lists the other ids as not selected: runner.py",
    "WIR-024": "the wire client sends one request at a time: wire/connection.py",
    "WIR-031": "the wire client answers callback frames: wire/connection.py",
    "WIR-034": "the wire client refuses store calls from callbacks: wire/connection.py",
    "DUR-013": "the crash run reports a search past its bound: durability/history.py, cli.py",
    "DUR-015": "the crash run fails a check it could not make: durability/crash.py, cli.py",
    "DUR-016": "the crash run's not_applicable ids: durability/crash.py (NEEDS), cli.py",
}


def _spec_ids() -> dict[str, str]:
    """Every id of the spec with its sentence."""
    found = {}
    for path in sorted((ROOT / "spec").glob("*.md")):
        for line in path.read_text("utf-8").splitlines():
            match = _ITEM.match(line)
            if match is not None:
                found[match["id"]] = match["text"]
    return found


def _cited(base: Path, suffixes: tuple[str, ...]) -> frozenset[str]:
    """The ids that occur literally, outside any range, in the files under ``base``."""
    cited: set[str] = set()
    for path in sorted(base.rglob("*")):
        if path.suffix in suffixes and "node_modules" not in path.parts and path.is_file():
            cited |= set(_ID.findall(_RANGE.sub(" ", path.read_text("utf-8"))))
    return frozenset(cited)


def _reference() -> frozenset[str]:
    return _cited(ROOT / "reference" / "convledger", (".py",)) | _cited(
        ROOT / "interop", (".py", ".js", ".mjs", ".cjs", ".ts")
    )


def _suite() -> frozenset[str]:
    return _cited(ROOT / "conformance" / "convledger_conformance", (".py",))


def _live(ids: dict[str, str]) -> set[str]:
    """Retired ids are withdrawn rules: nothing enforces them."""
    return {key for key, text in ids.items() if not text.startswith("(retired)")}


def test_every_spec_id_is_cited_in_code() -> None:
    """Each id occurs literally in the reference, the conformance suite or interop."""
    missing = sorted(_live(_spec_ids()) - _reference() - _suite() - set(NO_CODE))
    assert not missing, f"spec ids no code cites (cite them where enforced): {missing}"


def test_every_id_is_cited_by_the_reference_or_a_server() -> None:
    """Each id that binds a store occurs literally in reference/convledger or interop."""
    missing = sorted(_live(_spec_ids()) - _reference() - set(SUITE_ONLY) - set(NO_CODE))
    assert not missing, f"spec ids the reference does not cite where it enforces them: {missing}"


def test_the_allow_lists_are_current() -> None:
    """Every listed id exists, and is listed only while it lacks the citation."""
    ids = _spec_ids()
    reference, suite = _reference(), _suite()
    assert not set(NO_CODE) & set(SUITE_ONLY)
    assert sorted(set(NO_CODE) - set(ids)) == [], "NO_CODE lists unknown ids"
    assert sorted(set(SUITE_ONLY) - set(ids)) == [], "SUITE_ONLY lists unknown ids"
    assert sorted(set(NO_CODE) & (reference | suite)) == [], "NO_CODE ids that are cited now"
    assert sorted(set(SUITE_ONLY) & reference) == [], "SUITE_ONLY ids the reference cites now"
    assert sorted(set(SUITE_ONLY) - suite) == [], "SUITE_ONLY ids the suite does not cite"


def test_a_range_is_not_a_citation() -> None:
    """The ids of a range in prose are not citations; a listed id is."""
    text = "TRN-040 .. TRN-066, LED-002..LED-005 and CAN-010 to CAN-013; LED-004"
    assert set(_ID.findall(_RANGE.sub(" ", text))) == {"LED-004"}
