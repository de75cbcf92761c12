"""Where the crash command's import kills land: inside the import's write transaction or not.

Runs :func:`~convledger_conformance.durability.crash.crash_run` (in this
process; its servers are real subprocesses it kills) on the reference SQLite
or PostgreSQL wire store with one addition: the server writes to
``{dir}/writes.log`` the moment (``time.monotonic``, one clock for every
process of the machine) each import's write transaction began and committed
(SQLite: ``BEGIN IMMEDIATE`` .. ``COMMIT``; PostgreSQL: the transaction of
``_run``). The script records when each kill was sent and prints, per aim,
how many of the import-round kills landed before that transaction (decoding
and checking), inside it, or after it::

    python scripts/crash_landing.py --store sqlite --seeds 1-4 --rounds 9
    python scripts/crash_landing.py --store postgres --aim old   # 20 % .. 70 % (before issue 36)

``--aim old`` places the kills as the command did before issue 36 (20 % ..
70 % of the large import's calibrated duration); ``twin`` by the clock from
the moment the import's refused twin was answered to the end of the write;
``new`` as the command does now (soon after the first change of a file of the
location when the calibration saw one change, else as ``twin``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from convledger.archive import Archive
from convledger.postgres.factories import configured_dsn
from convledger.postgres.locations import open_location
from convledger.sqlite import SqliteStore
from convledger.tools.serve_wire import _wire_postgres_class
from convledger.wire.server import CARRIED
from convledger_conformance.durability import crash
from convledger_conformance.durability.crash import crash_run
from convledger_conformance.durability.target import Target

_T = TypeVar("_T")
LOG = "writes.log"


def _note(location: Path, what: str, events: int) -> None:
    """Append one line to the location's log (O_APPEND: a kill right after keeps it)."""
    descriptor = os.open(location / LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, f"{what} {events} {time.monotonic():.6f}\n".encode())
    finally:
        os.close(descriptor)


class TimedSqlite(SqliteStore):
    """The reference wire SQLite store, logging each import transaction's begin and commit."""

    declared = SqliteStore.declared & CARRIED

    @classmethod
    def at(cls, location: str) -> SqliteStore:
        Path(location).mkdir(parents=True, exist_ok=True)
        return cls(Path(location) / "ledger.sqlite")

    _events = 0

    def _import(self, archive: Archive) -> None:
        self._events = len(archive.events)
        super()._import(archive)

    @contextlib.contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        directory = Path(self.path).parent
        with super()._transaction(operation, write=write) as connection:
            if operation == "import":
                _note(directory, "begin", self._events)
            yield connection
        if operation == "import":
            _note(directory, "commit", self._events)


def timed_postgres(location: str) -> Any:
    """The reference wire PostgreSQL store of ``location``, logging each import's transaction."""
    base: Any = _wire_postgres_class()
    directory = Path(location)

    class TimedPostgres(base):  # type: ignore[misc, valid-type]
        _events = 0

        def _import(self, archive: Archive) -> None:
            self._events = len(archive.events)
            super()._import(archive)

        def _run(self, operation: str, body: Callable[[Any], _T], *, write: bool = True) -> _T:
            if operation != "import":
                return super()._run(operation, body, write=write)  # type: ignore[no-any-return]
            _note(directory, "begin", self._events)
            result = super()._run(operation, body, write=write)
            _note(directory, "commit", self._events)
            return result  # type: ignore[no-any-return]

    return open_location(configured_dsn(), location, TimedPostgres)


def _old_aim(twin: float, full: float) -> tuple[float, float]:
    """Before issue 36: 20 % .. 70 % of the large write's duration, whatever it did when."""
    del twin
    return 0.2 * full, 0.7 * full


def landings(store: str, seed: int, rounds: int, aim: str) -> Counter[str]:
    """One crash run; where each import-round kill landed."""
    kills: list[float] = []
    directories: list[Path] = []
    original_kill, original_aim = crash.kill, crash._aim

    def recorded_kill(connection: Any) -> None:
        kills.append(time.monotonic())
        original_kill(connection)

    opener = ("crash_landing:TimedSqlite.at" if store == "sqlite"
              else "crash_landing:timed_postgres")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).resolve().parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
    argv = (sys.executable, "-m", "convledger", "serve-wire", "--opener", opener)
    cleanup: tuple[str, ...] = ()
    if store == "postgres":
        cleanup = (sys.executable, "-m", "convledger", "serve-wire", "--store", "postgres",
                   "--drop-location", "{dir}")
    target = Target(argv, env=env, cleanup=cleanup)
    original_clean = Target.clean_up

    def keep_log(self: Target, directory: Path) -> str:
        directories.append(directory)
        (Path("/tmp") / f"crash-landing-{seed}.log").write_bytes(
            (directory / LOG).read_bytes() if (directory / LOG).exists() else b"")
        return original_clean(self, directory)

    original_files = crash._files
    crash.kill, Target.clean_up = recorded_kill, keep_log  # type: ignore[method-assign]
    if aim == "old":
        crash._aim = _old_aim
    if aim in ("old", "twin"):  # the clock alone: no file seen to change
        crash._files = lambda directory: {}
    try:
        result = crash_run(target, rounds, seed)
    finally:
        crash.kill, crash._aim, crash._files = original_kill, original_aim, original_files
        Target.clean_up = original_clean  # type: ignore[method-assign]
    if result.failures:
        raise SystemExit(f"seed {seed}: {result.failures[0].render()}")
    log = (Path("/tmp") / f"crash-landing-{seed}.log").read_text("utf-8").split("\n")
    marks = [(what, float(at)) for what, events, at in (line.split() for line in log if line)
             if int(events) >= 1000]  # the large imports (the small ones have at most 50 events)
    counts: Counter[str] = Counter()
    import_rounds = [r for r in range(1, rounds + 1)
                     if crash.ROUND_KINDS[(r - 1) % len(crash.ROUND_KINDS)] == "import"]
    for round_ in import_rounds:
        at = kills[round_ - 1]
        begun = [t for what, t in marks if what == "begin" and at - 3.0 < t <= at]
        if not begun:
            counts["before"] += 1
        elif any(what == "commit" and begun[-1] <= t <= at for what, t in marks):
            counts["after the commit"] += 1
        else:
            counts["inside"] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--seeds", default="1-4", help="a range FIRST-LAST")
    parser.add_argument("--rounds", type=int, default=9, help="rounds per seed (every third "
                        "kills inside a large import)")
    parser.add_argument("--aim", choices=("old", "twin", "new"), default="new",
                        help="old: 20 %% .. 70 %% of the calibrated time (before issue 36); "
                             "twin: between the refused twin's time and the write's; new: "
                             "after the first file write when the store writes files there, "
                             "else as twin")
    args = parser.parse_args()
    first, _, last = args.seeds.partition("-")
    total: Counter[str] = Counter()
    for seed in range(int(first), int(last or first) + 1):
        counts = landings(args.store, seed, args.rounds, args.aim)
        print(f"seed {seed}: {dict(counts)}", file=sys.stderr)
        total.update(counts)
    kills = sum(total.values())
    print(f"{args.store}, aim {args.aim}: {total['inside']} of {kills} import kills landed inside "
          f"the import's write transaction ({total['before']} before it, "
          f"{total['after the commit']} after its commit)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
