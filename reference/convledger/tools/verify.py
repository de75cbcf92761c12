"""``convledger verify ARCHIVE [--json]``: check an archive file (chapter ``archive.md``).

It checks every rule of an archive that needs no target store (the rules a
store adds on import are ARC-009 and ARC-010) and reports EVERY problem, not
only the first (ARC-015): one line per problem,
``WHERE: KIND (REQUIREMENT): MESSAGE``, where WHERE is the JSON Pointer of the
offending member (or ``(document)`` for the document as a whole), then a
summary line. ``--json`` prints the same as one JSON report instead.

Exit status: 0 when there is no problem, 1 when there is at least one, 3 when
the file cannot be read.
"""

from __future__ import annotations

import argparse
import json

from convledger.archive import Archive, Problem, inspect_archive
from convledger.kinds import default_registry
from convledger.tools.canon import EXIT_OK, EXIT_PROBLEMS, EXIT_STORAGE, read_input


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``verify`` subcommand."""
    parser = subparsers.add_parser(
        "verify",
        help="check an archive and report every problem found",
        description=(
            "Check an archive against every rule that needs no target store and report "
            "all problems (ARC-015); exit 0 when there is none, 1 otherwise."
        ),
    )
    parser.add_argument("archive", metavar="ARCHIVE", help="the archive file, or - for stdin")
    parser.add_argument("--json", action="store_true", help="print a JSON report")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Verify ``args.archive``; return the exit code (ARC-015)."""
    data = read_input(args.archive, command="verify")
    if data is None:
        return EXIT_STORAGE
    archive, problems = inspect_archive(data, default_registry())
    if args.json:
        print(json.dumps(report(args.archive, archive, problems), indent=2, sort_keys=True))
    else:
        for problem in problems:
            print(format_problem(problem))
        print(summary(args.archive, archive, problems))
    return EXIT_PROBLEMS if problems else EXIT_OK


def format_problem(problem: Problem) -> str:
    """One report line: where, error kind, requirement id, message."""
    return f"{problem.where}: {problem.kind} ({problem.requirement}): {problem.error.message}"


def summary(path: str, archive: Archive | None, problems: list[Problem]) -> str:
    """The last line of the text report."""
    if problems:
        count = len(problems)
        return f"{path}: {count} problem{'' if count == 1 else 's'}"
    assert archive is not None
    return (
        f"{path}: valid archive of conversation {archive.conversation_id!r} "
        f"with {len(archive.events)} events"
    )


def report(path: str, archive: Archive | None, problems: list[Problem]) -> dict[str, object]:
    """The ``--json`` report: validity, what the archive holds, and every problem."""
    return {
        "archive": path,
        "valid": not problems,
        "conversationId": archive.conversation_id if archive is not None else None,
        "events": len(archive.events) if archive is not None else None,
        "problems": [
            {
                "where": problem.where,
                "kind": problem.kind,
                "requirement": problem.requirement,
                "message": problem.error.message,
            }
            for problem in problems
        ],
    }
