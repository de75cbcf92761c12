"""``convledger canon FILE|-``: the canonical-JSON oracle (chapter ``canonical-json.md``).

It prints exactly the canonical bytes of a JSON document, with no trailing
newline, and exits 0; a document the strict decoder refuses gets one line on
standard error, ``invalid_input: REASON (REQUIREMENT): MESSAGE``, and exit
status 2 (CAN-015). REASON is one of :data:`convledger.errors.CANONICAL_REASONS`.
A file that cannot be read exits 3.
"""

from __future__ import annotations

import argparse
import sys

from convledger import canonical
from convledger.errors import CanonicalJsonError

# The exit codes of ``convledger.cli``, shared by every tool.
EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_REFUSED = 2
EXIT_STORAGE = 3


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``canon`` subcommand."""
    parser = subparsers.add_parser(
        "canon",
        help="print the canonical JSON (RFC 8785) of a document",
        description=(
            "Print the canonical bytes of a JSON document with no trailing newline (exit 0), "
            "or 'invalid_input: REASON (ID): MESSAGE' on standard error (exit 2) (CAN-015)."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the JSON document, or - for standard input")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Canonicalize ``args.file``; return the exit code (CAN-015)."""
    data = read_input(args.file, command="canon")
    if data is None:
        return EXIT_STORAGE
    try:
        text = canonical.canonicalize(data)
    except CanonicalJsonError as error:
        print(
            f"{error.kind}: {error.reason} ({error.requirement}): {error.message}",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    sys.stdout.flush()
    sys.stdout.buffer.write(text)
    sys.stdout.buffer.flush()
    return EXIT_OK


def read_input(path: str, *, command: str) -> bytes | None:
    """The bytes of ``path`` (``-`` is standard input), or None after reporting why not."""
    try:
        if path == "-":
            return sys.stdin.buffer.read()
        with open(path, "rb") as file:
            return file.read()
    except OSError as error:
        print(f"convledger {command}: cannot read {path}: {error.strerror or error}",
              file=sys.stderr)
        return None
