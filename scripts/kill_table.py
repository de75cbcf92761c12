"""Issue 7's kill table: every broken store of every gallery against its focused checks at ci.

Not a test: run ``python scripts/kill_table.py`` and read the markdown table
it prints (store, requirement ids, the check(s) that killed it with the
examples each tried up to its first failure, killed yes/no), then the
totals. Runs are derandomized and unshrunk (see ``tests/kill_table.py``).
Exits 1 when a broken store survives (a tagged id not reported failed).

The galleries: ``tests/broken_stores.py``, ``broken_sqlite_stores.py``,
``broken_runtime_stores.py``, ``broken_issue5_stores.py``, and the stores
defined in ``test_conformance_transitions.py`` and ``test_sqlite_machine.py``
(the last three of which only a state machine catches: their focused check is
that machine).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from broken_issue5_stores import BROKEN_ISSUE5_STORES  # noqa: E402
from broken_runtime_stores import BROKEN_RUNTIME_STORES  # noqa: E402
from broken_sqlite_stores import BROKEN_SQLITE_STORES, factory_of  # noqa: E402
from broken_stores import BROKEN_STORES  # noqa: E402
from convledger_conformance.registry import Check, all_checks  # noqa: E402
from kill_table import KillRow, focused, kill, render_table  # noqa: E402


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


def main() -> int:
    """Print the kill table and totals; 1 when a broken store survives."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="ci", help="the conformance profile (default ci)")
    arguments = parser.parse_args()
    started = time.perf_counter()
    rows: list[KillRow] = []
    scratch = Path(tempfile.mkdtemp(prefix="convledger-kill-table-"))
    try:
        for case in cases(scratch):
            row = kill(case, list(case.checks), name=f"{case.name} ({case.gallery})",
                       factory=case.factory, profile=arguments.profile)
            print(row.line(), file=sys.stderr, flush=True)
            rows.append(row)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.perf_counter() - started
    survivors = [row.store for row in rows if not row.killed]
    print(render_table(rows))
    print()
    print(f"broken stores: {len(rows)}")
    print(f"all killed: {'yes' if not survivors else 'no'}"
          + (f" (survivors: {', '.join(survivors)})" if survivors else ""))
    print(f"examples to kill, total: {sum(row.examples_to_kill for row in rows)}")
    print(f"wall time: {seconds:.1f} s (profile {arguments.profile}, derandomized, unshrunk)")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
