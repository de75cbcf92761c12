"""Kill a store's server process at random moments and check what it answers after (chapter DUR).

Theory of operation
-------------------
A :class:`Target` starts a server process on one location (a ``{dir}`` of
``--command`` substituted with a directory this module creates, WIR-040) and
opens the store kept there with ``openStore``. :func:`crash_run` runs rounds:
a thread drives a :class:`~.workload.Workload` (the round's seed chooses its
operations and the kill's delay), the timer sends SIGKILL to the server
(in turn: inside a large batch, inside a large import, at a random moment), the
next server process opens the location again and :func:`~.verify.verify`
checks every acknowledgement since the first round. That server then carries
the next round's workload, so a round costs one process start.

:func:`concurrent_run` starts K servers on one location (or takes K stores in
process) and runs K clients at once on two conversations, recording every
call for :mod:`~.history` (DUR-010 .. DUR-013).

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
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from convledger.errors import ConflictError, LedgerError
from convledger.interface import EveryOperation
from convledger_conformance.durability.handoff import hand_off
from convledger_conformance.durability.history import DEFAULT_BOUND, Call, Verdict, check_history
from convledger_conformance.durability.verify import Violation, read_all, verify
from convledger_conformance.durability.workload import (
    Ledger,
    Workload,
    WorkloadFailed,
    state_draft,
)
from convledger_conformance.wire.connection import WireConnection, WireError
from convledger_conformance.wire.store import WireStore

ROUND_KINDS = ("batch", "import", "timer")
"""What each round's kill cuts, in turn: a large batch, a large import (each after some random
operations, in the write phase its calibration measured, :func:`_aim`), or anything (a random
moment after the round's first writes)."""
CRASH_IDS = ("DUR-001", "DUR-002", "DUR-003", "DUR-004", "DUR-005", "DUR-006", "DUR-007",
             "DUR-008", "DUR-014", "DUR-015", "DUR-016", "WIR-040", "WIR-042")
"""What the kill rounds judge."""
NEEDS = {"DUR-004": ("transitions",), "DUR-006": ("projections",), "DUR-007": ("spills", "purge")}
"""DUR-016: the ids reported ``not_applicable`` unless the server declares one of these."""
CONCURRENT_IDS = ("DUR-010", "DUR-011", "DUR-012", "DUR-013", "WIR-041")
"""What the concurrent runs judge."""


class NotServed(Exception):
    """The server refused ``openStore`` with ``not_supported``: chapter DUR does not apply."""


@attrs.frozen
class Target:
    """How to start one server process on a location and open the store kept there."""

    argv: tuple[str, ...]
    """The command; every ``{dir}`` becomes the location's directory."""
    location: str | None = None
    """What ``openStore`` asks for; None: the directory itself."""
    env: dict[str, str] | None = None
    timeout: float = 60.0
    cleanup: tuple[str, ...] = ()
    """A command run once per location after its last server ended (every ``{dir}``
    substituted), before the directory is removed: it drops what the store keeps
    outside the directory (a server database's schema). Empty: none."""

    @classmethod
    def command(cls, command: str, timeout: float = 60.0, cleanup: str = "") -> Target:
        return cls(tuple(shlex.split(command)), timeout=timeout,
                   cleanup=tuple(shlex.split(cleanup)))

    def clean_up(self, directory: Path) -> str:
        """Run the cleanup command on ``directory``: "" when it succeeded or there is none."""
        if not self.cleanup:
            return ""
        argv = [part.replace("{dir}", str(directory)) for part in self.cleanup]
        try:
            done = subprocess.run(argv, env=self.env, capture_output=True, text=True,
                                  timeout=max(self.timeout, 60.0), check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"cleanup {shlex.join(argv)}: {error}"
        if done.returncode != 0:
            return (f"cleanup {shlex.join(argv)} exited {done.returncode}: "
                    f"{done.stderr.strip()[-500:]}")
        return ""

    @classmethod
    def opener(cls, opener: str, location: str) -> Target:
        """The reference server on an in-process store's locator (``--opener``)."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        argv = (sys.executable, "-m", "convledger", "serve-wire", "--opener", opener)
        return cls(argv, location, env)

    def start(self, directory: Path) -> tuple[WireConnection, EveryOperation]:
        argv = [part.replace("{dir}", str(directory)) for part in self.argv]
        connection = WireConnection(argv, timeout=self.timeout, env=self.env)
        if "openStore" not in (connection.hello.get("operations") or ()):
            connection.close()
            raise NotServed("the server's hello does not list openStore (WIR-040)")
        try:
            created = connection.request("openStore", {"location": self.location or str(directory)})
        except LedgerError as refusal:
            connection.close()
            if refusal.kind == "not_supported":
                raise NotServed(f"openStore refused with {refusal.kind}") from None
            raise
        return connection, WireStore(connection, created)


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


@attrs.define
class ConcurrentResult:
    """What a concurrent run recorded and what the checker said."""

    clients: int
    calls: list[Call] = attrs.field(factory=list)
    verdicts: list[Verdict] = attrs.field(factory=list)
    failures: list[Violation] = attrs.field(factory=list)
    checker_seconds: float = 0.0
    not_applicable: str = ""
    cleanup_error: str = ""

    @property
    def longest(self) -> int:
        return max((verdict.calls for verdict in self.verdicts), default=0)


CONCURRENT_CONVERSATIONS = ("con-x", "con-y")


def client_loop(store: EveryOperation, client: int, steps: int, seed: int,
                calls: list[Call], failures: list[Violation], lock: threading.Lock,
                conversations: tuple[str, ...] = CONCURRENT_CONVERSATIONS) -> None:
    """One client's calls, each recorded with its invocation and completion (DUR-010, DUR-012)."""
    rng = random.Random(seed * 7919 + client)
    seen: dict[str, int] = {}
    for step in range(steps):
        conversation = rng.choice(conversations)
        op = rng.choices(("append", "head", "read"), (5, 2, 1))[0]
        ids: tuple[str, ...] = ()
        expected = None
        invoked = time.monotonic()
        try:
            if op == "append":
                size = rng.choice((1, 1, 2, 3))
                ids = tuple(f"{conversation}-c{client}-{step}-{n}" for n in range(size))
                if rng.random() < 0.5:
                    expected = seen.get(conversation, 0)
                placed = store.append(conversation, [state_draft(i, i) for i in ids],
                                      expected_head=expected)
                value: Any = tuple(envelope.seq for envelope in placed)
                seen[conversation] = value[-1]
            elif op == "head":
                value = store.head(conversation)
                seen[conversation] = value
            else:
                page = store.read(conversation, limit=1000)
                value = tuple(envelope.event_id for envelope in page.items)
                if page.next_seq is not None:
                    raise AssertionError("a history read must fit in one page")
            outcome = "ok"
        except ConflictError as refusal:
            outcome, value = "conflict", refusal.actual
            if refusal.actual is not None:
                seen[conversation] = refusal.actual
        except LedgerError as refusal:
            outcome, value = refusal.kind, None
            if refusal.kind == "internal":
                with lock:
                    failures.append(Violation("DUR-012", f"client {client} {op}: {refusal!r}"))
                return
        except Exception as error:  # a lost server, a bug: never a refusal (DUR-012)
            with lock:
                failures.append(Violation("DUR-012", f"client {client} {op} failed: {error!r}"))
            return
        completed = time.monotonic()
        with lock:
            calls.append(Call(client, conversation, op, invoked, completed, ids, expected,
                              outcome, value))


def run_clients(stores: Sequence[EveryOperation], steps: int, seed: int,
                bound: int = DEFAULT_BOUND, prefix: str = "") -> ConcurrentResult:
    """Run one client per store at once on new conversations, then check history and ledgers.

    The conversations (``prefix`` + :data:`CONCURRENT_CONVERSATIONS`) must be new.
    """
    conversations = tuple(prefix + name for name in CONCURRENT_CONVERSATIONS)
    result = ConcurrentResult(clients=len(stores))
    lock = threading.Lock()
    barrier = threading.Barrier(len(stores))

    def client(index: int) -> None:
        barrier.wait()
        client_loop(stores[index], index, steps, seed, result.calls, result.failures, lock,
                    conversations)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    if not result.failures:  # then every client sees every other's append (handoff.py)
        try:
            hand_off(stores, conversations[0], result.calls)
        except Exception as error:  # a refusal, ``internal``, a lost server (DUR-012, DUR-015)
            result.failures.append(Violation("DUR-012", (
                f"the hand-off failed, so DUR-010 is not established: {error!r}")))
    _check_ledgers(stores[0], result, conversations)
    began = time.monotonic()
    result.verdicts = check_history(result.calls, bound)
    result.checker_seconds = time.monotonic() - began
    for verdict in result.verdicts:
        if verdict.status == "not_linearizable":
            result.failures.append(
                Violation("DUR-010", f"{verdict.conversation!r}: {verdict.detail}"))
    refusals = {call.outcome for call in result.calls} - {"ok", "conflict"}
    if refusals:
        result.failures.append(Violation("DUR-012", f"unexpected refusals {sorted(refusals)}"))
    return result


def _check_ledgers(store: EveryOperation, result: ConcurrentResult,
                   conversations: tuple[str, ...]) -> None:
    """DUR-011: seqs 1..n and no eventId twice, read after every client finished."""
    seen: set[str] = set()
    for conversation in conversations:
        try:
            events = read_all(store, conversation)
        except (LedgerError, WireError) as error:
            result.failures.append(Violation("DUR-011", f"reading {conversation!r}: {error!r}"))
            continue
        if [e.seq for e in events] != list(range(1, len(events) + 1)):
            result.failures.append(Violation("DUR-011", f"{conversation!r} seqs are not 1..n"))
        for event in events:
            if event.event_id in seen:
                result.failures.append(Violation("DUR-011", f"eventId {event.event_id!r} twice"))
            seen.add(event.event_id)


def concurrent_run(target: Target, clients: int, steps: int, seed: int,
                   bound: int = DEFAULT_BOUND, prefix: str = "") -> ConcurrentResult:
    """K server processes on one location, one client each."""
    directory = Path(tempfile.mkdtemp(prefix="convledger-clients-"))
    connections: list[WireConnection] = []
    result = ConcurrentResult(clients)
    try:
        stores: list[EveryOperation] = []
        for _ in range(clients):
            try:
                connection, store = target.start(directory)
            except NotServed as refusal:
                result.not_applicable = f"openStore refused: {refusal}"
                return result
            except LedgerError as refusal:  # WIR-041: a store that cannot be shared says so
                result.not_applicable = (
                    f"a second openStore on one location was refused: {refusal.kind}")
                return result
            except WireError as error:  # the server failed to start or to open: no traceback
                result.failures.append(Violation("WIR-041", f"server {len(stores) + 1} of "
                                                 f"{clients} did not open the store: {error!r}"))
                return result
            connections.append(connection)
            stores.append(store)
        result = run_clients(stores, steps, seed, bound, prefix)
        return result
    finally:
        for connection in connections:
            connection.close()
        result.cleanup_error = target.clean_up(directory)
        shutil.rmtree(directory, ignore_errors=True)
