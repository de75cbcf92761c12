"""``convledger serve-wire``: serve a reference store over the wire protocol (chapter ``wire.md``).

Reads request frames on standard input and writes reply frames on standard
output until standard input ends. ``--store memory`` (the default) makes each
``newStore`` a fresh :class:`WireMemoryStore`; ``--store
sqlite`` a fresh SQLite store on a new temporary file, or, with ``--db PATH``,
a store opened on that one file (every handle shares its data).
``--factory MODULE:FACTORY`` serves any Python store factory instead.
Diagnostics go to standard error only: standard output carries frames.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from convledger.memory import MemoryStore
from convledger.store import LedgerStore
from convledger.wire.server import CARRIED, StoreMaker, WireServer

EXIT_REFUSED = 2


class WireMemoryStore(MemoryStore):
    """A :class:`MemoryStore` that declares, and so serves, only what the protocol carries.

    The server removes other capabilities from every declaration it sends
    (WIR-021); declaring them absent here also makes the store itself refuse
    their operations and companions (CAP-002), so the store behind the wire is
    judged on exactly the declaration the suite sees.
    """

    declared = MemoryStore.declared & CARRIED


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve-wire`` subcommand."""
    parser = subparsers.add_parser(
        "serve-wire",
        help="serve a reference store over the wire protocol on stdin/stdout",
        description=(
            "Serve stores over the convledger wire protocol (spec chapter wire.md): "
            "length-prefixed CBOR frames on standard input and output."
        ),
    )
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory",
                        help="the reference store to serve (default: memory)")
    parser.add_argument("--db", metavar="PATH", type=Path,
                        help="with --store sqlite: the database file every store opens")
    parser.add_argument("--factory", metavar="MODULE:FACTORY",
                        help="serve the stores of this zero-argument Python callable instead")
    parser.set_defaults(run=run)


def maker_for(args: argparse.Namespace) -> StoreMaker:
    """The store maker the options name."""
    if args.factory:
        module_name, _, attribute = args.factory.partition(":")
        target: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
        if not callable(target):
            raise TypeError(f"{args.factory} is not callable")
        factory = target

        def make_any() -> LedgerStore:
            store: LedgerStore = factory()
            return store

        return make_any
    if args.store == "memory":
        return WireMemoryStore
    from convledger.sqlite import SqliteStore
    from convledger.sqlite.factories import file_store_factory

    if args.db is None:
        return file_store_factory()
    path: Path = args.db

    def make_on_file() -> LedgerStore:
        return SqliteStore(path)

    return make_on_file


def run(args: argparse.Namespace) -> int:
    """Serve until standard input ends; exit 0, or 2 when framing was lost or options are bad."""
    if args.db is not None and args.store != "sqlite":
        print("serve-wire: --db needs --store sqlite", file=sys.stderr)
        return EXIT_REFUSED
    try:
        maker = maker_for(args)
    except Exception as error:  # a user's factory may fail to import in any way
        print(f"serve-wire: cannot load the store: {error}", file=sys.stderr)
        return EXIT_REFUSED
    sys.stdout.flush()
    return WireServer(maker).serve(sys.stdin.buffer, sys.stdout.buffer)
