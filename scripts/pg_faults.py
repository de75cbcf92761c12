"""Faults under a write load on a throwaway PostgreSQL cluster: SIGKILLed writers, server crashes.

Never touches the machine's PostgreSQL server. The script makes its own
cluster: ``initdb`` into a temporary directory (as the OS user ``postgres``
through ``runuser`` when run as root), ``pg_ctl start`` on a free port of
127.0.0.1 with its socket in that directory, and removes all of it at the end
(also after a failure). Two phases, each on a fresh schema, each audited by
``convledger_bench.pg_load.audit``:

1. **kills**: writer processes (half on one hot conversation, half on one of
   their own) append batches; while they do, writers are killed with SIGKILL
   in the middle of their appends, each replaced by a new writer.
2. **restarts**: writers append while the server is crashed and restarted,
   ``pg_ctl restart -m immediate`` and ``pg_ctl stop -m immediate`` followed
   by ``pg_ctl start``; writers see ``unavailable`` (PGS-013), retry the same
   batch on the same handle, which reconnects, and go on.

Every acknowledged write must survive (at the seqs it was acknowledged with),
no batch may be stored in part, every conversation holds seqs 1..n, no
eventId twice, and every refusal is typed. Prints the figures; exits 1 when
anything is wrong. ``--small`` is the size ``.ci/run`` and ``pytest -m
pg_faults`` use. The PostgreSQL binaries are found by ``pg_config --bindir``,
else in ``/usr/lib/postgresql/*/bin``; ``CONVLEDGER_PG_BIN`` overrides.
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from convledger_bench.pg_load import Audit, Writer, audit, create, drop, new_schema


def _bindir() -> Path:
    if os.environ.get("CONVLEDGER_PG_BIN"):
        return Path(os.environ["CONVLEDGER_PG_BIN"])
    try:
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                               check=True).stdout.strip()
        if (Path(found) / "initdb").exists():
            return Path(found)
    except (OSError, subprocess.CalledProcessError):
        pass
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not candidates:
        raise SystemExit("pg_faults: no initdb found (set CONVLEDGER_PG_BIN)")
    return Path(candidates[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """A throwaway cluster in a temporary directory, run as ``postgres`` when we are root."""

    def __init__(self) -> None:
        self.bin = _bindir()
        self.root = Path(tempfile.mkdtemp(prefix="convledger-pgfaults-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
                        " -c max_connections=60 -c shared_buffers=16MB")
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")

    def _as_owner(self, *command: str) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *command]
        return list(command)

    def _pg_ctl(self, *arguments: str) -> None:
        subprocess.run(self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w",
                                      "-l", str(self.root / "server.log"), *arguments),
                       check=True, stdout=subprocess.DEVNULL)

    def init(self) -> None:
        """initdb (trust authentication, superuser ``postgres``) and start."""
        subprocess.run(self._as_owner(str(self.bin / "initdb"), "-D", str(self.data), "-U",
                                      "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"),
                       check=True, stdout=subprocess.DEVNULL)
        self.start()

    def start(self) -> None:
        self._pg_ctl("-o", self.options, "start")

    def restart_immediate(self) -> None:
        """A crash and a restart: no checkpoint, recovery from the WAL."""
        self._pg_ctl("-m", "immediate", "-o", self.options, "restart")

    def stop_immediate(self) -> None:
        self._pg_ctl("-m", "immediate", "stop")

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with suppress(subprocess.CalledProcessError):
                self.stop_immediate()
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    """A started cluster, removed afterwards whatever happened."""
    cluster = Cluster()
    try:
        cluster.init()
        yield cluster
    finally:
        cluster.remove()


def _wait_for_acks(writers: list[Writer], least: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(len(w.acknowledged()) >= least or w.process.poll() is not None for w in writers):
            return
        time.sleep(0.02)


def _start(dsn: str, schema: str, names: list[str], batches: int, size: int,
           logs: Path) -> list[Writer]:
    logs.mkdir(parents=True, exist_ok=True)
    started = [Writer.start(dsn, schema, name, "hot" if n % 2 else f"own-{name}", batches,
                            size, logs) for n, name in enumerate(names)]
    for writer in started:
        writer.ready()
    for writer in started:
        writer.go()
    return started


def phase_kills(cluster: Cluster, *, writers: int, kills: int, batches: int, size: int,
                logs: Path, rng: random.Random) -> tuple[Audit, int]:
    """Writers killed with SIGKILL while they append, each replaced; audited."""
    schema = new_schema(cluster.dsn)
    create(cluster.dsn, schema)
    try:
        running = _start(cluster.dsn, schema, [f"k{n}" for n in range(writers)], batches, size,
                         logs)
        everyone = list(running)
        done = 0
        for number in range(kills):
            _wait_for_acks(running, 2)
            alive = [w for w in running if w.process.poll() is None]
            if not alive:
                break
            victim = rng.choice(alive)
            time.sleep(rng.uniform(0.0, 0.05))  # a random moment inside its appends
            victim.process.send_signal(signal.SIGKILL)
            victim.wait()
            done += 1
            running.remove(victim)
            fresh = _start(cluster.dsn, schema, [f"r{number}"], batches, size, logs)
            running += fresh
            everyone += fresh
        for writer in running:
            writer.wait()
        return audit(cluster.dsn, schema, everyone), done
    finally:
        drop(cluster.dsn, schema)


def phase_restarts(cluster: Cluster, *, writers: int, restarts: int, batches: int, size: int,
                   logs: Path) -> tuple[Audit, int, int, list[int]]:
    """Writers appending through crashes of the server; audited. (audit, restarts, stops, exits)."""
    schema = new_schema(cluster.dsn)
    create(cluster.dsn, schema)
    try:
        running = _start(cluster.dsn, schema, [f"s{n}" for n in range(writers)], batches, size,
                         logs)
        immediate = stops = 0
        for number in range(restarts):
            _wait_for_acks(running, 2 + 3 * (number + 1))
            if number % 2 == 0:
                cluster.restart_immediate()
                immediate += 1
            else:
                cluster.stop_immediate()
                time.sleep(0.5)  # writers meet a server that is down, not only a crash
                cluster.start()
                stops += 1
        exits = [writer.wait() for writer in running]
        return audit(cluster.dsn, schema, running), immediate, stops, exits
    finally:
        drop(cluster.dsn, schema)


def _figures(name: str, found: Audit) -> str:
    return (f"{name}: acknowledged writes checked {found.acknowledged_batches} batches /"
            f" {found.acknowledged_events} events; lost {found.lost}; partial {found.partial};"
            f" seq gaps {found.gaps}; duplicated eventIds {found.duplicated_event_ids};"
            f" refusals {found.kinds}; ambiguous commits resolved {found.ambiguous_resolved};"
            f" untyped {found.untyped}; unexpected {found.unexpected};"
            f" events stored {found.events}")


def main() -> int:
    """Run both phases on a throwaway cluster; print the figures; 1 when anything is wrong."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the CI size")
    parser.add_argument("--seed", type=int, default=15)
    arguments = parser.parse_args()
    writers, kills, restarts, batches = (4, 3, 2, 30) if arguments.small else (8, 8, 6, 150)
    size = 3
    rng = random.Random(arguments.seed)
    started = time.perf_counter()
    with throwaway_cluster() as cluster, tempfile.TemporaryDirectory() as directory:
        logs = Path(directory)
        print(f"cluster: {cluster.bin} on port {cluster.port} in {cluster.root}", flush=True)
        killed, kill_count = phase_kills(cluster, writers=writers, kills=kills,
                                         batches=batches, size=size, logs=logs / "kills", rng=rng)
        crashed, immediate, stops, exits = phase_restarts(
            cluster, writers=writers, restarts=restarts, batches=batches, size=size,
            logs=logs / "restarts")
    print(f"writers per phase: {writers}; batches per writer: {batches} of {size} events")
    print(f"kills (SIGKILL while appending): {kill_count}")
    print(_figures("after the kills", killed))
    print(f"server crashes: {immediate} x restart -m immediate, {stops} x stop -m immediate"
          " + start")
    print(_figures("after the crashes", crashed))
    unavailable = crashed.kinds.get("unavailable", 0)
    recovered = sum(code == 0 for code in exits)
    print(f"writers that saw unavailable and finished: {recovered} of {len(exits)}"
          f" ({unavailable} unavailable refusals retried)")
    print(f"wall time: {time.perf_counter() - started:.1f} s")
    bad = (not killed.ok or not crashed.ok or kill_count != kills or not unavailable
           or recovered != len(exits)
           or crashed.acknowledged_batches + crashed.ambiguous_resolved != writers * batches)
    print("result: " + ("FAILED" if bad else "ok: nothing acknowledged lost, nothing partial"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
