"""The fault sweeps kill every broken store of the faults gallery (``galleries/faults.py``).

Each broken store runs the fault checks that cover its tagged ids (or the
one check its record names), at the ``ci`` profile; the report must fail at
least those ids. The checks that killed it are printed (``pytest -s``).
"""

from __future__ import annotations

import pytest

from galleries import BrokenStore
from galleries.faults import BROKEN
from kill_table import kill


@pytest.mark.parametrize("broken", BROKEN, ids=lambda broken: broken.name)
def test_the_fault_sweeps_kill_the_broken_store(broken: BrokenStore) -> None:
    """A store that mishandles a failed write fails its tagged FLT ids."""
    checks = [item for item in broken.selected() if item.name.startswith("faults_")]
    assert checks, f"no fault check selected for {broken.name}"
    row = kill(broken, checks)
    print(f"\n{row.line()}")
    assert set(broken.catches) <= set(row.failed), row.line()
