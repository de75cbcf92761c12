"""``convledger-conformance bench``: a store's hot paths against a floor, saved, compared, gated.

::

    convledger-conformance bench [--store MODULE:FACTORY | --command CMD] [--timeout S]
                                 [--floor auto|memory|minimal-sqlite|MODULE:CALLABLE]
                                 [--workload default|small] [--rounds N] [--only FIG[,FIG]]
                                 [--save NAME] [--compare NAME] [--dir DIR]
                                 [--fail-on 'append.single:25%,read:15%' | --budgets PATH|default]
                                 [--again N] [--json PATH] [--plot PATH.png]

Measures every hot path the store declares (:mod:`convledger_bench.hotpaths`)
on a fixed workload, each interleaved with a floor in the same run, and
prints each figure as a ratio to its floor with the run's 95 % interval.
``--save NAME`` writes the run as a baseline (``DIR/NAME.json``, ``DIR``
``.convledger-bench`` by default); ``--compare NAME`` prints each figure
beside it with the change; ``--fail-on`` or ``--budgets`` gate the change
(:mod:`convledger_bench.baseline`); ``--again N`` measures a regressed or
inconclusive figure up to N more times and judges the pooled rounds (a
narrower interval: noise resolves, a real regression stays). The harness ships in the wheel
(``convledger_bench``); it needs no package beyond the project's own
dependencies.

Exit codes (:data:`EXIT_CODES`): 0 no gated figure regressed; 1 a gated
figure regressed beyond its threshold (or is missing); 2 usage error (also a
baseline of another workload); 3 the ``--command`` server could not be
started; 6 no regression, but the run's spread was too wide to judge a gated
figure (inconclusive).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import attrs

from convledger_conformance.factories import (
    DEFAULT_STORE,
    FactoryLoadError,
    load_factory,
    open_factory,
)
from convledger_conformance.wire.client import WireStoreFactory
from convledger_conformance.wire.connection import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from convledger_bench.hotpaths import FloorHook, HotPathRun, Workload

EXIT_CODES: Final = {
    0: "no gated figure regressed",
    1: "a gated figure regressed beyond its threshold, or is missing",
    2: "usage error",
    3: "the --command server could not be started",
    6: "inconclusive: the run's spread was too wide to judge a gated figure",
}
"""What each exit status of ``convledger-conformance bench`` means."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``convledger-conformance bench``."""
    parser = argparse.ArgumentParser(
        prog="convledger-conformance bench",
        description="Measure a store's hot paths as ratios to a floor measured in the same "
        "run; save a baseline, compare with it, fail on a regression.",
        epilog="exit codes: " + "; ".join(f"{code} {text}" for code, text in EXIT_CODES.items()),
    )
    parser.add_argument("--store", metavar="MODULE:FACTORY", default=DEFAULT_STORE,
                        help=f"zero-argument callable returning a fresh store "
                        f"(default: {DEFAULT_STORE})")
    parser.add_argument("--command", metavar="CMD",
                        help="measure a store served over the wire protocol by this command")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, default=DEFAULT_TIMEOUT,
                        help="with --command: seconds to wait for one reply")
    parser.add_argument("--floor", default="auto", metavar="FLOOR",
                        help="auto (default: minimal-sqlite for the writes of a persistent "
                        "store, memory for the rest, memory-wire with --command), memory, "
                        "memory-wire (with --command), minimal-sqlite, or "
                        "MODULE:CALLABLE, your own raw floor: CALLABLE(figure, workload) "
                        "returns call(turn) or None")
    parser.add_argument("--workload", default="default", choices=("default", "small"),
                        help="the fixed workload (small: a short one, for tests)")
    parser.add_argument("--rounds", type=int, metavar="N",
                        help="rounds per figure instead of the workload's (kept in the baseline)")
    parser.add_argument("--only", metavar="FIG[,FIG]",
                        help="measure only these figures")
    parser.add_argument("--save", metavar="NAME", help="write this run as baseline NAME")
    parser.add_argument("--compare", metavar="NAME", help="compare this run with baseline NAME")
    parser.add_argument("--dir", metavar="DIR", type=Path, default=None,
                        help="the folder of baselines (default: .convledger-bench)")
    parser.add_argument("--fail-on", metavar="FIG:N%[,FIG:N%]",
                        help="with --compare: exit 1 when a figure costs more than N %% more "
                        "(next to its floor) than at the baseline; FIG may be a prefix or *")
    parser.add_argument("--budgets", metavar="PATH|default",
                        help="with --compare: the thresholds of a TOML file ([thresholds]); "
                        "default: the one shipped with the package")
    parser.add_argument("--again", type=int, default=0, metavar="N",
                        help="with --compare: measure a figure that regressed or is "
                        "inconclusive up to N more times, pooling its rounds; with --save "
                        "alone: measure every figure N more times into the baseline (default 0)")
    parser.add_argument("--json", metavar="PATH", type=Path,
                        help="write the run (and the comparison) as JSON here")
    parser.add_argument("--plot", metavar="PATH.png", type=Path,
                        help="draw the figures (and the baseline) as a PNG (extra [plot])")
    return parser


def main(argv: Sequence[str]) -> int:
    """Entry point of ``convledger-conformance bench``."""
    from convledger_bench import baseline as baselines
    from convledger_bench.hotpaths import FIGURES, Workload
    from convledger_bench.report import machine

    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.fail_on or args.budgets) and not args.compare:
        parser.error("--fail-on and --budgets need --compare NAME")
    if args.fail_on and args.budgets:
        parser.error("--fail-on and --budgets exclude each other")
    try:
        thresholds = (baselines.parse_thresholds(args.fail_on) if args.fail_on else
                      baselines.load_budgets(args.budgets) if args.budgets else {})
    except ValueError as error:
        parser.error(str(error))
    only = None
    if args.only:
        only = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = sorted(set(only) - set(FIGURES))
        if unknown:
            parser.error(f"--only: unknown figure {', '.join(unknown)} "
                         f"(figures: {', '.join(FIGURES)})")
    directory = args.dir or baselines.DEFAULT_DIRECTORY
    workload = Workload.named(args.workload)
    if args.rounds is not None:
        if args.rounds < 4:
            parser.error("--rounds must be 4 or more")
        workload = attrs.evolve(workload, rounds=args.rounds)
    document: dict[str, Any] | None = None
    if args.compare:
        try:
            document = baselines.load(baselines.baseline_path(args.compare, directory))
            baselines.check_workload(document, workload)
        except baselines.BaselineError as error:
            parser.error(f"--compare: {error}")
    floor, hook, hook_name = args.floor, None, ""
    if ":" in args.floor:
        try:
            hook = _hook(args.floor)
        except FactoryLoadError as error:
            parser.error(f"--floor: {error}")
        floor, hook_name = "auto", args.floor
    measured = _measure(parser, args, workload, floor, hook, hook_name, only)
    if isinstance(measured, int):
        return measured
    run, name = measured
    for attempt in range(args.again if document is None and args.save else 0):
        print(f"bench: again ({attempt + 1}/{args.again}), pooled into the baseline",
              file=sys.stderr)
        more = _measure(parser, args, workload, floor, hook, hook_name, only)
        if isinstance(more, int):
            return more
        run = _pool(run, more[0])
    found = machine()
    print(f"convledger-conformance bench: {name}, workload {args.workload} "
          f"({workload.events:,} events, {workload.rounds} rounds), {found['nproc']} cores, "
          f"Python {found['python']}, SQLite {found['sqlite']}")
    print("ratio = floor time / store time (lower quartiles of interleaved rounds; 95% range "
          "by paired bootstrap); 1.0: as fast as the floor, higher is better")
    print(baselines.run_table(run))
    current = baselines.run_document(run, store=name, machine=found)
    status = 0
    output: dict[str, Any] = {"run": current}
    if document is not None:
        if document.get("store") != name:
            print(f"note: baseline {args.compare} was measured on {document.get('store')}")
        results = baselines.compare(document, run, thresholds, named=bool(args.fail_on))
        for attempt in range(args.again):
            undecided = [result.figure for result in results if result.now is not None
                         and result.verdict in (baselines.REGRESSION, baselines.INCONCLUSIVE)]
            if not undecided:
                break
            print(f"bench: again ({attempt + 1}/{args.again}): {', '.join(undecided)}",
                  file=sys.stderr)
            measured = _measure(parser, args, workload, floor, hook, hook_name, undecided)
            if isinstance(measured, int):
                return measured
            run = _pool(run, measured[0])
            results = baselines.compare(document, run, thresholds, named=bool(args.fail_on))
            print(f"measured again, rounds pooled: {', '.join(undecided)}")
        print(f"\nagainst baseline {args.compare} ({document.get('saved')}); change = the "
              "store's cost next to its floor against the baseline's (+: slower)")
        print(baselines.comparison_table(results))
        status = baselines.exit_status(results)
        output["comparison"] = [result.as_json() for result in results]
        print(_summary(results, status))
    if args.save:
        path = baselines.baseline_path(args.save, directory)
        try:
            baselines.save(current, path)
        except OSError as error:
            print(f"convledger-conformance bench: cannot write {path}: {error}", file=sys.stderr)
            return 2
        print(f"saved baseline {args.save}: {path}")
    try:
        if args.json is not None:
            args.json.write_text(json.dumps(output, indent=2) + "\n", "utf-8")
    except OSError as error:
        print(f"convledger-conformance bench: cannot write {args.json}: {error}", file=sys.stderr)
        return 2
    if args.plot is not None:
        from convledger_bench.gate_plot import PlotUnavailable, plot

        try:
            plot(current, document, args.plot,
                 {item["figure"]: item["verdict"] for item in output.get("comparison", [])})
        except PlotUnavailable as error:
            print(f"convledger-conformance bench: {error}", file=sys.stderr)
            return status or 2
        print(f"plot: {args.plot}")
    sys.stdout.flush()
    return status


def _measure(
    parser: argparse.ArgumentParser, args: argparse.Namespace, workload: Workload, floor: str,
    hook: FloorHook | None, hook_name: str, only: Sequence[str] | None,
) -> tuple[HotPathRun, str] | int:
    """One measurement of the store of ``--store`` or ``--command`` (its servers stopped after)."""
    from convledger_bench.hotpaths import measure_hot_paths

    opened = open_factory(parser, args.store, args.command, args.timeout)
    if isinstance(opened, int):
        return opened
    factory, name, wire = opened
    memory = None
    if wire is not None and floor in ("auto", "memory-wire"):  # the same pipes for the floor
        memory = WireStoreFactory([sys.executable, "-m", "convledger", "serve-wire",
                                   "--store", "memory"], timeout=args.timeout)
    try:
        run = measure_hot_paths(
            factory, workload, floor=floor, hook=hook, hook_name=hook_name, memory=memory,
            only=only,
            progress=lambda figure: print(f"bench: {figure}", file=sys.stderr, flush=True))
    except ValueError as error:
        parser.error(str(error))
    finally:
        for client in (wire, memory):
            if client is not None:
                client.close()
    return run, name


def _pool(run: HotPathRun, again: HotPathRun) -> HotPathRun:
    from convledger_bench.hotpaths import pooled

    more = {item.id: item for item in again.figures}
    return attrs.evolve(run, figures=tuple(
        pooled(item, more[item.id]) if item.id in more else item for item in run.figures))


def _hook(spec: str) -> FloorHook:
    return cast("FloorHook", load_factory(spec))


def _summary(results: Sequence[Any], status: int) -> str:
    by_verdict: dict[str, list[str]] = {}
    for result in results:
        by_verdict.setdefault(result.verdict, []).append(result.figure)
    parts = [f"{verdict} {len(names)} ({', '.join(names)})" if verdict != "ok" and
             verdict != "not gated" else f"{verdict} {len(names)}"
             for verdict, names in by_verdict.items()]
    outcome = {0: "passed", 1: "FAILED", 6: "INCONCLUSIVE"}[status]
    return f"bench: {outcome}: " + "; ".join(parts)

