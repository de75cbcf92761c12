"""``convledger``: the reference tools, one subcommand per module in ``convledger.tools``.

Exit codes are the same for every subcommand:

====  ==========================================================
0     success
1     the input was checked and has problems (``verify``)
2     the input or the command line was refused (typed error kind printed)
3     the file or database could not be opened or written
====  ==========================================================
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from convledger import SPEC_VERSION, __version__

SUBCOMMANDS = (
    "convledger.tools.canon",
    "convledger.tools.verify",
    "convledger.tools.inspect",
    "convledger.tools.migrate",
    "convledger.tools.transfer",
    "convledger.tools.serve_wire",
    "convledger.tools.demo",
)
"""Modules that each define ``register(subparsers)``; order is the order in ``--help``."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="convledger",
        description="Reference tools for the conversation event ledger (ADR 0175).",
        epilog="exit codes: 0 success, 1 problems found, 2 refused input, 3 storage failure",
    )
    parser.add_argument(
        "--version", action="version", version=f"convledger {__version__} (spec {SPEC_VERSION})"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``convledger`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.run(args)
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
