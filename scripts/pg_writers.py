"""The writer table (issue 15): 1, 2, 4 and 8 writer processes on one PostgreSQL store.

For each writer count, twice (each writer on a conversation of its own, then
all on one hot conversation), on a fresh schema of ``CONVLEDGER_PG_DSN``
(default ``postgresql://postgres@127.0.0.1:5432/postgres``, dropped after
each run): every writer appends ``--batches`` batches of ``--size`` events;
the store is audited (``convledger_bench.pg_load.audit``: seqs 1..n, no
eventId twice, every acknowledged batch whole at its seqs, typed refusals
only) and the throughput of all writers together is printed as a markdown
table, with the machine's load average. Exits 1 when an audit finds anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from convledger.postgres import configured_dsn
from convledger_bench.pg_load import WriterRun, run_writers


def main() -> int:
    """Print the writer table; 1 when an audit found a defect."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=200, help="batches per writer")
    parser.add_argument("--size", type=int, default=1, help="events per batch")
    parser.add_argument("--writers", default="1,2,4,8", help="writer counts")
    arguments = parser.parse_args()
    dsn = configured_dsn()
    runs: list[WriterRun] = []
    with tempfile.TemporaryDirectory() as directory:
        for hot in (False, True):
            for count in (int(n) for n in arguments.writers.split(",")):
                run = run_writers(dsn, count, hot=hot, batches=arguments.batches,
                                  size=arguments.size, directory=Path(directory))
                print(f"{count} writer(s), {'hot' if hot else 'distinct'}: "
                      f"{run.per_second:.0f} appends/s, audit ok={run.audit.ok}",
                      file=sys.stderr, flush=True)
                runs.append(run)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} "
          f"({os.cpu_count()} cores); {arguments.batches} batches of {arguments.size} "
          f"event(s) per writer")
    print()
    print("| writers | conversations | appends/s (all) | appends/s per writer | events |"
          " seq gaps | duplicated eventIds | lost | partial | refusals |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        found = run.audit
        print(f"| {run.count} | {'one hot' if run.hot else 'one each'} |"
              f" {run.per_second:.0f} | {run.per_second / run.count:.0f} | {found.events} |"
              f" {found.gaps} | {found.duplicated_event_ids} | {found.lost} |"
              f" {found.partial} | {found.kinds or 'none'} |")
    return 0 if all(run.audit.ok for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
