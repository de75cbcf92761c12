"""DUR-008 for stores that declare ``migration``: SIGKILL in the middle of a version 1 migration.

A version 1 file with many conversations (:mod:`convledger.sqlite.fixtures`)
is opened, and so migrated (SQL-030), by a subprocess that opens it as the
factory's store class; the subprocess is killed at a moment between 10 % and
90 % of the time a first, uninterrupted migration of a copy took, and at least
one kill must land after the open began and before it returned (the process
says so on its standard output). The file
must then open in this process without a refusal and hold every
conversation with exactly its ``runtime/baseline`` at seq 1: never a
half-migrated file.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from convledger.runtime import Accept
from convledger.sqlite.fixtures import runtime_states, v1_rows_of, write_v1_database
from convledger.store import Capability
from convledger_conformance.durability.target import Target
from convledger_conformance.registry import CheckContext, check, expect
from convledger_conformance.sqlite.checks import workspace

CONVERSATIONS = {"smoke": 300, "ci": 800, "thorough": 3000}
"""Conversations of the version 1 file (more make the migration, and its window, longer)."""
KILLS = {"smoke": 1, "ci": 3, "thorough": 10}
RETRIES = 12
"""Further kills, each aimed nearer the window, while none has landed inside the open."""
IDS = ("DUR-008",)


def _opening(cls: Any, path: Path) -> list[str]:
    """A subprocess that opens (so migrates) ``path`` as ``cls`` and then waits for its kill."""
    code = (f"import importlib, time; cls = importlib.import_module({cls.__module__!r})"
            f".{cls.__qualname__}; print('opening', flush=True); cls({str(path)!r}); "
            "print('opened', flush=True); "
            "time.sleep(60)")
    return [sys.executable, "-c", code]


def _open_and_time(argv: list[str], env: dict[str, str] | None) -> float:
    started = time.monotonic()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, env=env) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        if line.strip() == b"opening":
            line = process.stdout.readline()
        elapsed = time.monotonic() - started
        process.kill()
    expect(line.strip() == b"opened", IDS, f"the version 1 file did not open: {line!r}")
    return elapsed


@check(*IDS, capability=Capability.MIGRATION, also=(Capability.MULTI_PROCESS,))
def killed_migration_leaves_a_file_that_opens(context: CheckContext) -> None:
    """Kill the process migrating a version 1 file; the next open migrates it, or it is migrated."""
    count = CONVERSATIONS.get(context.profile, 3000)
    script = [(f"m-{n}", Accept(f"k-{n}", f"in-{n}", f"r-{n}", f"a-{n}", {"text": str(n)}),
               "2026-01-01T00:00:00Z") for n in range(count)]
    rows = v1_rows_of(runtime_states(script))
    env = Target.opener("", "").env
    rng = random.Random(17)
    with workspace(context, IDS) as (cls, directory):
        pristine = directory / "v1.sqlite"
        write_v1_database(pristine, rows)
        calibration = directory / "calibration.sqlite"
        shutil.copyfile(pristine, calibration)
        # The interpreter's start counts too; the kill lands within the migration's window.
        start_up = _open_and_time([sys.executable, "-c", "import convledger.sqlite; print("
                                   "'opened', flush=True)"], env)
        whole = _open_and_time(_opening(cls, calibration), env)
        inside = kill = 0
        low, high = 0.1, 0.9  # the part of the calibrated window the next kill lands in
        kills = KILLS.get(context.profile, 3)
        # On a loaded machine the window moves: a kill that came too early or too late
        # narrows where the next one lands, until one lands inside (at most RETRIES more).
        while kill < kills or (inside == 0 and kill < kills + RETRIES):
            path = directory / f"killed-{kill}.sqlite"
            kill += 1
            shutil.copyfile(pristine, path)
            part = rng.uniform(low, high)
            delay = start_up + part * max(whole - start_up, 0.01)
            with subprocess.Popen(_opening(cls, path), stdout=subprocess.PIPE,
                                  env=env) as process:
                time.sleep(delay)
                os.kill(process.pid, signal.SIGKILL)
                status = process.wait()
                assert process.stdout is not None
                said = process.stdout.read().split()
            expect(status == -signal.SIGKILL, IDS, "the migrating process was not killed")
            if said == [b"opening"]:  # killed after the open began, before it returned
                inside += 1
            elif said:  # too late: the open had returned
                high = part
            else:  # too early: the open had not begun
                low = part
            try:
                store = cls(path)
            except Exception as error:
                expect(False, IDS, f"after a kill {delay:.2f} s into the migration of a version "
                       f"1 file, opening it failed: {error!r}")
            try:
                heads = [store.head(f"m-{n}") for n in range(count)]
                wrong = [n for n, head in enumerate(heads) if head != 1]
                expect(not wrong, IDS, f"after a kill {delay:.2f} s into the migration, "
                       f"{len(wrong)} of {count} conversations do not hold exactly their "
                       f"baseline (for example m-{wrong[:1]})")
                first = store.read("m-0").items
                expect([event.kind for event in first] == ["runtime/baseline"], IDS,
                       f"m-0 holds {[event.kind for event in first]} after the kill")
            finally:
                store.close()
        expect(inside > 0, IDS, f"none of {kill} kills landed inside the open that migrates the "
               "file: the check established nothing (a slower machine needs more conversations)")
