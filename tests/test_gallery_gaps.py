"""The checks of issue 33's pinned gaps kill every broken store of the gaps gallery at smoke.

``galleries/gaps.py`` keeps, for each gap pinned in the spec, a store making
the other choice, and the two stores the suite used to pass (an archive
decoder reading ``formatVersion`` through a lax JSON decoder, a catch-up that
stops counting once it skips ignorable events). Each runs, derandomized at
the smoke profile, only the check named in its record; the report must fail
the id it is tagged with. The broken wire servers are in
``test_gallery_wire.py``.
"""

from __future__ import annotations

import pytest

from convledger_conformance.requirements import active_ids
from galleries import BrokenStore
from galleries.gaps import BROKEN
from kill_table import kill_with_report


@pytest.mark.parametrize("broken", BROKEN, ids=lambda b: b.name)
def test_the_named_check_kills_the_broken_store_at_smoke(broken: BrokenStore) -> None:
    """The check in the record fails the store's tagged id at the smoke profile."""
    selected = broken.selected()
    assert [item.name for item in selected] == list(broken.checks)
    row, _ = kill_with_report(broken, selected, profile="smoke")
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed)


def test_every_broken_store_names_its_one_bug() -> None:
    """Each broken store's docstring names the first id it is tagged with, an active id."""
    for broken in BROKEN:
        assert broken.catches and set(broken.catches) <= active_ids()
        assert (broken.factory.__doc__ or "").split(":")[0] == broken.catches[0]
