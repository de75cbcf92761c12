"""Every claim the table of LED-022 lists is sent false by a check (issue 37).

``spec/ledger.md`` lists, under "Claims a producer makes", each value a
caller asserts and the id that says what a store does with it; each of those
ids must be covered by a registered conformance check (the checks of SPL-053,
SPL-043, TRN-104, PRJ-042 and ARC-006 .. ARC-008 send the claim false and
expect the refusal; ``claimed_hashes_are_data`` sends false provider hashes).
"""

from __future__ import annotations

import re
from pathlib import Path

from convledger_conformance.registry import all_checks

LEDGER = Path(__file__).resolve().parents[1] / "spec" / "ledger.md"


def _table_ids() -> set[str]:
    text = LEDGER.read_text("utf-8").split("## Claims a producer makes", 1)[1]
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    found: set[str] = set()
    for row in rows[1:]:
        for first, last in re.findall(r"([A-Z]{3}-\d{3})(?: \.\. ([A-Z]{3}-\d{3}))?", row):
            if not last:
                found.add(first)
                continue
            prefix, start, end = first[:4], int(first[4:]), int(last[4:])
            found |= {f"{prefix}{n:03d}" for n in range(start, end + 1)}
    return found


def test_the_table_lists_each_claim_with_its_id() -> None:
    ids = _table_ids()
    assert {"PRV-021", "SPL-053", "SPL-043", "TRN-104", "PRJ-042", "ARC-007"} <= ids


def test_every_claim_of_the_table_is_covered_by_a_check() -> None:
    covered = {requirement for item in all_checks() for requirement in item.ids}
    assert sorted(_table_ids() - covered) == []
