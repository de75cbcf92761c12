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

COMMANDS = {
    "canon": "convledger.tools.canon",
    "verify": "convledger.tools.verify",
    "inspect": "convledger.tools.inspect",
    "migrate": "convledger.tools.migrate",
    "export": "convledger.tools.transfer",
    "import": "convledger.tools.transfer",
    "serve-wire": "convledger.tools.serve_wire",
    "demo": "convledger.tools.demo",
}
"""The module of :data:`SUBCOMMANDS` registering each subcommand.

A command line naming a subcommand first imports that module alone: the others import the
stores, and the conformance suite runs ``canon`` and ``verify`` as processes by the dozen
(issue 34). ``tests/test_cli_tools.py`` keeps this table in step with the modules.
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered, or ``command``'s alone.

    Given a subcommand of :data:`COMMANDS`, only its module is imported and registered; the
    parse of a command line starting with it is the same either way.
    """
    parser = argparse.ArgumentParser(
        prog="convledger",
        description="Reference tools for the conversation event ledger (ADR 0175).",
        epilog="exit codes: 0 success, 1 problems found, 2 refused input, 3 storage failure",
    )
    parser.add_argument(
        "--version", action="version", version=f"convledger {__version__} (spec {SPEC_VERSION})"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    home = COMMANDS.get(command or "")
    for name in SUBCOMMANDS if home is None else (home,):
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``convledger`` console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(arguments[0] if arguments else None)
    args = parser.parse_args(arguments)
    code: int = args.run(args)
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
