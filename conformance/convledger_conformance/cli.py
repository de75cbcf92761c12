"""``convledger-conformance``: run the conformance suite against a store.

::

    convledger-conformance [--store MODULE:FACTORY | --command "CMD ARGS"]
                           [--timeout SECONDS] [--profile smoke|ci|thorough]
                           [-k EXPR] [--chapter LED[,TRN]] [--require CAP[,CAP]]
                           [--seed N | --derandomize] [--no-shrink]
                           [--json PATH] [--junit PATH] [--html PATH]
                           [--record-failures DIR] [--list] [--version]
                           [-x] [--lf | --ff] [--last-report PATH] [--state DIR]
    convledger-conformance replay TRACE|DIR|GLOB... [--store MODULE:FACTORY | --command CMD]
    convledger-conformance new-store PATH [--capabilities CAP[,CAP...]]

Without ``--store`` it validates the embedded reference store
(:data:`DEFAULT_STORE`). ``MODULE:FACTORY`` is imported with the working
directory first on ``sys.path``, as pytest does, and names a zero-argument callable
returning a fresh, empty store; it is called once per Hypothesis example.
``--command`` runs the same checks against a store in another process, in any
language, that speaks the wire protocol (spec chapter ``wire.md``) on its
standard input and output: the command is split as a POSIX shell would
(without running a shell), started once, and asked for a new store per example
(:class:`~convledger_conformance.wire.client.WireStoreFactory`). A server that
cannot start exits 3; one that hangs longer than ``--timeout`` on a reply, or
exits, fails the checks it was serving.

``-k`` and ``--chapter`` select checks (:mod:`convledger_conformance.selection`);
``--seed`` derives each check's seed (a run without it draws one and prints
it); each failed check's report ends in the command line that repeats it
alone. ``replay`` runs one trace vector file (``--record-failures`` writes
them) against a store (:mod:`convledger_conformance.replay_command`).
``-x`` stops at the first failed check; ``--lf`` reruns the checks that failed
last time with that run's seed, ``--ff`` runs them first
(:mod:`convledger_conformance.rerun`).

Exit codes (:data:`EXIT_CODES`): 0 nothing failed (``not_run`` requirements are
reported, never counted as passed); 1 at least one check failed; 2 usage
error (an unknown option, a factory that cannot be loaded, a report that
cannot be written); 3 the ``--command`` server could not be started; 4 the
factory's stores are not new and empty, so the run stopped after its first
check (CAP-005); 5 the store does not declare a capability ``--require`` names.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

import convledger
from convledger.store import Capability
from convledger_conformance.factories import (
    DEFAULT_STORE,
    FactoryLoadError,
    load_factory,
    open_factory,
)
from convledger_conformance.parallel import default_jobs
from convledger_conformance.profiles import PROFILES
from convledger_conformance.registry import Check, StoreFactory, all_checks
from convledger_conformance.report import FAILED
from convledger_conformance.requirements import SPEC_VERSION, load_index
from convledger_conformance.rerun import add_rerun_options, plan_rerun, remember_run
from convledger_conformance.runner import FRESH_CHECK, read_declaration, run_suite
from convledger_conformance.runsettings import SEED_BITS, use_user_cache
from convledger_conformance.selection import SelectionError, chapters_of, prefix, select
from convledger_conformance.support import NOT_FRESH
from convledger_conformance.wire.client import WireStoreFactory
from convledger_conformance.wire.connection import DEFAULT_TIMEOUT

EXIT_CODES: Final = {
    0: "nothing failed",
    1: "a check failed",
    2: "usage error",
    3: "the --command server could not be started",
    4: "the factory's stores are not new and empty: the run stopped (CAP-005)",
    5: "the store does not declare a capability --require names",
}
"""What each exit status of ``convledger-conformance`` means."""
EXIT_NOT_FRESH: Final = 4
EXIT_REQUIRE: Final = 5


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``convledger-conformance``."""
    parser = argparse.ArgumentParser(
        prog="convledger-conformance",
        description="Check a conversation event ledger store against the convledger spec.",
        epilog="exit codes: " + "; ".join(f"{code} {text}" for code, text in EXIT_CODES.items())
        + ". Subcommand: replay TRACE|DIR|GLOB... [--store ...|--command ...] (replay --help).",
    )
    parser.add_argument(
        "--version", action="version",
        version=f"convledger-conformance {convledger.__version__} (spec {SPEC_VERSION})",
    )
    parser.add_argument(
        "--store",
        metavar="MODULE:FACTORY",
        default=DEFAULT_STORE,
        help=f"zero-argument callable returning a fresh store (default: {DEFAULT_STORE})",
    )
    parser.add_argument(
        "--command",
        metavar="CMD",
        help="check a store served over the wire protocol by this command (spec wire.md)",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"with --command: seconds to wait for one reply (default: {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--profile", choices=PROFILES, default="ci", help="how hard to search (default: ci)"
    )
    parser.add_argument(
        "-k", dest="keyword", metavar="EXPR",
        help="run only the checks whose names match EXPR: words (substrings of a check's "
        "name) with and, or, not and parentheses, as pytest's -k",
    )
    parser.add_argument(
        "--chapter", metavar="LED[,TRN]",
        help="run only the checks covering ids of these chapters (id prefixes)",
    )
    parser.add_argument(
        "--require", metavar="CAP[,CAP]",
        help="exit 5 unless the store declares every one of these capabilities",
    )
    parser.add_argument(
        "--seed", type=int, metavar="N",
        help="derive every check's seed from N (without it a seed is drawn and printed)",
    )
    parser.add_argument(
        "--derandomize", action="store_true", help="run the same examples every time"
    )
    parser.add_argument(
        "--no-shrink",
        dest="shrink",
        action="store_false",
        help="report failures as found, without minimizing them (faster on a broken store)",
    )
    parser.add_argument(
        "--record-failures",
        metavar="DIR",
        type=Path,
        help="re-run each failed check with its calls recorded and write its shrunk failure "
        "into DIR as a minimal operation-trace vector (spec/vectors/README.md)",
    )
    parser.add_argument(
        "--jobs", "-j", metavar="N", type=_jobs, default=1,
        help="run the checks in N forked processes, or 'auto' for one per processor "
        "(default 1; with --store only: the factory must survive a fork)",
    )
    parser.add_argument("--json", metavar="PATH", type=Path, help="write the JSON report here")
    parser.add_argument("--junit", metavar="PATH", type=Path, help="write JUnit XML here")
    parser.add_argument(  # html_report.py: the same data as --json, as one offline page
        "--html", metavar="PATH", type=Path, help="write a self-contained HTML report here"
    )
    parser.add_argument(
        "--list", action="store_true", help="list the checks and the ids they cover, then exit"
    )
    add_rerun_options(parser)  # -x, --lf, --ff (rerun.py)
    parser.add_argument(
        "--bench",
        action="store_true",
        help="instead of the checks, measure the store's hot paths against bare SQLite on "
        "this machine (ratios; see benchmarks/README.md); with --json, write the figures",
    )
    parser.add_argument(
        "--bench-full",
        action="store_true",
        help="with --bench: the full sizes and rounds instead of the quick ones",
    )
    return parser


def _jobs(text: str) -> int:
    """``--jobs``: a whole number of processes of at least 1, or ``auto``."""
    if text == "auto":
        return default_jobs()
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or auto, got {text!r}") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {jobs}")
    return jobs


def list_checks() -> str:
    """One line per check: name, capability and the requirement ids it covers."""
    lines = [
        f"{item.name}  [{'+'.join(c.value for c in (item.capability, *item.also))}]  "
        f"{' '.join(item.ids)}"
        + (f"\n    {item.doc}" if item.doc else "")
        for item in all_checks()
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``convledger-conformance`` console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["replay"]:
        from convledger_conformance.replay_command import main as replay_main

        code: int = replay_main(arguments[1:])
        return code
    if arguments[:1] == ["new-store"]:  # the implementer's skeleton (new_store.py)
        from convledger_conformance.new_store import main as new_store

        return new_store(arguments[1:])
    if arguments[:1] == ["diff"]:  # the store under test against the reference, frame by frame
        from convledger_conformance.diff.command import main as diff_main

        return diff_main(arguments[1:])

    if arguments[:1] == ["bench"]:  # issue 34: baselines and a verdict (bench_command.py)
        from convledger_conformance.bench_command import main as bench_main

        return bench_main(arguments[1:])
    if arguments[:1] == ["crash"]:  # chapter DUR: kill -9 rounds and concurrent histories
        from convledger_conformance.durability.cli import main as crash_main

        return crash_main(arguments[1:])
    parser = build_parser()
    args = parser.parse_args(arguments)
    if args.list:
        sys.stdout.write(list_checks())
        return 0
    if args.seed is not None and args.derandomize:
        parser.error("--seed and --derandomize exclude each other")
    if args.jobs > 1 and args.command is not None:
        parser.error("--jobs needs --store: a fork would share the one server of --command")
    try:
        checks = _selected(args)
        required = _capabilities(args.require)
        plan = plan_rerun(args, checks)
    except (SelectionError, ValueError) as error:
        parser.error(str(error))
    checks, args.seed, args.derandomize = plan.checks, plan.seed, plan.derandomize
    opened = open_factory(parser, args.store, args.command, args.timeout)
    if isinstance(opened, int):
        return opened
    factory, name, wire = opened
    if args.jobs > 1 and getattr(factory, "fork_safe", True) is False:
        parser.error(f"--jobs needs a factory that survives a fork; {name} says it does not "
                     "(fork_safe = False)")
    if args.bench:
        return _bench(factory, args, wire)
    try:
        if required:
            refused = _missing(factory, required)
            if refused:
                print(f"convledger-conformance: {refused}", file=sys.stderr)
                return EXIT_REQUIRE
        use_user_cache()  # no .hypothesis folder in the caller's working directory
        seed = args.seed
        if seed is None and not args.derandomize:
            seed = secrets.randbelow(2**SEED_BITS)
            print(f"convledger-conformance: seed {seed} (repeat with --seed {seed})",
                  file=sys.stderr)
        report = run_suite(
            factory,
            profile=args.profile,
            store_name=name,
            checks=checks,
            derandomize=args.derandomize,
            shrink=args.shrink,
            progress=sys.stderr,
            record_failures=args.record_failures,
            seed=seed,
            stop_at_first=args.exitfirst,
            failed_first=plan.first,
            focused=checks is not None,
            jobs=args.jobs,
        )
    finally:
        if wire is not None:
            wire.close()
    report = attrs.evolve(report, suite=attrs.evolve(report.suite, rerun=_rerun(args, seed)))
    remember_run(args, report)  # for --lf and --ff (rerun.py)
    fresh = [r for r in report.checks if r.name == FRESH_CHECK and r.status == FAILED
             and r.message.startswith(NOT_FRESH)]  # a hook not written goes on (skeleton)
    if fresh:
        print(f"convledger-conformance: stopped after check {FRESH_CHECK} (CAP-005): "
              f"{fresh[0].message}", file=sys.stderr)
    else:
        sys.stdout.write(report.render())
    for result in report.checks:
        for line in result.detail.splitlines():
            if line.startswith(("Trace vector of this failure:", "No trace vector was recorded:")):
                print(f"{result.name}: {line}", file=sys.stderr)
    sys.stdout.flush()
    try:
        if args.json is not None:
            args.json.write_text(report.to_json(), "utf-8")
        if args.junit is not None:
            report.to_junit(args.junit)
        if args.html is not None:
            from convledger_conformance.html_report import write_html

            write_html(report.to_dict(), args.html)
    except OSError as error:
        print(f"convledger-conformance: cannot write the report: {error}", file=sys.stderr)
        return 2
    if fresh:
        return EXIT_NOT_FRESH
    return 0 if report.ok else 1


def _selected(args: argparse.Namespace) -> list[Check] | None:
    """The checks ``-k`` and ``--chapter`` select; None (the whole suite) without them."""
    if args.keyword is None and args.chapter is None:
        return None
    chapters = None
    if args.chapter is not None:
        chapters = chapters_of(args.chapter, {prefix(item.id) for item in load_index()})
    return select(all_checks(), keyword=args.keyword, chapters=chapters)


def _capabilities(text: str | None) -> frozenset[Capability]:
    if text is None:
        return frozenset()
    names = [part.strip() for part in text.split(",") if part.strip()]
    known = {capability.value for capability in Capability}
    unknown = sorted(set(names) - known)
    if unknown or not names:
        raise ValueError(f"--require: unknown capability {', '.join(unknown) or text!r} "
                         f"(capabilities: {', '.join(sorted(known))})")
    return frozenset(Capability(name) for name in names)


def _missing(factory: StoreFactory, required: frozenset[Capability]) -> str:
    """Why the store fails ``--require`` ("" when it declares every required capability)."""
    try:
        declared = read_declaration(factory)
    except Exception:  # the run reports a broken declaration itself (CAP-001, CAP-003)
        return ""
    absent = sorted(capability.value for capability in required - declared)
    if not absent:
        return ""
    return (f"--require: the store does not declare {', '.join(absent)} "
            f"(it declares {', '.join(sorted(c.value for c in declared))})")


def _rerun(args: argparse.Namespace, seed: int | None) -> str:
    """The command line that repeats this run (a failed check's report adds ``-k NAME``)."""
    words = ["convledger-conformance"]
    if args.command is not None:
        words += ["--command", args.command]
    else:
        words += ["--store", args.store]
    words += ["--profile", args.profile]
    words += ["--derandomize"] if seed is None else ["--seed", str(seed)]
    if not args.shrink:
        words.append("--no-shrink")
    return shlex.join(words)


def _bench(factory: StoreFactory, args: argparse.Namespace, wire: WireStoreFactory | None) -> int:
    """``--bench``: the store's figures against bare SQLite, measured here and now."""
    try:
        # The one import of the benchmark harness from reference/ or conformance/, and lazy:
        # the harness is its own package (benchmarks/convledger_bench) and only --bench needs it.
        from convledger_bench import run_bench
    except ImportError as error:
        if wire is not None:
            wire.close()
        print(
            "convledger-conformance: --bench needs the benchmark harness convledger_bench "
            f"(benchmarks/convledger_bench, installed with this project), which cannot be "
            f"imported: {error}",
            file=sys.stderr,
        )
        return 2
    try:
        figures = run_bench(factory, quick=not args.bench_full)
    finally:
        if wire is not None:
            wire.close()
    sys.stdout.write(figures.table() + "\n")
    if args.json is not None:
        try:
            args.json.write_text(json.dumps(figures.as_json(), indent=2), "utf-8")
        except OSError as error:
            print(f"convledger-conformance: cannot write the figures: {error}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "DEFAULT_STORE", "EXIT_CODES", "FactoryLoadError", "build_parser", "load_factory", "main",
]
