"""What the SQLite tools share: exit codes for refusals and one way to print them.

Exit codes are those of ``convledger.cli``: 2 when the input or command line
was refused (the error kind is printed), 3 when the file or database could not
be opened or written (every :class:`~convledger.sqlite.errors.DatabaseRefusal`,
and operating-system errors).
"""

from __future__ import annotations

import json
import sys

from convledger.errors import LedgerError
from convledger.sqlite.errors import DatabaseRefusal

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_REFUSED = 2
EXIT_STORAGE = 3


def exit_code(error: LedgerError) -> int:
    """3 for a database that could not be opened or written, 2 for any other refusal."""
    return EXIT_STORAGE if isinstance(error, DatabaseRefusal) else EXIT_REFUSED


def report_refusal(command: str, error: LedgerError) -> int:
    """Print ``convledger COMMAND: KIND (ID): MESSAGE`` on stderr; return the exit code."""
    print(
        f"convledger {command}: {error.kind} ({error.requirement}): {error.message}",
        file=sys.stderr,
    )
    return exit_code(error)


def report_os_error(command: str, what: str, error: OSError) -> int:
    """Print why a file could not be read or written; return exit code 3."""
    print(f"convledger {command}: cannot {what}: {error.strerror or error}", file=sys.stderr)
    return EXIT_STORAGE


def shown(identifier: str) -> str:
    """An id as a JSON string literal, so NUL and control characters stay visible."""
    return json.dumps(identifier, ensure_ascii=False)
