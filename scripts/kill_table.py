"""Issue 7's kill table: every broken store of every gallery against its focused checks at ci.

Not a test: run ``python scripts/kill_table.py`` and read the markdown table
it prints (store, requirement ids, the check(s) that killed it with the
examples each tried up to its first failure, killed yes/no), then the
totals. Runs are derandomized and unshrunk (see ``tests/kill_table.py``).
Exits 1 when a broken store survives (a tagged id not reported failed).

The galleries are listed in ``tests/galleries.py``; the last three stores
(DecidesOutsideTheLock and the two of ``test_sqlite_machine.py``) only a state
machine catches: their focused check is that machine.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
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
