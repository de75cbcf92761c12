"""The conformance checks kill every broken store of the runtime gallery (``galleries/runtime.py``).

Each broken store runs, at the ``ci`` profile and derandomized, the checks it
is listed with: the focused checks that cover one of the ids it is tagged
with (state machines excluded: they are slow), or the machine that alone
catches it; the report must fail at least those ids. ``pytest -s`` prints
which checks killed each store and after how many examples (runs are
unshrunk: Hypothesis stops at the first failing example).
"""

from __future__ import annotations

import pytest

from convledger_conformance.requirements import active_ids
from galleries import BrokenStore
from galleries.runtime import BROKEN
from kill_table import kill


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_focused_checks_kill_the_broken_runtime_store(broken: BrokenStore) -> None:
    """The checks a broken runtime store is listed with fail its tagged ids at ci."""
    checks = list(broken.selected())
    assert checks, f"no focused check covers {broken.catches}"
    row = kill(broken, checks)
    print(f"\n{row.line()}")
    assert set(broken.catches) <= row.failed


def test_every_broken_runtime_store_names_its_one_bug() -> None:
    """Each broken runtime store's docstring opens with the ids of its bug, its first tag among
    them; every tag is active."""
    assert len({b.name for b in BROKEN}) == len(BROKEN)
    for broken in BROKEN:
        assert broken.chapter == "runtime" and set(broken.catches) <= active_ids()
        named = (broken.factory.__doc__ or "").split(":")[0].split(", ")
        assert broken.catches[0] in named
