"""``convledger-conformance replay TRACE.json``: one trace vector file against one store.

::

    convledger-conformance replay TRACE.json [--store MODULE:FACTORY | --command CMD]
                                             [--timeout SECONDS]

Replays every trace of the file (the format of ``spec/vectors/traces``, as
``--record-failures`` writes it) on a fresh store of the factory, or of the
wire server (a ``transport: frames`` trace of ``diff`` on a fresh server:
the command started again, or the factory served in process), and prints
one line per trace: ``passed``, ``failed`` with the first step whose
outcome or state digest differs from the recording, or ``not applicable``
when the store does not declare a capability the trace needs. Exit codes:
those of ``convledger-conformance`` (0 every applicable trace passed, 1 one
failed, 2 usage error or a file that is not a trace file, 3 the server could
not be started).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convledger.store import Capability
from convledger_conformance.diff.peers import Peer, ProcessPeer, ThreadPeer
from convledger_conformance.diff.traces import TRANSPORT as FRAMES
from convledger_conformance.diff.traces import replay_frames
from convledger_conformance.factories import DEFAULT_STORE, open_factory
from convledger_conformance.registry import StoreFactory
from convledger_conformance.vectors.traces import FORMAT, FORMAT_VERSION, replay
from convledger_conformance.wire.connection import DEFAULT_TIMEOUT


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``convledger-conformance replay``."""
    parser = argparse.ArgumentParser(
        prog="convledger-conformance replay",
        description="Replay a trace vector file against a store; report the first "
        "differing step of each trace.",
        epilog="exit codes: 0 every applicable trace passed, 1 a trace failed, 2 usage error "
        "or not a trace file, 3 the --command server could not be started",
    )
    parser.add_argument("trace", metavar="TRACE.json", type=Path, help="the trace vector file")
    parser.add_argument("--store", metavar="MODULE:FACTORY", default=DEFAULT_STORE,
                        help=f"zero-argument callable returning a fresh store "
                        f"(default: {DEFAULT_STORE})")
    parser.add_argument("--command", metavar="CMD",
                        help="replay against a store served over the wire by this command")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, default=DEFAULT_TIMEOUT,
                        help="with --command: seconds to wait for one reply")
    return parser


def load_traces(path: Path) -> list[dict[str, Any]]:
    """The traces of a trace vector file; ``ValueError`` when it is not one."""
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read {path}: {error}") from error
    if not isinstance(document, dict) or (
        document.get("format"), document.get("formatVersion")
    ) != (FORMAT, FORMAT_VERSION):
        raise ValueError(f"{path} is not a trace vector file (format {FORMAT} {FORMAT_VERSION})")
    traces = document.get("traces")
    if not isinstance(traces, list) or not traces:
        raise ValueError(f"{path} holds no trace")
    return traces


def _frames_peer(args: argparse.Namespace, factory: StoreFactory) -> Peer:
    """A fresh server for a frames trace: the command again, or the factory served in process."""
    if args.command is not None:
        return ProcessPeer(args.command, args.timeout)
    return ThreadPeer("store-under-test", factory, args.timeout)


def main(argv: Sequence[str]) -> int:
    """Entry point of ``convledger-conformance replay``."""
    from convledger_conformance.runner import read_declaration

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        traces = load_traces(args.trace)
    except ValueError as error:
        parser.error(str(error))
    opened = open_factory(parser, args.store, args.command, args.timeout)
    if isinstance(opened, int):
        return opened
    factory, name, wire = opened
    failed = 0
    try:
        declared = read_declaration(factory)
        for trace in traces:
            needed = {Capability(item) for item in trace.get("capabilities", ())}
            absent = sorted(item.value for item in needed - declared)
            if absent:
                print(f"{trace['name']}: not applicable (needs {', '.join(absent)})")
                continue
            if trace.get("transport") == FRAMES:  # written by `diff`: raw frames, fresh server
                problems = replay_frames(_frames_peer(args, factory), trace)
            else:
                problems = replay(factory, trace)
            if problems:
                failed += 1
                print(f"{trace['name']}: failed: {problems[0]}")
            else:
                print(f"{trace['name']}: passed ({len(trace['steps'])} steps)")
    finally:
        if wire is not None:
            wire.close()
    print(f"replayed {len(traces)} trace(s) of {args.trace} on {name}: "
          f"{'all applicable passed' if not failed else f'{failed} failed'}")
    sys.stdout.flush()
    return 1 if failed else 0
