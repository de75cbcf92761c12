"""``convledger-conformance crash``: kill a store's server and check what survives (chapter DUR).

    convledger-conformance crash --command "CMD ... {dir} ..." --rounds N [--seed S]
                                 [--clients K] [--cleanup "CMD ... {dir} ..."] [--json PATH]
    convledger-conformance crash --store MODULE:FACTORY ...   (a multi_process Python store)

With ``--command`` every ``{dir}`` becomes a directory the suite creates, and
the store is opened with ``openStore {location}`` (WIR-040); ``--cleanup``
runs once per location after its last server ended, before the directory is
removed, for a store kept outside it (a server database's schema): a cleanup
that fails fails the run. With ``--store``
the factory's store gives its locator (LED-016) and each round's server is
``convledger serve-wire --opener`` on it, a subprocess the suite kills. Exit
0 when no requirement failed, 1 when one did, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convledger.capabilities import Capability
from convledger.handles import MultiProcessStore
from convledger_conformance.durability.concurrency import (
    CONCURRENT_IDS,
    ConcurrentResult,
    concurrent_run,
)
from convledger_conformance.durability.crash import CRASH_IDS, NEEDS, CrashResult, crash_run
from convledger_conformance.durability.history import DEFAULT_BOUND
from convledger_conformance.durability.target import Target


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="convledger-conformance crash",
        description="Kill a store's process at random moments and check chapter DUR.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--command", help="the server command; {dir} becomes the location")
    where.add_argument("--store", metavar="MODULE:FACTORY",
                       help="an in-process store that declares multi_process (its locator)")
    parser.add_argument("--cleanup", metavar="CMD",
                        help="with --command: run once per location ({dir} substituted) after "
                             "its last server ended, to drop what the store keeps elsewhere")
    parser.add_argument("--rounds", type=int, default=10, help="kills (default 10)")
    parser.add_argument("--seed", type=int, help="replays a run (default: random, printed)")
    parser.add_argument("--clients", type=int, default=0,
                        help="also run K concurrent server processes on one location")
    parser.add_argument("--steps", type=int, default=100, help="calls per concurrent client")
    parser.add_argument("--import-events", type=int, default=3000,
                        help="events of the large import a kill may cut (default 3000)")
    parser.add_argument("--max-delay", type=float, default=1.2,
                        help="the latest a kill lands after a round starts, in seconds")
    parser.add_argument("--bound", type=int, default=DEFAULT_BOUND,
                        help="model steps per conversation before 'not checked: too long'")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per reply")
    parser.add_argument("--json", metavar="PATH", type=Path, help="write the JSON report here")
    return parser


def target_of(args: argparse.Namespace) -> tuple[Target, Any]:
    """The target the options name, and the in-process store to keep open while it runs."""
    if args.command is not None:
        return Target.command(args.command, args.timeout, args.cleanup or ""), None
    module_name, _, attribute = args.store.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    store = target()
    if Capability.MULTI_PROCESS not in store.capabilities or not isinstance(
        store, MultiProcessStore
    ):
        store.close()
        raise SystemExit(f"crash --store: {args.store} does not declare multi_process, so no "
                         "other process can open it")
    locator = store.locator()
    return Target.opener(locator.opener, locator.argument), store


def statuses(crash: CrashResult, concurrent: ConcurrentResult | None) -> list[dict[str, str]]:
    """One status per id of chapter DUR and the wire rules the run judged."""
    rows = []
    failed = {failure.rule for failure in crash.failures}
    unestablished = any(failure.precondition for failure in crash.failures)
    for ident in CRASH_IDS:
        needs = NEEDS.get(ident, ())
        if crash.not_applicable:
            status, detail = "not_applicable", crash.not_applicable
        elif needs and crash.declared and not crash.declared & set(needs):  # DUR-016
            status, detail = "not_applicable", f"the server declares no {' or '.join(needs)}"
        elif ident in failed or (ident == "WIR-042" and "DUR-001" in failed) or (
            ident == "DUR-015" and unestablished
        ):
            status, detail = "failed", next(f.render() for f in crash.failures if (
                f.rule == ident or (ident == "WIR-042" and f.rule == "DUR-001")
                or (ident == "DUR-015" and f.precondition)))
        elif crash.rounds == 0:
            status, detail = "not_run", "no round ran to its verification"
        else:
            acked = crash.round_acknowledged
            status, detail = "passed", (f"{crash.rounds} rounds, {crash.kills} kills, "
                                        f"{min(acked, default=0)}..{max(acked, default=0)} new "
                                        "acknowledged writes per round")
        rows.append({"id": ident, "status": status, "detail": detail})
    for ident in CONCURRENT_IDS:
        if concurrent is None:
            status, detail = "not_run", "no --clients run"
        elif concurrent.not_applicable:
            status, detail = "not_applicable", concurrent.not_applicable
        elif any(v.rule == ident for v in concurrent.failures) or (
            ident == "WIR-041" and concurrent.failures
        ):
            status = "failed"
            detail = "; ".join(v.message for v in concurrent.failures)[:2000]
        elif ident in ("DUR-010", "DUR-013") and any(
            v.status == "too_long" for v in concurrent.verdicts
        ):
            status, detail = "not_run", "not checked: too long (the search exceeded its bound)"
        else:
            status, detail = "passed", (f"{len(concurrent.calls)} calls of {concurrent.clients} "
                                        f"clients, longest {concurrent.longest}")
        rows.append({"id": ident, "status": status, "detail": detail})
    return rows


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.rounds < 0 or args.clients < 0 or args.clients == 1:
        parser.error("--rounds must be >= 0 and --clients 0 or at least 2")
    if args.cleanup and not args.command:
        parser.error("--cleanup needs --command")
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    target, keep = target_of(args)
    try:
        print(f"crash: seed {seed}, {args.rounds} rounds", file=sys.stderr)
        crash = crash_run(target, args.rounds, seed, max_delay=args.max_delay,
                          import_events=args.import_events,
                          progress=lambda line: print(line, file=sys.stderr))
        concurrent = None
        if args.clients:
            concurrent = concurrent_run(target, args.clients, args.steps, seed, args.bound)
    finally:
        if keep is not None:
            keep.close()
    rows = statuses(crash, concurrent)
    for row in rows:
        print(f"{row['id']}  {row['status']:<15} {row['detail'][:150]}")
    for failure in crash.failures:
        print(failure.render())
    cleanup_errors = [error for error in (
        crash.cleanup_error, concurrent.cleanup_error if concurrent is not None else "")
        if error]
    for error in cleanup_errors:
        print(f"FAILED {error}")
    print(f"replay: --seed {seed} --rounds {args.rounds}")
    summary = {
        "seed": seed, "rounds": crash.rounds, "kills": crash.kills,
        "importKills": crash.import_kills, "batchKills": crash.batch_kills,
        "acknowledgedChecks": crash.acknowledged,
        "inFlight": crash.in_flight, "attempts": crash.attempts, "seconds": round(crash.seconds, 2),
        "cleanupErrors": cleanup_errors,
        "roundAcknowledged": crash.round_acknowledged,
        "aims": {kind: {"twinSeconds": twin, "writeSeconds": full}
                 for kind, (twin, full) in crash.aims.items()},
        "declared": sorted(crash.declared),
        "watched": sorted(crash.watched),
    }
    if concurrent is not None:
        summary.update({
            "clients": concurrent.clients, "calls": len(concurrent.calls),
            "longestHistory": concurrent.longest,
            "checkerSeconds": round(concurrent.checker_seconds, 4),
            "histories": [{"conversation": v.conversation, "calls": v.calls, "status": v.status,
                           "steps": v.steps} for v in concurrent.verdicts],
        })
    print(json.dumps(summary, sort_keys=True))
    if args.json is not None:
        report = {"summary": summary, "requirements": rows,
                  "failures": [failure.render() for failure in crash.failures]}
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", "utf-8")
    return 1 if cleanup_errors or any(row["status"] == "failed" for row in rows) else 0
