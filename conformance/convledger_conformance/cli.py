"""``convledger-conformance``: run the conformance suite against a store.

::

    convledger-conformance [--store MODULE:FACTORY | --command "CMD ARGS"]
                           [--timeout SECONDS] [--profile smoke|ci|thorough]
                           [--derandomize] [--no-shrink] [--json PATH] [--junit PATH]
                           [--list]

Without ``--store`` it validates the embedded reference store
(:data:`DEFAULT_STORE`). ``MODULE:FACTORY`` names a zero-argument callable
returning a fresh, empty store; it is called once per Hypothesis example.
``--command`` runs the same checks against a store in another process, in any
language, that speaks the wire protocol (spec chapter ``wire.md``) on its
standard input and output: the command is split as a POSIX shell would
(without running a shell), started once, and asked for a new store per example
(:class:`~convledger_conformance.wire.client.WireStoreFactory`). A server that
cannot start exits 2; one that hangs longer than ``--timeout`` on a reply, or
exits, fails the checks it was serving.

Exit codes:

- 0: nothing failed (``not_run`` requirements are reported, never counted as passed);
- 1: at least one check failed;
- 2: usage error (an unknown option, a factory that cannot be loaded, a report
  that cannot be written).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, cast

from convledger_conformance.profiles import PROFILES
from convledger_conformance.registry import StoreFactory, all_checks
from convledger_conformance.runner import run_suite
from convledger_conformance.wire.client import WireStoreFactory
from convledger_conformance.wire.connection import DEFAULT_TIMEOUT, WireError

DEFAULT_STORE: Final = "convledger.sqlite:new_file_store"
"""The store validated when no ``--store`` is given: the embedded reference store."""


class FactoryLoadError(ValueError):
    """``MODULE:FACTORY`` does not name an importable, callable store factory."""


def load_factory(spec: str) -> StoreFactory:
    """Import ``module:attr`` (attr may be dotted) and return it if it is callable."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise FactoryLoadError(f"expected MODULE:FACTORY, got {spec!r}")
    try:
        target: object = importlib.import_module(module_name)
    except Exception as error:  # the user's module may fail in any way while importing
        raise FactoryLoadError(f"cannot import module {module_name!r}: {error}") from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as error:
            raise FactoryLoadError(f"{module_name!r} has no attribute {attribute!r}") from error
    if not callable(target):
        raise FactoryLoadError(f"{spec} is not callable (it is {type(target).__name__})")
    return cast(StoreFactory, target)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``convledger-conformance``."""
    parser = argparse.ArgumentParser(
        prog="convledger-conformance",
        description="Check a conversation event ledger store against the convledger spec.",
        epilog="exit codes: 0 nothing failed, 1 something failed, 2 usage error",
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
    parser.add_argument("--json", metavar="PATH", type=Path, help="write the JSON report here")
    parser.add_argument("--junit", metavar="PATH", type=Path, help="write JUnit XML here")
    parser.add_argument(
        "--list", action="store_true", help="list the checks and the ids they cover, then exit"
    )
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
    if arguments[:1] == ["crash"]:  # chapter DUR: kill -9 rounds and concurrent histories
        from convledger_conformance.durability.cli import main as crash_main

        return crash_main(arguments[1:])
    parser = build_parser()
    args = parser.parse_args(arguments)
    if args.list:
        sys.stdout.write(list_checks())
        return 0
    wire: WireStoreFactory | None = None
    if args.command is not None:
        if args.store != DEFAULT_STORE:
            parser.error("--store and --command exclude each other")
        if args.timeout <= 0:
            parser.error("--timeout must be positive")
        wire = WireStoreFactory(args.command, timeout=args.timeout)
        try:
            hello = wire.connection.hello
        except WireError as error:
            parser.error(f"--command: {error}")
        factory: StoreFactory = wire
        name = f"{args.command} (wire: {hello.get('server')}, spec {hello.get('spec')})"
    else:
        try:
            factory = load_factory(args.store)
        except FactoryLoadError as error:
            parser.error(f"--store: {error}")
        name = args.store
    if args.bench:
        return _bench(factory, args, wire)
    try:
        report = run_suite(
            factory,
            profile=args.profile,
            store_name=name,
            derandomize=args.derandomize,
            shrink=args.shrink,
            progress=sys.stderr,
            record_failures=args.record_failures,
        )
    finally:
        if wire is not None:
            wire.close()
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
    except OSError as error:
        print(f"convledger-conformance: cannot write the report: {error}", file=sys.stderr)
        return 2
    return 0 if report.ok else 1


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
