"""Which shipped vector files a check consumes, and which none does.

Every check that replays a vector file says so with :func:`consume` when it is
registered. :func:`unconsumed` lists the files under this package's
``vectors/`` folder that no check consumed: a file dropped there (or renamed)
without a runner. :func:`convledger_conformance.runner.run_suite` reports them
as the failed pseudo-check :data:`INVENTORY_CHECK`, so a run never passes with
a vector file silently skipped.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Final

PACKAGE_DIR: Final = "vectors"
INVENTORY_CHECK: Final = "vector_inventory"
"""The name under which the runner reports unconsumed vector files."""

_CONSUMED: set[str] = set()


def consume(relative: str) -> None:
    """Record that a registered check replays ``vectors/<relative>`` (POSIX path)."""
    _CONSUMED.add(relative)


def consumed() -> frozenset[str]:
    """The vector files registered checks replay, relative to ``vectors/``."""
    return frozenset(_CONSUMED)


def shipped_files(folder: Path | None = None) -> frozenset[str]:
    """Every vector file under ``folder`` (default: this package's ``vectors/``), relative to it.

    The package's ``vectors/`` folder also holds this module and the other code
    of the vectors (``*.py``, ``py.typed``, ``__pycache__/``): those are not
    vector files and are left out.
    """
    root = folder if folder is not None else Path(
        str(importlib.resources.files("convledger_conformance").joinpath(PACKAGE_DIR))
    )
    return frozenset(
        path.relative_to(root).as_posix() for path in root.rglob("*")
        if path.is_file() and not _is_code(path.relative_to(root))
    )


def _is_code(relative: Path) -> bool:
    """Whether ``relative`` (under ``vectors/``) is Python code of the package, not a vector."""
    return "__pycache__" in relative.parts or relative.suffix in {".py", ".pyc", ".typed"}


def unconsumed(folder: Path | None = None) -> list[str]:
    """The shipped vector files no registered check consumes, sorted."""
    return sorted(shipped_files(folder) - consumed())
