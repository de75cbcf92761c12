"""The state machines' own kill table: every gallery store a machine can name, against it.

Not a test: ``python scripts/machine_kill_table.py --checks ledger_state_machine,...
--json rows.json`` runs each named machine check, derandomized and unshrunk at ``ci``
(``tests/kill_table.py``), against every broken store of ``tests/galleries`` whose tagged
ids the check covers, and prints one JSON row per (store, check): the checks that failed
it, the examples it took (0: survived) and the CPU seconds. The gallery tests run the
focused checks and leave the machines out, so this is how a change to a machine shows
that it kills what it killed before, after as many examples (issue 34).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from convledger_conformance.registry import all_checks  # noqa: E402
from galleries import cases  # noqa: E402
from kill_table import kill  # noqa: E402


def main() -> int:
    """Print one row per (store, machine) and write them all to ``--json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", required=True, help="machine checks, comma-separated")
    parser.add_argument("--json", required=True, help="where to write the rows")
    arguments = parser.parse_args()
    names = arguments.checks.split(",")
    checks = {item.name: item for item in all_checks() if item.name in names}
    rows = []
    for broken in cases():
        for name in names:
            check = checks[name]
            if not set(check.ids) & set(broken.catches):
                continue
            started = time.process_time()
            row = kill(broken, [check], name=f"{broken.name} ({broken.chapter})")
            record = {"store": row.store, "check": name, "killed_by": list(row.killed_by),
                      "examples": row.examples_to_kill,
                      "cpu": round(time.process_time() - started, 2)}
            print(json.dumps(record), flush=True)
            rows.append(record)
    Path(arguments.json).write_text(json.dumps(rows, indent=0), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
