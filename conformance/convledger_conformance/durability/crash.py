"""Kill a store's server process at random moments and check what it answers after (chapter DUR).

Theory of operation
-------------------
A :class:`~.target.Target` starts a server process on one location (a ``{dir}`` of
``--command`` substituted with a directory this module creates, WIR-040) and
opens the store kept there with ``openStore``. :func:`crash_run` runs rounds:
a thread drives a :class:`~.workload.Workload` (the round's seed chooses its
operations and the kill's delay), the timer sends SIGKILL to the server
(in turn: inside a large batch, inside a large import, at a random moment), the
next server process opens the location again and :func:`~.verify.verify`
checks every acknowledgement since the first round. That server then carries
the next round's workload, so a round costs one process start.

:func:`~.concurrency.concurrent_run` starts K servers on one location (or takes K
stores in process) and runs K clients at once on two conversations, recording
every call for :mod:`~.history` (DUR-010 .. DUR-013).

Every round first makes one write of each declared kind (and probes the
tombstone of each purge acknowledged before the last kill), so each round has
new acknowledged writes to check (a round with none fails DUR-008, DUR-015);
a timer round arms its kill only then. Before the first round one large batch
and one large import are acknowledged and timed, each after a small one that
warms the server up and after its twin: the same write with its last eventId
already stored, refused ``duplicate`` once the server decoded and checked it.
When the timed write changed a file under the location's directory, a kill
that cuts a large write follows the first change of a file there during the
write, within 30 ms (:class:`_Watch`: the store's first write to disk);
otherwise (a server database) it lands between the twin's duration and 95 %
of the write's (:func:`_aim`): in the write phase of a store that checks
before it writes, not in the decoding before it (``scripts/crash_landing.py``
measures where the kills land). A refusal or an ``internal`` reply anywhere
(calibration, rounds, hand-off) is a failed requirement of the report, never
an exception of the run (DUR-015). The seed
replays the workload and the kill delays; where exactly a kill
lands depends on the machine's timing, so a failure names the round, the
seed and the rule, and the run repeats it by its seed with high likelihood,
not certainty.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from convledger.errors import LedgerError
from convledger.interface import EveryOperation
from convledger_conformance.durability.target import NotServed, Target
from convledger_conformance.durability.verify import verify
from convledger_conformance.durability.workload import (
    Ledger,
    Workload,
    WorkloadFailed,
)
from convledger_conformance.wire.connection import WireConnection, WireError

ROUND_KINDS = ("batch", "import", "timer")
"""What each round's kill cuts, in turn: a large batch, a large import (each after some random
operations, in the write phase its calibration measured, :func:`_aim`), or anything (a random
moment after the round's first writes)."""
CRASH_IDS = ("DUR-001", "DUR-002", "DUR-003", "DUR-004", "DUR-005", "DUR-006", "DUR-007",
             "DUR-008", "DUR-014", "DUR-015", "DUR-016", "WIR-040", "WIR-042")
"""What the kill rounds judge."""
NEEDS = {"DUR-004": ("transitions",), "DUR-006": ("projections",), "DUR-007": ("spills", "purge")}
"""DUR-016: the ids reported ``not_applicable`` unless the server declares one of these."""


@attrs.define
class Failure:
    """A broken rule in one round."""

    rule: str
    round: int
    seed: int
    message: str
    precondition: bool = False
    """The check of ``rule`` could not be made (DUR-015): a write the run needed was refused,
    failed or never acknowledged, or a kill did not land; it fails DUR-015 as well."""

    def render(self) -> str:
        return f"FAILED {self.rule} round {self.round} seed {self.seed}: {self.message}"


@attrs.define
class CrashResult:
    """What a crash run did and found."""

    seed: int
    rounds: int = 0
    kills: int = 0
    import_kills: int = 0
    batch_kills: int = 0
    acknowledged: int = 0
    in_flight: int = 0
    attempts: int = 0
    failures: list[Failure] = attrs.field(factory=list)
    not_applicable: str = ""
    seconds: float = 0.0
    cleanup_error: str = ""
    declared: frozenset[str] = frozenset()
    """The capabilities the server declared (DUR-016: the ids of the others are
    ``not_applicable``)."""
    round_acknowledged: list[int] = attrs.field(factory=list)
    """The writes each round's workload had acknowledged before its kill (DUR-015)."""
    aims: dict[str, tuple[float, float]] = attrs.field(factory=dict)
    """Per large write (``batch``, ``import``): the seconds its refused twin and the write
    itself took, which place the kills that cut one."""
    watched: set[str] = attrs.field(factory=set)
    """The large writes whose calibration changed a file of the location: their kills follow
    the first change of a file (the store's first write to disk), not the clock alone."""


def _stamp(times: list[float]) -> None:
    times.append(time.monotonic())


def kill(connection: WireConnection) -> None:
    """SIGKILL the server (it may have died already)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(connection.pid, signal.SIGKILL)


def _aim(twin: float, full: float) -> tuple[float, float]:
    """Where a kill that cuts a large write lands, in seconds after it was sent: from the moment
    its refused twin was answered (decoded and checked, nothing written) to the end of the
    write, so the kill falls in the write phase of a store that checks before it writes."""
    low = min(max(twin, 0.05 * full), 0.8 * full)
    return low, max(low, 0.95 * full)


def _files(directory: Path) -> dict[str, tuple[int, int]]:
    """The size and modification time of every file under ``directory``."""
    found = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with contextlib.suppress(OSError):
                status = os.stat(path)
                found[path] = (status.st_size, status.st_mtime_ns)
    return found


class _Watch(threading.Thread):
    """Kill the server ``delay`` after a file under ``directory`` changed (its first write to
    disk), or at ``deadline`` when none did; nothing once ``stop`` is set."""

    def __init__(self, directory: Path, delay: float, deadline: float,
                 server: WireConnection, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.directory, self.delay, self.deadline = directory, delay, deadline
        self.server, self.stop = server, stop
        self.before = _files(directory)

    def run(self) -> None:
        end = time.monotonic() + self.deadline
        while not self.stop.is_set() and time.monotonic() < end:
            if _files(self.directory) != self.before:
                time.sleep(self.delay)
                break
            time.sleep(0.0005)
        if not self.stop.is_set():
            kill(self.server)

    def cancel(self) -> None:
        self.stop.set()


def _calibrate(store: EveryOperation, ledger: Ledger, seed: int, import_events: int,
               result: CrashResult, directory: Path) -> dict[str, tuple[float, float]] | None:
    """Per large write, the seconds its refused twin and the write took, and whether it
    changed a file under ``directory`` (``result.watched``); None when either could not be
    made (a failure of DUR-002 or DUR-005 is recorded, DUR-015)."""
    calibration = Workload(store, ledger, random.Random(seed), 0, import_events=import_events)
    aims = {}
    for kind, warm, rule in (("batch", calibration.append, "DUR-002"),
                             ("import", calibration.small_import, "DUR-005")):
        try:
            warm()  # warms the server's path up, untimed
            taken = ledger.attempts[-1].event_ids[0]
            twin = calibration.twin(kind, taken)
            sent: list[float] = []  # timed from the moment it is sent, as the kills are
            before = _files(directory)
            calibration.large(kind, functools.partial(_stamp, sent))
        except WorkloadFailed as error:
            result.failures.append(Failure(rule, 0, seed, (
                f"the timed large {kind} could not be made, so no kill is aimed into one: "
                f"before the first kill the server failed {error}"), True))
            return None
        full = time.monotonic() - sent[0]
        # A twin acknowledged is not this check's to judge: the verification finds what it
        # broke (a repeated eventId, DUR-003, or a write never stored, DUR-001).
        wrong = [a for a in ledger.of_round(0)[-3:] if a.status != "acked" and not a.expect]
        if wrong:
            result.failures.append(Failure(rule, 0, seed, (
                f"the timed large {kind} could not be made, so no kill is aimed into one: "
                + "; ".join(f"{a.op} of {a.conversation!r} {a.status} ({a.result})"
                            for a in wrong)), True))
            return None
        aims[kind] = (twin, full)
        result.aims[kind] = (round(twin, 4), round(full, 4))
        if _files(directory) != before:  # the store writes files there: watch them
            result.watched.add(kind)
    return aims


def _judge_round(ledger: Ledger, round_: int, seed: int, failed: str) -> tuple[int, list[Failure]]:
    """The writes the round's store acknowledged, and the failures of its workload (DUR-015)."""
    rule = "DUR-001" if round_ == 1 else "DUR-008"
    attempts = ledger.of_round(round_)
    acked = sum(a.status == "acked" and not a.expect for a in attempts)
    refused = [a for a in attempts if a.status == "refused" and a.result != a.expect]
    failures = [Failure(rule, round_, seed, f"the server failed {failed}", True)] if failed else []
    failures.extend(Failure("DUR-007", round_, seed, (
        f"an append to {a.conversation!r}, whose purge was acknowledged before the kill, was "
        "acknowledged: its tombstone is gone")) for a in attempts
        if a.expect == "purged" and a.status == "acked")
    if refused:
        failures.append(Failure(rule, round_, seed, (
            f"{len(refused)} valid writes of the round were refused, first {refused[0].op} of "
            f"{refused[0].conversation!r} with {refused[0].result}"), True))
    if not acked:
        failures.append(Failure(rule, round_, seed, (
            "the store acknowledged no new write in this round "
            f"({'after it was started again' if round_ > 1 else 'before the first kill'}): "
            "the round checks nothing new, so it counts as failed"), True))
    return acked, failures


def crash_run(target: Target, rounds: int, seed: int, *, max_delay: float = 1.2,
              import_events: int = 3000, progress: Callable[[str], None] | None = None,
              ) -> CrashResult:
    """``rounds`` kills of the server, each followed by a restart and a verification."""
    result = CrashResult(seed=seed)
    began = time.monotonic()
    directory = Path(tempfile.mkdtemp(prefix="convledger-crash-"))
    ledger = Ledger()
    connection: WireConnection | None = None
    try:
        try:
            connection, store = target.start(directory)
        except NotServed as refusal:
            result.not_applicable = f"openStore not served: {refusal}"
            return result
        except (WireError, LedgerError) as error:
            result.failures.append(Failure("WIR-040", 0, seed, f"openStore failed: {error!r}"))
            return result
        result.declared = frozenset(c.value for c in store.capabilities)
        # One acknowledged large batch and import first, each after its refused twin: their
        # durations place the kills that cut one (DUR-015).
        aims = _calibrate(store, ledger, seed, import_events, result, directory)
        if aims is None:
            return result
        for round_ in range(1, rounds + 1):
            rng = random.Random(seed * 1_000_003 + round_)
            cut = ROUND_KINDS[(round_ - 1) % len(ROUND_KINDS)]
            share = rng.random()  # where in its window the kill lands (replayed by the seed)
            delays = [rng.uniform(0.05, max_delay)] if cut == "timer" else []
            stop = threading.Event()
            timers: list[threading.Timer | _Watch] = []
            workload = Workload(store, ledger, rng, round_, import_events=import_events)
            failed: list[str] = []

            def arm(kind: str = cut, server: WireConnection = connection,
                    armed: list[threading.Timer | _Watch] = timers,
                    chosen: list[float] = delays, at: float = share,
                    halt: threading.Event = stop) -> None:
                """Start the kill, just before a large write is sent: soon after a file of the
                location changes (the write phase began) when its calibration changed one,
                else ``at`` of the way through the window its calibration measured
                (:func:`_aim`); a timer round's after its delay."""
                timer: threading.Timer | _Watch
                if kind in result.watched:
                    twin, full = aims[kind]
                    chosen.append(at * min(0.03, 0.25 * max(full - twin, 0.002)))
                    timer = _Watch(directory, chosen[-1], 3 * full + 1.0, server, halt)
                else:
                    if kind != "timer":
                        low, high = _aim(*aims[kind])
                        chosen.append(low + at * (high - low))
                    timer = threading.Timer(chosen[-1], kill, (server,))
                armed.append(timer)
                timer.start()

            def drive(work: Workload = workload, halt: threading.Event = stop, kind: str = cut,
                      failure: list[str] = failed, start: Callable[[], None] = arm) -> None:
                try:
                    if kind == "timer":
                        work.prelude()  # writes acknowledged before the kill (DUR-015)
                        start()
                    work.run(100_000, halt, None if kind == "timer" else (kind, start))
                except WorkloadFailed as error:
                    failure.append(f"{error}")  # for the report only
                except (WireError, OSError):
                    return  # the kill cut the call off: its attempt stays pending

            thread = threading.Thread(target=drive, daemon=True)
            thread.start()
            thread.join(timeout=max_delay + 120)
            stop.set()
            for timer in timers:
                timer.cancel()
            if failed:
                kill(connection)  # the server failed: end it, then judge what it kept
            status = connection.exit_status()
            connection.close()
            thread.join(timeout=30)
            acked, failures = _judge_round(ledger, round_, seed, failed[0] if failed else "")
            result.round_acknowledged.append(acked)
            result.failures.extend(failures)
            landed = status == -signal.SIGKILL
            if not landed:
                result.failures.append(Failure("DUR-008", round_, seed, (
                    f"the round's kill did not land (server exit status {status}): the round "
                    "checks nothing, so it counts as failed"), True))
            else:
                result.kills += 1
                result.import_kills += cut == "import"
                result.batch_kills += cut == "batch"
            try:  # one restart after every round, whether its kill landed or not
                connection, store = target.start(directory)
            except (WireError, LedgerError, NotServed) as error:
                when = "after the kill" if landed else "again"
                result.failures.append(Failure("DUR-008", round_, seed,
                                               f"the store did not open {when}: {error!r}"))
                return result
            if not landed:
                continue
            verified = verify(store, ledger)
            result.rounds += 1
            result.acknowledged += verified.acknowledged
            result.in_flight += verified.in_flight
            result.failures.extend(Failure(v.rule, round_, seed, v.message)
                                   for v in verified.violations)
            if progress is not None:
                delay = delays[-1] if delays else 0.0
                when = (f"{delay:.3f} s after the first file write of a large {cut}"
                        if cut in result.watched else f"after {delay:.2f} s"
                        + ("" if cut == "timer" else " into a large " + cut))
                progress(f"round {round_}/{rounds}: killed {when}, "
                         f"{acked} new acknowledged writes, "
                         f"{verified.acknowledged} acknowledged writes checked, "
                         f"{len(verified.violations)} violations")
            if verified.violations or failures or failed:
                break  # later rounds would report the same loss again
        result.attempts = len(ledger.attempts)
        connection.close()
        return result
    finally:
        if connection is not None:
            connection.close()
        result.cleanup_error = target.clean_up(directory)
        result.seconds = time.monotonic() - began
        shutil.rmtree(directory, ignore_errors=True)

