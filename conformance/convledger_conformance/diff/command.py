"""``convledger-conformance diff``: generated frames to the reference and to a store, compared.

::

    convledger-conformance diff (--command CMD | --store MODULE:FACTORY)
        [--reference memory|sqlite] [--profile smoke|ci|thorough] [--seed N]
        [--record DIR] [--json PATH] [--timeout SECONDS]

The reference store is served in process by the reference wire server
(:class:`~convledger.wire.server.WireServer` in a thread); the store under
test is the ``--command`` server, or ``--store``'s factory served the same way
in process. Both get the same frames (:mod:`~convledger_conformance.diff.generate`)
restricted to the capabilities both declare; after every step their replies
and state digests are compared (:mod:`~convledger_conformance.diff.engine`).
Each disagreement is shrunk and, with ``--record``, written as a trace vector
(``transport: frames``) that ``convledger-conformance replay`` runs. A
disagreement is a lead, not a verdict: the spec decides which side is right.

Exit codes: 0 no disagreement, 1 disagreement(s), 2 usage, 3 a server could
not be started or did not answer ``hello``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from convledger.memory import MemoryStore
from convledger.store_interface import LedgerStore
from convledger_conformance.diff.engine import (
    Outcome,
    Session,
    close_handles,
    first_difference,
    in_step,
    member_at,
    observe,
    run_case,
    shrink,
)
from convledger_conformance.diff.generate import Generator, Step
from convledger_conformance.diff.peers import Peer, PeerGone, ProcessPeer, ThreadPeer
from convledger_conformance.diff.traces import LEAD, frames_trace, record
from convledger_conformance.factories import FactoryLoadError, load_factory
from convledger_conformance.wire.connection import DEFAULT_TIMEOUT

EXIT_DISAGREEMENT: Final = 1
EXIT_USAGE: Final = 2
EXIT_SERVER: Final = 3


@attrs.frozen
class Size:
    """How much a profile runs: store cases of ``length`` chunks (one family each, a chunk
    one request or a few), and session cases (each on servers of its own)."""

    cases: int
    length: int
    sessions: int


PROFILES: Final = {
    "smoke": Size(cases=8, length=16, sessions=4),
    "ci": Size(cases=30, length=20, sessions=8),
    "thorough": Size(cases=200, length=32, sessions=24),
}
SESSION_LENGTH: Final = 3
"""Chunks after ``newStore`` in a session case (each of its shrink runs starts two servers)."""
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``convledger-conformance diff``."""
    parser = argparse.ArgumentParser(
        prog="convledger-conformance diff",
        description="Send generated operation sequences, malformed and hostile frames "
        "included, to the reference store and to the store under test; report every step "
        "where their replies or state digests differ, shrunk to a replayable trace.",
        epilog="exit codes: 0 no disagreement, 1 disagreement(s), 2 usage error, "
        "3 a server could not be started. " + LEAD,
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--command", metavar="CMD", help="the wire server under test")
    target.add_argument("--store", metavar="MODULE:FACTORY",
                        help="a store factory under test, served in process")
    parser.add_argument("--reference", choices=("memory", "sqlite"), default="memory",
                        help="the reference store compared with (default: memory)")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="smoke")
    parser.add_argument("--seed", type=int, help="the generator's seed (default: drawn, printed)")
    parser.add_argument("--record", metavar="DIR", type=Path,
                        help="write each shrunk disagreement as a trace vector file here")
    parser.add_argument("--json", metavar="PATH", type=Path, help="write a JSON report")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds to wait for one reply (default 60)")
    return parser


def reference_maker(name: str) -> Callable[[], LedgerStore]:
    """The reference stores ``--reference`` names."""
    if name == "sqlite":
        from convledger.tools.serve_wire import wire_sqlite_store_factory

        return wire_sqlite_store_factory()
    return MemoryStore


class Servers:
    """Starts and greets the two servers; restarts them after a server ended."""

    def __init__(self, reference: Callable[[], Peer], store: Callable[[], Peer],
                 hello: Step) -> None:
        self._open_reference = reference
        self._open_store = store
        self.hello = hello
        self.reference = Session(reference())
        self.store = Session(store())
        self.failure: PeerGone | None = None
        """Why the store's server last ended or hung (shown with a ``gone`` disagreement)."""
        self.greeting: tuple[Any, Any] = (observe(self.reference, hello),
                                          observe(self.store, hello))

    def restart(self) -> None:
        """Fresh, greeted servers (after one ended or lost step with the other)."""
        self.close()
        self.reference = Session(self._open_reference())
        self.store = Session(self._open_store())
        observe(self.reference, self.hello)
        observe(self.store, self.hello)

    def run(self, steps: Sequence[Step]) -> Outcome:
        """One case on fresh stores of the running servers."""
        self.reference.handles, self.store.handles = [], []
        outcome = run_case(self.reference, self.store, steps)
        close_handles(self.reference)
        close_handles(self.store)
        if self.store.gone is not None:
            self.failure = self.store.gone
        if outcome.disagreement is not None and not (
                in_step(self.reference) and in_step(self.store)):
            self.restart()  # a server ended, or its replies are out of step
        elif self.reference.gone or self.store.gone:
            self.restart()
        return outcome

    def run_fresh(self, steps: Sequence[Step]) -> Outcome:
        """One session case on two servers of its own."""
        reference = Session(self._open_reference())
        store = Session(self._open_store())
        try:
            return run_case(reference, store, steps)
        finally:
            if store.gone is not None:
                self.failure = store.gone
            reference.peer.close()
            store.peer.close()

    def close(self) -> None:
        """Stop both servers."""
        self.reference.peer.close()
        self.store.peer.close()


@attrs.frozen
class Disagreement:
    """One shrunk disagreement and where its trace went."""

    case: str
    step: Step
    number: int
    steps: int
    path: str
    reference: Any
    store: Any
    trace: dict[str, Any]
    also: int = 0

    def json(self, file: str | None) -> dict[str, Any]:
        """The report's entry."""
        return {"case": self.case, "op": self.step.op, "family": self.step.family,
                "ids": list(self.step.ids), "step": self.number, "steps": self.steps,
                "path": self.path, "reference": self.reference, "store": self.store,
                "trace": file, "sameSignature": self.also}


def main(argv: Sequence[str], size: Size | None = None) -> int:
    """Entry point of ``convledger-conformance diff`` (``size`` overrides the profile's)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    size = size or PROFILES[args.profile]
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    maker = reference_maker(args.reference)
    reference_name = f"reference-{args.reference}"

    def open_reference() -> Peer:
        return ThreadPeer(reference_name, maker, args.timeout)

    if args.store is not None:
        try:
            factory = load_factory(args.store)
        except FactoryLoadError as error:
            parser.error(f"--store: {error}")
        target = args.store

        def open_store() -> Peer:
            return ThreadPeer("store-under-test", factory, args.timeout)
    else:
        target = args.command

        def open_store() -> Peer:
            return ProcessPeer(args.command, args.timeout)

    started = time.monotonic()
    generator = Generator(seed, frozenset())
    try:
        servers = Servers(open_reference, open_store, generator.hello())
    except PeerGone as error:
        print(f"convledger-conformance diff: cannot start {target!r}: {error}", file=sys.stderr)
        return EXIT_SERVER
    reference_hello, store_hello = servers.greeting
    if servers.store.capabilities is None:
        servers.close()
        print(f"convledger-conformance diff: {target!r} did not answer hello: {store_hello}",
              file=sys.stderr)
        return EXIT_SERVER
    assert servers.reference.capabilities is not None
    common = servers.reference.capabilities & servers.store.capabilities
    generator = Generator(seed, frozenset(common) - {"ledger"})
    print(f"diff: {reference_name} (in process) against {target}; profile {args.profile}, "
          f"seed {seed} (repeat with --seed {seed})")
    print(f"capabilities compared: {', '.join(sorted(common))} (reference declares "
          f"{', '.join(sorted(servers.reference.capabilities))}; store declares "
          f"{', '.join(sorted(servers.store.capabilities))})")
    found: dict[tuple[str, str], Disagreement] = {}
    counts = {"cases": 0, "steps": 0}
    hello_path = first_difference(reference_hello, store_hello)
    try:
        if hello_path is not None:
            _keep(found, Disagreement("hello", servers.hello, 1, 1, hello_path,
                                      member_at(reference_hello, hello_path),
                                      member_at(store_hello, hello_path),
                                      frames_trace("hello", [servers.hello], [reference_hello])))
        for number in range(size.cases):
            steps = generator.case(number, size.length)
            _one(found, counts, f"case-{number}", steps, servers.run,
                 prefix=[(servers.hello, reference_hello)])
        for number in range(size.sessions):
            steps = generator.session_case(number, SESSION_LENGTH)
            _one(found, counts, f"session-{number}", steps, servers.run_fresh, prefix=[])
    except PeerGone as error:
        print(f"convledger-conformance diff: a server could not be restarted: {error}",
              file=sys.stderr)
        return EXIT_SERVER
    finally:
        servers.close()
    elapsed = time.monotonic() - started
    files = record(args.record, [(item.case, item.step.op, item.trace)
                                 for item in found.values()]) if args.record else {}
    for index, item in enumerate(found.values(), start=1):
        _print(index, item, files.get(item.case), target, args)
    if servers.failure is not None and any(item.path.startswith("gone")
                                           for item in found.values()):
        print(f"the store's server ended or hung: {servers.failure}")
    print(f"{counts['cases']} cases, {counts['steps']} steps, {len(found)} disagreement(s) "
          f"in {elapsed:.1f} s")
    if found:
        print(LEAD)
    if args.json:
        report = {
            "reference": reference_name, "target": target, "profile": args.profile,
            "seed": seed, "capabilities": sorted(common), "cases": counts["cases"],
            "steps": counts["steps"], "seconds": round(elapsed, 1),
            "disagreements": [item.json(files.get(item.case)) for item in found.values()],
            "note": LEAD,
        }
        try:
            args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        except OSError as error:
            print(f"convledger-conformance diff: cannot write {args.json}: {error}",
                  file=sys.stderr)
            return EXIT_USAGE
    return EXIT_DISAGREEMENT if found else 0


def _one(found: dict[tuple[str, str], Disagreement], counts: dict[str, int], case: str,
         steps: list[Step], runner: Callable[[Sequence[Step]], Outcome],
         prefix: list[tuple[Step, Any]]) -> None:
    outcome = runner(steps)
    counts["cases"] += 1
    counts["steps"] += len(outcome.reference)
    if outcome.disagreement is None or outcome.path is None:
        return
    step = steps[outcome.disagreement]
    signature = (step.family, _generic(outcome.path))
    if signature in found:
        found[signature] = attrs.evolve(found[signature], also=found[signature].also + 1)
        return
    small, shrunk = shrink(steps, step, runner)
    index = shrunk.disagreement
    assert index is not None and shrunk.path is not None
    path = shrunk.path
    while "<absent>" in (member_at(shrunk.reference[index], path),
                         member_at(shrunk.store[index], path)) and _parent(path) != path:
        path = _parent(path)  # show the member that holds the absent one
    trace = frames_trace(case, [item for item, _ in prefix] + small,
                   [seen for _, seen in prefix] + list(shrunk.reference))
    found[signature] = Disagreement(
        case, step, index + 1 + len(prefix), len(small) + len(prefix), shrunk.path,
        member_at(shrunk.reference[index], path),
        member_at(shrunk.store[index], path), trace)


def _parent(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else path


def _keep(found: dict[tuple[str, str], Disagreement], item: Disagreement) -> None:
    found[(item.step.family, item.path)] = item


def _generic(path: str) -> str:
    import re

    return re.sub(r"\[\d+\]", "[]", path)


def _print(index: int, item: Disagreement, file: str | None, target: str,
           args: argparse.Namespace) -> None:
    print(f"disagreement {index}: step {item.number} of {item.steps}, request "
          f"{item.step.op!r} ({item.step.family}; ids {', '.join(item.step.ids) or '-'}), "
          f"first differing member {item.path}:")
    print(f"  reference: {_short(item.reference)}")
    print(f"  store:     {_short(item.store)}")
    if item.also:
        print(f"  ({item.also} more case(s) differed the same way)")
    if file is not None:
        where = f"--command {json.dumps(target)}" if args.command else f"--store {target}"
        print(f"  trace: {file} (convledger-conformance replay {file} {where})")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "..."


