"""Record the shrunk failures of the broken-store gallery as operation-trace vectors.

Not a test: run ``python scripts/record_shrunk_vectors.py`` from the repository
root. For every broken store of the galleries (``tests/galleries/``) it runs
the store's focused checks at ``ci``, derandomized and shrunk, with
``record_failures`` (:mod:`convledger_conformance.vectors.failures`); when none
of them gives a trace, it runs the gallery's state machine (:data:`MACHINES`)
the same way. Each trace is named ``shrunk/<store class>/<check>``, which is how
``tests/test_shrunk_vectors.py`` finds its store again among
:func:`galleries.cases`. The checks that replay shipped vectors are left out: their
failures would only repeat a vector. Of the traces that catch the store, it keeps the
one with the fewest steps. The kept traces are grouped by the capabilities they need into
``spec/vectors/traces/shrunk-<capabilities>.json`` and this package's copies,
replacing what was there; then their expectations are recorded again from the
reference, as for every trace file.

A store whose failures no trace can express (the SQLite schema and
multi-process checks inspect the class and file behind the store) gets no
vector; the script lists them. ``tests/test_shrunk_vectors.py`` proves that
every shipped shrunk trace still catches the store it was found on.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from convledger_conformance.registry import all_checks
from convledger_conformance.runner import run_suite
from convledger_conformance.vectors import traces

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from galleries import BrokenStore, cases  # noqa: E402

TARGETS = (
    ROOT / "spec" / "vectors" / "traces",
    ROOT / "conformance" / "convledger_conformance" / traces.PACKAGE_DIR / "traces",
)

MACHINES = {"runtime": "runtime_state_machine"}
"""The state machine run for a gallery's store that no focused check records a trace for.

The ledger gallery's stores that no focused check records (in-process
aliasing, error details, capability declarations) have no trace form, so
the ledger machine is not run for them.
"""


VECTOR_CHECKS = ("trace_vectors_", "archive_vectors_")
"""Checks that replay shipped vectors: a trace of their failure would repeat a vector."""


def _record(broken: BrokenStore, checks: list[Any], folder: Path) -> list[dict[str, Any]]:
    """Run ``checks`` on the broken store with recording; the traces written."""
    if checks:
        run_suite(broken.factory, profile="ci", checks=checks, derandomize=True,
                  store_name=broken.name, record_failures=folder)
    return [
        trace
        for path in sorted(folder.glob("*.json"))
        for trace in json.loads(path.read_bytes())["traces"]
    ]


def _preference(trace: dict[str, Any]) -> tuple[int, int]:
    return (len(trace["steps"]), len(json.dumps(trace["steps"])))


def main() -> int:
    """Record, choose and write; print one line per broken store."""
    started = time.perf_counter()
    chosen: list[dict[str, Any]] = []
    missing: list[str] = []
    scratch = Path(tempfile.mkdtemp(prefix="convledger-shrunk-"))
    try:
        for broken in cases():
            folder = scratch / "traces" / broken.name
            focused = [item for item in broken.selected()
                       if not item.name.startswith(VECTOR_CHECKS)]
            found = _record(broken, focused, folder)
            if not found and broken.chapter in MACHINES:
                machine = [item for item in all_checks() if item.name == MACHINES[broken.chapter]]
                found = _record(broken, machine, folder)
            if not found:
                missing.append(broken.name)
                print(f"{broken.name}: no trace vector", file=sys.stderr, flush=True)
                continue
            best = min(found, key=_preference)
            chosen.append(best)
            print(f"{broken.name}: {best['name']} ({len(best['steps'])} steps)",
                  file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    groups: dict[str, list[dict[str, Any]]] = {}
    for trace in sorted(chosen, key=lambda item: item["name"]):
        groups.setdefault("-".join(trace["capabilities"]), []).append(trace)
    for folder in TARGETS:
        for old in folder.glob(f"{traces.SHRUNK_PREFIX}*.json"):
            old.unlink()
    for label, members in groups.items():
        document = {"traces": members}
        data = traces.document_of(traces.traces_of(document), comment=traces.SHRUNK_COMMENT)
        for folder in TARGETS:
            (folder / f"{traces.SHRUNK_PREFIX}{label}.json").write_bytes(data)
    print(f"recorded {len(chosen)} shrunk traces in {len(groups)} files "
          f"({time.perf_counter() - started:.1f} s); no vector for: {', '.join(missing) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
