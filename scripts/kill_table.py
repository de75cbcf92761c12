"""Issue 7's kill table: every broken store of every gallery against its focused checks at ci.

Not a test: run ``python scripts/kill_table.py`` and read the markdown table
it prints (store, requirement ids, the check(s) that killed it with the
examples each tried up to its first failure, killed yes/no), then the
totals. Runs are derandomized and unshrunk (see ``tests/kill_table.py``).
Exits 1 when a broken store survives (a tagged id not reported failed).

The galleries are the modules of ``tests/galleries/`` (one per chapter,
:func:`galleries.cases` lists their stores; the PostgreSQL gallery's stores
live in fresh schemas of ``CONVLEDGER_PG_DSN``, so it needs that server);
three stores (DecidesOutsideTheLock of the runtime gallery, HeadCachedPerHandle and
MigrationForgetsTheLastConversation of the SQLite one) only a state machine
catches: their record names that machine as their check.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from galleries import cases  # noqa: E402
from kill_table import KillRow, kill, render_table  # noqa: E402


def main() -> int:
    """Print the kill table and totals; 1 when a broken store survives."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="ci", help="the conformance profile (default ci)")
    arguments = parser.parse_args()
    started = time.perf_counter()
    rows: list[KillRow] = []
    for broken in cases():
        row = kill(broken, list(broken.selected()), name=f"{broken.name} ({broken.chapter})",
                   profile=arguments.profile)
        print(row.line(), file=sys.stderr, flush=True)
        rows.append(row)
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
