"""``convledger-conformance replay TRACE...``: trace vector files against one store.

::

    convledger-conformance replay TRACE [TRACE ...] [--store MODULE:FACTORY | --command CMD]
                                                    [--timeout SECONDS]

Each ``TRACE`` is a file, a folder (every ``*.json`` file in it, as
``--record-failures`` writes them) or a glob pattern (``'failures/*.json'``).
Replays every trace of each file (the format of ``spec/vectors/traces``, as
``--record-failures`` writes it) on a fresh store of the factory, or of the
wire server (a ``transport: frames`` trace of ``diff`` on a fresh server:
the command started again, or the factory served in process), and prints
one line per trace: ``passed``, ``failed`` with the
first step whose outcome or state digest differs from the recording, or
``not applicable`` when the store does not declare a capability the trace
needs; a store that raises on a step fails the trace. Exit codes: those of
``convledger-conformance`` (0 every applicable trace passed, 1 one failed, 2 usage
error or a file that is not a trace file, 3 the server could not be started).
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from collections.abc import Callable, Sequence
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
    parser.add_argument("traces", metavar="TRACE", nargs="+",
                        help="a trace vector file, a folder of them or a glob pattern")
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


def trace_paths(patterns: Sequence[str]) -> list[Path]:
    """The files ``patterns`` name: files as given, folders' ``*.json``, globs expanded.

    ``ValueError`` for a pattern that names nothing.
    """
    found: list[Path] = []
    for pattern in patterns:
        path = Path(pattern)
        if path.is_dir():
            matched = sorted(path.glob("*.json"))
        elif path.exists():
            matched = [path]
        else:
            matched = sorted(Path(name) for name in glob.glob(pattern, recursive=True))
        if not matched:
            raise ValueError(f"{pattern}: no trace vector file there")
        found.extend(item for item in matched if item not in found)
    return found


def main(argv: Sequence[str]) -> int:
    """Entry point of ``convledger-conformance replay``."""
    from convledger_conformance.runner import read_declaration

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        files = [(path, load_traces(path)) for path in trace_paths(args.traces)]
    except ValueError as error:
        parser.error(str(error))
    opened = open_factory(parser, args.store, args.command, args.timeout)
    if isinstance(opened, int):
        return opened
    factory, name, wire = opened
    failed = total = 0
    try:
        declared = read_declaration(factory)
        for path, traces in files:
            for trace in traces:
                total += 1
                failed += not _replayed(
                    factory, declared, trace, path, lambda: _frames_peer(args, factory),
                    several=len(files) > 1,
                )
    finally:
        if wire is not None:
            wire.close()
    where = str(files[0][0]) if len(files) == 1 else f"{len(files)} files"
    print(f"replayed {total} trace(s) of {where} on {name}: "
          f"{'all applicable passed' if not failed else f'{failed} failed'}")
    sys.stdout.flush()
    return 1 if failed else 0


def _replayed(
    factory: Any, declared: frozenset[Capability], trace: dict[str, Any], path: Path,
    frames_peer: Callable[[], Peer], *, several: bool,
) -> bool:
    """Replay one trace, print its line; False when it failed."""
    label = f"{path}: {trace['name']}" if several else trace["name"]
    needed = {Capability(item) for item in trace.get("capabilities", ())}
    absent = sorted(item.value for item in needed - declared)
    if absent:
        print(f"{label}: not applicable (needs {', '.join(absent)})")
        return True
    try:
        if trace.get("transport") == FRAMES:  # written by `diff`: raw frames, fresh server
            problems = replay_frames(frames_peer(), trace)
        else:
            problems = replay(factory, trace)
    except Exception as error:  # a store that crashes on a step fails the trace
        problems = [f"the store raised {type(error).__name__}: {error}"]
    if problems:
        print(f"{label}: failed: {problems[0]}")
        return False
    print(f"{label}: passed ({len(trace['steps'])} steps)")
    return True
