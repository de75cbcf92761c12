"""Writer processes on one PostgreSQL store at small size (issue 15, ``scripts/pg_writers.py``).

Three writer processes append batches of two to one hot conversation, on a
fresh schema (the script's table adds 1, 2, 4 and 8 writers, hot and on
conversations of their own; ``test_postgres_concurrency.py`` mixes both): the audit
finds seqs 1..n, no eventId twice, every batch acknowledged and stored whole
at its seqs, and no refusal at all (nothing here should be refused).
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

from convledger_bench.pg_load import run_writers


def test_writers_leave_whole_gapless_ledgers(pg_dsn: str, tmp_path: Path) -> None:
    """PGS-010, LED-017: every acknowledged batch stored whole, 1..n, nothing refused."""
    count = 3
    run = run_writers(pg_dsn, count, hot=True, batches=10, size=2, directory=tmp_path)
    found = run.audit
    assert found.ok, found
    assert found.acknowledged_batches == count * 10
    assert found.events == found.acknowledged_events == count * 20
    assert found.kinds == {} and found.untyped == 0
    assert run.seconds > 0


def test_a_writer_run_closes_the_writers_pipes(pg_dsn: str, tmp_path: Path) -> None:
    """Regression: ``Writer.wait`` left each writer's stdin and stdout pipes to the GC."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        run = run_writers(pg_dsn, 2, hot=True, batches=2, size=1, directory=tmp_path)
        gc.collect()
    assert run.audit.ok, run.audit
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
