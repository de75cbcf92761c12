"""Every broken store of every gallery, with the checks focused on its bug.

``scripts/kill_table.py`` runs them for the kill table,
``scripts/record_shrunk_vectors.py`` records their shrunk failures as trace
vectors, and ``tests/test_shrunk_vectors.py`` finds the store a shipped
shrunk trace was recorded on. The galleries: ``broken_stores.py``,
``broken_sqlite_stores.py``, ``broken_runtime_stores.py``,
``broken_issue5_stores.py``, and the stores defined in
``test_conformance_transitions.py`` and ``test_sqlite_machine.py`` (imported
lazily: those test modules import :mod:`kill_table`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from broken_issue5_stores import BROKEN_ISSUE5_STORES
from broken_runtime_stores import BROKEN_RUNTIME_STORES
from broken_sqlite_stores import BROKEN_SQLITE_STORES, factory_of
from broken_stores import BROKEN_STORES
from convledger_conformance.registry import Check, all_checks
from kill_table import focused


@attrs.frozen
class Case:
    """One broken store of a gallery, how to make it, and the checks to run."""

    gallery: str
    name: str
    catches: tuple[str, ...]
    factory: Callable[[], Any]
    checks: tuple[Check, ...]


def _named(*names: str) -> tuple[Check, ...]:
    return tuple(item for item in all_checks() if item.name in names)


def cases(scratch: Path) -> Iterator[Case]:
    """Every broken store of every gallery with its focused checks."""
    for broken in BROKEN_STORES:
        yield Case("core", broken.store.__name__, broken.catches, broken.store,
                   tuple(focused(broken.catches)))
    for sqlite in BROKEN_SQLITE_STORES:
        yield Case("sqlite", sqlite.store.__name__, sqlite.catches, factory_of(sqlite.store),
                   tuple(focused(sqlite.catches)))
    for runtime in BROKEN_RUNTIME_STORES:
        yield Case("runtime", runtime.store.__name__, runtime.catches, runtime.store,
                   tuple(focused(runtime.catches)))
    for issue5 in BROKEN_ISSUE5_STORES:
        yield Case("issue5", issue5.name, issue5.catches, issue5.factory,
                   tuple(focused(issue5.catches)))
    import test_conformance_transitions as transitions

    for store, catches in transitions.BROKEN:
        yield Case("transitions", store.__name__, catches, store, tuple(focused(catches)))
    yield Case("transitions", "DecidesOutsideTheLock", ("TRN-003",),
               transitions.DecidesOutsideTheLock, _named("runtime_state_machine"))
    import test_sqlite_machine as machine

    for store, catch in ((machine.HeadCachedPerHandle, "SQL-047"),
                         (machine.MigrationForgetsTheLastConversation, "SQL-031")):
        directory = scratch / store.__name__
        directory.mkdir()
        yield Case("sqlite machine", store.__name__, (catch,),
                   machine.factory_of(store, directory), _named(machine.CHECK))
