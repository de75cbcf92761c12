"""The conformance checks kill every broken runtime store of ``broken_runtime_stores.py``.

Each broken store runs, at the ``ci`` profile and derandomized, the focused
checks that cover one of the ids it is tagged with (state machines excluded:
they are slow); the report must fail at least those ids. ``pytest
-s`` prints which checks killed each store and after how many examples (runs
are unshrunk: Hypothesis stops at the first failing example).
"""

from __future__ import annotations

import pytest

from broken_runtime_stores import BROKEN_RUNTIME_STORES
from broken_stores import Broken
from convledger_conformance.registry import all_checks
from kill_table import kill


def _focused(broken: Broken) -> list[object]:
    return [
        item for item in all_checks()
        if set(item.ids) & set(broken.catches) and "machine" not in item.name
    ]


@pytest.mark.parametrize("broken", BROKEN_RUNTIME_STORES, ids=lambda b: b.store.__name__)
def test_focused_checks_kill_the_broken_runtime_store(broken: Broken) -> None:
    """The focused checks covering a broken runtime store's tagged ids fail those ids at ci."""
    checks = _focused(broken)
    assert checks, f"no focused check covers {broken.catches}"
    row = kill(broken, checks)  # type: ignore[arg-type]
    print(f"\n{row.line()}")
    assert set(broken.catches) <= row.failed
