"""Fix and rerun: ``--lf``, ``--ff`` and ``-x`` of ``convledger-conformance`` (issue 35).

Every run of the command line keeps its JSON report in a state folder
(``--state DIR``; by default :func:`state_folder`), one file per store
(:func:`state_file`: named after the ``--store`` or ``--command`` text). The
next run with

* ``--lf`` (last failed) runs only the checks that failed in that report, with
  that report's seed (unless ``--seed`` or ``--derandomize`` is given), so each
  check draws the examples that failed it and fails again until the store is
  fixed; with no failure recorded it runs every check selected, as pytest's
  ``--lf`` does;
* ``--ff`` (failed first) runs those checks first, then the rest.

``--last-report PATH`` reads a JSON report written with ``--json`` instead of
the state folder. ``-x`` stops at the first failed check (the runner's
``stop_at_first``); the checks it did not reach are ``not_run`` with that
reason. The pytest plugin's own route is ``pytest --lf`` or ``--ff``: it keeps
each failed test's seed in pytest's cache (:mod:`convledger_conformance.pytest_plugin`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from convledger_conformance.registry import Check, all_checks
from convledger_conformance.report import FAILED, Report
from convledger_conformance.runsettings import user_cache


def state_folder() -> Path:
    """Where runs keep their last report by default: beside Hypothesis' files in the cache."""
    return user_cache().parent / "last-run"


def state_file(folder: Path, store: str) -> Path:
    """The last report of ``store`` (the ``--store`` or ``--command`` text) in ``folder``."""
    key = hashlib.sha256(store.encode("utf-8")).hexdigest()[:16]
    return folder / f"{key}.json"


def add_rerun_options(parser: argparse.ArgumentParser) -> None:
    """``-x``, ``--lf``, ``--ff``, ``--last-report`` and ``--state``."""
    parser.add_argument(
        "-x", "--exitfirst", dest="exitfirst", action="store_true",
        help="stop at the first failed check (the rest are reported not_run)",
    )
    parser.add_argument(
        "--lf", "--last-failed", dest="last_failed", action="store_true",
        help="run only the checks that failed in the last run of this store, with its seed "
        "(every check when none failed)",
    )
    parser.add_argument(
        "--ff", "--failed-first", dest="failed_first", action="store_true",
        help="run the checks that failed in the last run of this store first, then the rest",
    )
    parser.add_argument(
        "--last-report", metavar="PATH", type=Path,
        help="with --lf or --ff: read the failures from this JSON report (--json) instead "
        "of the state folder",
    )
    parser.add_argument(
        "--state", metavar="DIR", type=Path,
        help=f"where each run keeps its last report for --lf and --ff (default: "
        f"{state_folder()})",
    )


@attrs.frozen
class LastRun:
    """What a previous run left: its failed checks and its seed."""

    failed: tuple[str, ...]
    seed: int | None
    derandomize: bool
    source: Path


def last_run(args: argparse.Namespace) -> LastRun | None:
    """The last run ``--lf``/``--ff`` read (None: no report); ``ValueError`` for a bad one."""
    path = args.last_report
    if path is None:
        path = state_file(args.state or state_folder(), _store_key(args))
        if not path.exists():
            return None
    try:
        document: Any = json.loads(path.read_text("utf-8"))
        checks = document["checks"]
        suite = document["suite"]
        failed = tuple(entry["name"] for entry in checks if entry["status"] == FAILED)
        seed = suite.get("seed")
        return LastRun(failed, seed if isinstance(seed, int) else None,
                       bool(suite.get("derandomize")), path)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"--last-report: {path} is not a JSON report: {error}") from error


@attrs.frozen
class Plan:
    """The checks a rerun runs, the ones it runs first, and its seed."""

    checks: list[Check] | None
    first: tuple[str, ...]
    seed: int | None
    derandomize: bool


def plan_rerun(args: argparse.Namespace, checks: list[Check] | None) -> Plan:
    """Apply ``--lf``/``--ff`` to the selected ``checks``; says on stderr what it does."""
    plan = Plan(checks, (), args.seed, args.derandomize)
    if not (args.last_failed or args.failed_first):
        return plan
    last = last_run(args)
    flag = "--lf" if args.last_failed else "--ff"
    if last is None or not last.failed:
        where = "no last run" if last is None else f"no failed check in {last.source}"
        print(f"convledger-conformance: {flag}: {where}: running every selected check",
              file=sys.stderr)
        return plan
    known = {item.name: item for item in all_checks()}
    failed = [name for name in last.failed if name in known
              and (checks is None or known[name] in checks)]
    seed, derandomize = args.seed, args.derandomize
    if seed is None and not derandomize:  # the seed that drew the failing examples
        seed, derandomize = last.seed, last.derandomize
    how = "derandomized" if seed is None else f"seed {seed}"
    print(f"convledger-conformance: {flag}: {len(failed)} check(s) failed in {last.source} "
          f"({how}): {', '.join(failed)}", file=sys.stderr)
    if args.last_failed:
        return Plan([known[name] for name in failed], (), seed, derandomize)
    return Plan(checks, tuple(failed), seed, derandomize)


def remember_run(args: argparse.Namespace, report: Report) -> None:
    """Keep ``report`` as this store's last run (a state folder that cannot be written is
    said, not fatal)."""
    path = state_file(args.state or state_folder(), _store_key(args))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report.to_json(), "utf-8")
    except OSError as error:
        print(f"convledger-conformance: cannot keep the run for --lf in {path}: {error}",
              file=sys.stderr)


def _store_key(args: argparse.Namespace) -> str:
    return f"command:{args.command}" if args.command is not None else f"store:{args.store}"


def ordered(checks: Sequence[Check], first: Sequence[str]) -> list[Check]:
    """``checks`` with those named in ``first`` moved to the front, in ``first``'s order."""
    rank = {name: number for number, name in enumerate(first)}
    return sorted(checks, key=lambda item: rank.get(item.name, len(rank)))
