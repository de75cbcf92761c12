"""The README's "five mistakes every first store makes", derived from the gallery's kills.

Not a test: run ``python scripts/first_mistakes.py [--gallery ledger]
[--all-checks] [--prefixes LED,ENV,...] [--profile smoke] [--top 5]``. It runs
every broken store of ``tests/galleries/`` (or of one gallery) against its
focused checks, or with ``--all-checks`` against the whole suite as a store's
author would, derandomized and unshrunk (as ``scripts/kill_table.py`` does),
and counts, for each requirement id, how many broken stores the run reported
it failed for (the kill row's ``failed``: the store's tagged ids and whatever
else its one bug breaks). It prints the ids killed most (of the chapters of
``--prefixes`` when given; ties by id), each with the stores that failed it
and its spec sentence, as a markdown table.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from convledger_conformance.registry import all_checks  # noqa: E402
from convledger_conformance.requirements import load_index  # noqa: E402
from galleries import cases, gallery  # noqa: E402
from kill_table import kill  # noqa: E402


def main() -> int:
    """Print the most-killed ids of the gallery as a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="smoke", help="the conformance profile")
    parser.add_argument("--top", type=int, default=5, help="how many ids to print")
    parser.add_argument("--gallery", help="one gallery (a module of tests/galleries)")
    parser.add_argument("--prefixes", help="count only ids of these chapters (LED,ENV,...)")
    parser.add_argument("--all-checks", action="store_true",
                        help="run every check, not only each store's focused ones")
    arguments = parser.parse_args()
    killed_by: dict[str, list[str]] = defaultdict(list)
    stores = 0
    chosen = gallery(arguments.gallery) if arguments.gallery else tuple(cases())
    for broken in chosen:
        checks = list(all_checks()) if arguments.all_checks else list(broken.selected())
        row = kill(broken, checks, name=broken.name, profile=arguments.profile)
        stores += 1
        for ident in sorted(row.failed):
            killed_by[ident].append(broken.name)
        print(f"{broken.name}: {', '.join(sorted(row.failed))}", file=sys.stderr, flush=True)
    sentences = {requirement.id: requirement.summary for requirement in load_index()}
    prefixes = tuple(f"{p.strip()}-" for p in (arguments.prefixes or "").split(",") if p.strip())
    counted = {i: names for i, names in killed_by.items() if i.startswith(prefixes or ("",))}
    ranked = sorted(counted.items(), key=lambda item: (-len(item[1]), item[0]))
    print(f"{stores} broken stores ({arguments.gallery or 'every gallery'}, "
          f"{'all checks' if arguments.all_checks else 'focused checks'}), "
          f"{len(killed_by)} ids failed (profile {arguments.profile})")
    print("| id | broken stores failing it | sentence |")
    print("|---|---|---|")
    for ident, names in ranked[: arguments.top]:
        print(f"| {ident} | {len(names)}: {', '.join(names)} | {sentences.get(ident, '')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
