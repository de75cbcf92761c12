"""Run a suite's checks in several processes (``--jobs N``), reported as one run.

Theory of operation
-------------------
Every check already runs on stores of its own (fresh from the factory) and
with a seed of its own (:func:`~convledger_conformance.runsettings.check_seed`,
derived from the run's seed and the check's name, not from the order), so the
checks of a run can be spread over processes without changing what each one
draws. After the declaration and ``fresh_store`` (run first and alone, as
always), :func:`run_in_processes` forks ``jobs`` workers of the running
process: each inherits the factory, the loaded check modules and the
Hypothesis settings of the run, takes the next check from a shared queue,
runs it and sends back its :class:`~convledger_conformance.report.CheckResult`.
The results are yielded in the order of the checks, whatever order they ended
in, so a report of ``--jobs 2`` lists what a report of ``--jobs 1`` lists.

The state machines and the kill checks take most of a run, so they are handed
out first (:func:`longest_first`); the queue balances the rest.

Forking needs a factory that survives it: stores made in a worker must not
share an open connection or file with the parent's. The in-memory, SQLite and
PostgreSQL reference factories open everything per store. A factory over the
wire (``--command``) holds one server's pipes, which a fork would share, so
the command line refuses ``--jobs`` with ``--command``; and the process must run
no other thread when it forks (:func:`refuse_other_threads`). ``-x`` stops handing out
checks at the first failure; checks already running finish and are reported.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from convledger_conformance.registry import Check
from convledger_conformance.report import CheckResult

HEAVY_WORDS: Final = ("machine", "killed_", "crash", "hostile_corpus", "races")
"""Names of the checks handed out first (a scheduling hint only; every check runs)."""

_RUN_ONE: Callable[[Check], CheckResult] | None = None
"""The parent's runner of one check; set before the fork, inherited by the workers."""
_CHECKS: Sequence[Check] = ()


def _run_index(index: int) -> tuple[int, CheckResult]:
    """In a worker: run check ``index`` of the inherited list."""
    assert _RUN_ONE is not None
    return index, _RUN_ONE(_CHECKS[index])


def longest_first(checks: Sequence[Check]) -> list[int]:
    """Indexes of ``checks``, the likely long ones first, otherwise in their order."""
    def heavy(index: int) -> bool:
        return any(word in checks[index].name for word in HEAVY_WORDS)

    return sorted(range(len(checks)), key=lambda index: not heavy(index))


def run_in_processes(
    checks: Sequence[Check],
    run_one: Callable[[Check], CheckResult],
    *,
    jobs: int,
    on_done: Callable[[int, CheckResult], None] = lambda number, result: None,
    stop: Callable[[CheckResult], bool] = lambda result: False,
    not_run: Callable[[Check], CheckResult],
) -> Iterator[CheckResult]:
    """``run_one`` of every check in ``jobs`` forked workers; results in the checks' order.

    ``on_done(n, result)`` is called in the parent as the n-th result arrives.
    When ``stop(result)`` is true no further check is handed out; those not
    run get ``not_run(check)``.
    """
    global _RUN_ONE, _CHECKS
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs!r}")
    refuse_other_threads()
    results: dict[int, CheckResult] = {}
    _RUN_ONE, _CHECKS = run_one, checks
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(processes=min(jobs, max(len(checks), 1))) as pool:
            arrivals = pool.imap_unordered(_run_index, longest_first(checks), chunksize=1)
            for index, result in arrivals:
                results[index] = result
                on_done(len(results), result)
                if stop(result):
                    break  # leaving the block terminates the workers
            else:
                pool.close()  # every check ran: the workers end on their own
                pool.join()
    finally:
        _RUN_ONE, _CHECKS = None, ()
    for index, item in enumerate(checks):
        yield results[index] if index in results else not_run(item)


def refuse_other_threads() -> None:
    """Forking needs a process with no other thread: a fork copies the locks they hold.

    A worker forked while another thread held a lock (pytest-xdist's execnet
    threads, a logging handler, a connection pool's) waits on it forever; seen
    once in a test run from a pytest-xdist worker. Raises :class:`ValueError`
    naming the threads instead.
    """
    others = [thread.name for thread in threading.enumerate()
              if thread is not threading.current_thread()]
    if others:
        raise ValueError(
            "jobs above 1 forks this process, which must then run no other thread (a fork "
            f"copies the locks they hold and can hang); running: {', '.join(others)}"
        )


def default_jobs() -> int:
    """The processors this process may run on (``--jobs auto``)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return max(os.cpu_count() or 1, 1)
