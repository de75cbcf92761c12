"""PostgreSQL failover under a write load: a synchronous standby promoted after SIGKILLs.

Never touches the machine's PostgreSQL server. The script makes two throwaway
clusters on free ports of 127.0.0.1, each with its socket in a temporary
directory (run as the OS user ``postgres`` through ``runuser`` when run as
root, like ``scripts/pg_faults.py``): a primary (``initdb``,
``synchronous_standby_names = '*'``, ``synchronous_commit = on``) and a
standby (``pg_basebackup -R``) that streams from it synchronously. Writer
processes append through the store with the multi-host DSN
``postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/postgres?target_session_attrs=read-write``
(half on one hot conversation, appending without an expected head, half each
on its own, appending with one). Then, round after round:

1. wait until every writer has had batches acknowledged since the last
   promotion (the new primary takes writes, DUR-008);
2. SIGKILL the primary's postmaster and every process of it at a random
   moment of the writers' commits;
3. promote the standby (``pg_ctl promote``); the writers' next calls reconnect
   to it through the multi-host DSN (PGS-070, PGS-071);
4. (before the kill) stall the standby's WAL receiver for 0.2 .. 0.5 s
   (SIGSTOP, SIGCONT after the kill), so that commits are waiting for it
   when the primary dies; then
5. make the old primary's data directory a standby of the new primary again
   (``pg_rewind -R``, or a fresh ``pg_basebackup -R`` when the rewind fails)
   and wait until it streams synchronously.

A writer whose append is refused ``unavailable`` does not know whether it
committed (ERR-013): it settles the batch with the procedure of chapter DUR
(``convledger.settle.settle_append``, DUR-017 .. DUR-020) until it gets an
answer, and logs whether the batch had committed or was appended by the
settling call. At the end the store is read through the new primary and
checked against every writer's log: every acknowledged batch (acknowledged by
``append`` or by settling) is stored whole at the seqs it was acknowledged
with (DUR-001), no batch is stored in part (DUR-002), every conversation holds
seqs 1..n and no eventId twice (DUR-003, DUR-011), every indeterminate outcome
was settled, no batch is stored that no writer holds as acknowledged, and
every refusal is typed. Prints the figures; exits 1 when anything is wrong.

``--command "CMD ... {dsn} ..."`` checks another store instead of the
reference in process: each writer starts the command with ``{dsn}`` replaced
by the multi-host DSN and ``{dir}`` by one shared directory, speaks the wire
protocol to it (chapter WIR) and opens the store with ``openStore
{location: DIR}`` (WIR-040); the final read goes through one more server.
``--small`` (3 kills, the size of ``.ci/run``) and the default deep run (20
kills). Both clusters are removed at the end, also after a failure or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pg_faults import _bindir, _free_port

BATCH = 3
"""Events per batch."""
SETTLE_PAUSE = 0.2
"""Seconds a writer waits between two attempts to settle an indeterminate batch."""
SETTLE_LIMIT = 300.0
"""Seconds a writer tries to settle one batch before it reports it unsettled."""
PROGRESS_TIMEOUT = 120.0
"""Seconds to wait for writes acknowledged after a promotion before the round fails."""
SETTINGS = """
listen_addresses = '127.0.0.1'
max_connections = 60
shared_buffers = 16MB
wal_level = replica
max_wal_senders = 6
wal_keep_size = 256MB
wal_log_hints = on
hot_standby = on
synchronous_commit = {commit}
synchronous_standby_names = '*'
"""
"""Both nodes' settings (``pg_basebackup`` copies them to the standby): every commit waits
until a standby has flushed its WAL; ``wal_log_hints`` lets ``pg_rewind`` work."""


# -- the two nodes ----------------------------------------------------------------------------

class Node:
    """One throwaway cluster directory and the port it serves on."""

    def __init__(self, root: Path, name: str) -> None:
        self.bin = _bindir()
        self.root = root
        self.name = name
        self.data = root / name
        self.port = _free_port()
        self.log = root / f"{name}.log"
        self.synchronous_commit = "on"

    @property
    def conninfo(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def run(self, program: str, *arguments: str) -> None:
        command = [str(self.bin / program), *arguments]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"{program} {' '.join(arguments)} exited {done.returncode}: "
                               f"{done.stderr.strip()[-800:]}")

    def init_primary(self) -> None:
        self.run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                 "--no-sync")
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(SETTINGS.format(commit=self.synchronous_commit))
        with (self.data / "pg_hba.conf").open("a", encoding="utf-8") as hba:
            hba.write("host replication postgres 127.0.0.1/32 trust\n")
        self.start()

    def base_backup(self, source: Node) -> None:
        """A fresh copy of ``source`` that streams from it (``-R``: standby.signal, conninfo)."""
        shutil.rmtree(self.data, ignore_errors=True)
        self.run("pg_basebackup", "-D", str(self.data), "-d", source.conninfo, "-R",
                 "-X", "stream", "--checkpoint=fast", "--no-sync")

    def rewind(self, source: Node) -> None:
        """The old primary's directory, rewound to the new primary's timeline, as its standby."""
        self.run("pg_rewind", "-D", str(self.data), "--source-server", source.conninfo, "-R",
                 "--no-sync")

    def start(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-w", "-t", "120", "-l", str(self.log), "-o",
                 f"-p {self.port} -k {self.root}", "start")

    def promote(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-w", "-t", "120", "promote")

    def postmaster(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill(self) -> int:
        """SIGKILL the postmaster and every child of it at once (a host lost); how many."""
        main = self.postmaster()
        if main is None:
            return 0
        victims = [main, *_children(main)]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(pid) for pid in victims):
            time.sleep(0.05)
        # A killed postmaster may stay a zombie until its reaper runs, and the next postgres
        # would take its pid file and its socket's lock file for a running server: every
        # process of it is dead, so remove them.
        for stale in (self.data / "postmaster.pid", self.root / f".s.PGSQL.{self.port}.lock",
                      self.root / f".s.PGSQL.{self.port}"):
            with contextlib.suppress(OSError):
                stale.unlink()
        return len(victims)

    def receiver(self) -> int | None:
        """The pid of this standby's WAL receiver, if it runs."""
        main = self.postmaster()
        for pid in _children(main) if main else []:
            with contextlib.suppress(OSError):
                if b"walreceiver" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return pid
        return None

    def stop(self) -> None:
        if self.postmaster() is not None and _alive(self.postmaster() or 0):
            with contextlib.suppress(RuntimeError):
                self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.conninfo, connect_timeout=10, autocommit=True) as connection:
            connection.execute(statement)

    def sync_standbys(self) -> int:
        """Standbys streaming synchronously from this node (0 when it cannot be asked)."""
        import psycopg

        try:
            with psycopg.connect(self.conninfo, connect_timeout=3, autocommit=True) as connection:
                row = connection.execute(
                    "SELECT count(*) FROM pg_stat_replication"
                    " WHERE state = 'streaming' AND sync_state = 'sync'").fetchone()
        except psycopg.Error:
            return 0
        return int(row[0]) if row else 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_sync(primary: Node, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while primary.sync_standbys() < 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no synchronous standby streams from {primary.name}")
        time.sleep(0.1)


@contextlib.contextmanager
def replicated_pair(synchronous_commit: str = "on") -> Iterator[tuple[Node, Node, Path]]:
    """A primary and its synchronous standby, both removed afterwards whatever happened."""
    root = Path(tempfile.mkdtemp(prefix="convledger-pgfailover-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    nodes = [Node(root, "a"), Node(root, "b")]
    for node in nodes:
        node.synchronous_commit = synchronous_commit
    try:
        primary, standby = nodes
        primary.init_primary()
        standby.base_backup(primary)
        standby.start()
        _wait_sync(primary)
        yield primary, standby, root
    finally:
        for node in nodes:
            node.kill()
        shutil.rmtree(root, ignore_errors=True)


def multi_host_dsn(nodes: list[Node]) -> str:
    """PGS-070: every node, the read-write one chosen at each connection."""
    hosts = ",".join(f"127.0.0.1:{node.port}" for node in nodes)
    return f"postgresql://postgres@{hosts}/postgres?target_session_attrs=read-write"


# -- the writers ------------------------------------------------------------------------------

def _drafts(name: str, batch: int) -> list[Any]:
    from convledger.envelope import EventDraft

    return [EventDraft(event_id=f"{name}-b{batch}-{i}", kind="state/set",
                       occurred_at="2024-01-01T00:00:00Z",
                       payload={"name": "n", "version": 1, "value": batch, "actor": name})
            for i in range(BATCH)]


def _open(dsn: str, schema: str, command: str, location: str) -> tuple[Any, Any]:
    """The store a writer or the audit uses: (store, closer)."""
    if command:
        from convledger_conformance.durability.target import Target

        target = Target.command(command.replace("{dsn}", dsn), timeout=300.0)
        connection, store = target.start(Path(location))
        return store, connection.close
    from convledger.postgres import PostgresStore

    store = PostgresStore(dsn, schema=schema, lock_timeout=120.0, connect_timeout=3.0)
    return store, store.close


def writer_main(arguments: list[str]) -> None:
    """One writer process: append batches until the stop file exists, settling every unknown."""
    from convledger.errors import LedgerError
    from convledger.settle import settle_append

    dsn, schema, command, location, name, conversation, mode, stop, log = arguments
    with_head = mode == "expected"
    store, close = _open(dsn, schema, command, location)
    print("ready", flush=True)
    last = 0  # the last seq of this writer's last acknowledged batch: its next lands after it
    with Path(log).open("a", encoding="utf-8") as out:
        def note(line: dict[str, Any]) -> None:
            out.write(json.dumps(line) + "\n")
            out.flush()

        batch = 0
        while not Path(stop).exists():
            drafts = _drafts(name, batch)
            expected = last if with_head else None
            try:
                placed = store.append(conversation, drafts, expected_head=expected)
                note({"batch": batch, "seqs": [e.seq for e in placed], "how": "ack"})
            except LedgerError as refusal:
                note({"batch": batch, "kind": refusal.kind})
                if refusal.kind != "unavailable":
                    batch += 1
                    continue
                # ERR-013: the outcome is unknown; DUR-017 .. DUR-020 settle it.
                note({"batch": batch, "indeterminate": True})
                deadline = time.monotonic() + SETTLE_LIMIT
                placed = None
                while placed is None and time.monotonic() < deadline:
                    time.sleep(SETTLE_PAUSE)
                    try:
                        settled = settle_append(store, conversation, drafts,
                                                expected_head=expected, from_seq=last + 1)
                    except LedgerError as again:
                        note({"batch": batch, "kind": again.kind, "settling": True})
                        if again.kind != "unavailable":
                            break
                        continue
                    placed = settled.envelopes
                    note({"batch": batch, "seqs": [e.seq for e in placed],
                          "how": settled.outcome})
                if placed is None:
                    note({"batch": batch, "unsettled": True})
                    batch += 1
                    continue
            except Exception as error:  # an untyped error is a defect (ERR-006)
                note({"batch": batch, "untyped": f"{type(error).__name__}: {error}"})
                batch += 1
                continue
            last = placed[-1].seq
            batch += 1
        note({"done": True, "batches": batch})
    close()


@attrs.define
class Writer:
    name: str
    conversation: str
    log: Path
    process: subprocess.Popen[str]

    def lines(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        found = []
        for text in self.log.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                found.append(json.loads(text))
        return found

    def acknowledged(self) -> dict[int, list[int]]:
        return {line["batch"]: line["seqs"] for line in self.lines() if "seqs" in line}


def start_writers(count: int, dsn: str, schema: str, command: str, location: Path,
                  stop: Path, logs: Path) -> list[Writer]:
    writers = []
    for n in range(count):
        name = f"w{n}"
        hot = n % 2 == 0
        conversation = "hot" if hot else f"own-{name}"
        log = logs / f"{name}.jsonl"
        argv = [sys.executable, __file__, "--writer", dsn, schema, command, str(location), name,
                conversation, "plain" if hot else "expected", str(stop), str(log)]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   text=True)
        writers.append(Writer(name, conversation, log, process))
    for writer in writers:
        assert writer.process.stdout is not None
        if writer.process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"writer {writer.name} did not start")
    return writers


def _progress(writers: list[Writer], since: dict[str, int], least: int) -> bool:
    """Wait until every writer has ``least`` more acknowledged batches than ``since``; False
    when one has not within :data:`PROGRESS_TIMEOUT` (the run then stops and is audited)."""
    deadline = time.monotonic() + PROGRESS_TIMEOUT
    while time.monotonic() < deadline:
        if all(len(w.acknowledged()) >= since.get(w.name, 0) + least for w in writers):
            return True
        if any(w.process.poll() is not None for w in writers):
            raise RuntimeError("a writer ended before the run did")
        time.sleep(0.05)
    stuck = [w.name for w in writers if len(w.acknowledged()) < since.get(w.name, 0) + least]
    print(f"FAILED DUR-008: writers {stuck} had nothing acknowledged within"
          f" {PROGRESS_TIMEOUT:.0f} s after the last promotion", flush=True)
    return False


# -- the audit --------------------------------------------------------------------------------

@attrs.frozen
class Audit:
    events: int
    acknowledged_batches: int
    acknowledged_events: int
    indeterminate: int
    settled_committed: int
    settled_appended: int
    unsettled: int
    lost: int
    partial: int
    gaps: int
    duplicated: int
    unacknowledged_stored: int
    kinds: dict[str, int]
    untyped: int

    @property
    def ok(self) -> bool:
        return not (self.lost or self.partial or self.gaps or self.duplicated or self.unsettled
                    or self.unacknowledged_stored or self.untyped
                    or set(self.kinds) - {"unavailable"})


def audit(store: Any, writers: list[Writer]) -> Audit:
    stored: dict[str, list[tuple[int, str]]] = {}
    for conversation in sorted({w.conversation for w in writers}):
        items: list[tuple[int, str]] = []
        seq: int | None = 1
        while seq is not None:
            page = store.read(conversation, from_seq=seq, limit=1000)
            items += [(e.seq, e.event_id) for e in page.items]
            seq = page.next_seq
        stored[conversation] = items
    where: dict[str, tuple[str, int]] = {}
    duplicated = gaps = 0
    for conversation, items in stored.items():
        gaps += [seq for seq, _ in items] != list(range(1, len(items) + 1))
        for seq, event_id in items:
            duplicated += event_id in where
            where[event_id] = (conversation, seq)
    kinds: Counter[str] = Counter()
    hows: Counter[str] = Counter()
    lost = partial = untyped = unsettled = indeterminate = acked_events = 0
    acked_ids: set[str] = set()
    acked_batches = 0
    for writer in writers:
        lines = writer.lines()
        acked = writer.acknowledged()
        batches = max([line.get("batch", -1) for line in lines] + [-1]) + 1
        for line in lines:
            kinds.update([line["kind"]] if "kind" in line else [])
            untyped += "untyped" in line
            unsettled += "unsettled" in line
            indeterminate += "indeterminate" in line
            hows.update([line["how"]] if "how" in line else [])
        for batch in range(batches):
            ids = [draft.event_id for draft in _drafts(writer.name, batch)]
            present = [where.get(event_id) for event_id in ids]
            count = sum(item is not None for item in present)
            partial += 0 < count < len(ids)
            if batch in acked:
                acked_batches += 1
                acked_events += len(ids)
                acked_ids.update(ids)
                want = [(writer.conversation, seq) for seq in acked[batch]]
                lost += sum(got != expected for got, expected in zip(present, want, strict=True))
    return Audit(events=len(where), acknowledged_batches=acked_batches,
                 acknowledged_events=acked_events, indeterminate=indeterminate,
                 settled_committed=hows["committed"], settled_appended=hows["appended"],
                 unsettled=unsettled, lost=lost, partial=partial, gaps=gaps,
                 duplicated=duplicated, unacknowledged_stored=len(set(where) - acked_ids),
                 kinds=dict(sorted(kinds.items())), untyped=untyped)


# -- the run ----------------------------------------------------------------------------------

REWOUND_TIMEOUT = 60.0
"""Seconds a rewound standby has to stream synchronously before it is replaced by a copy."""


def failover(old: Node, new: Node) -> str:
    """Promote ``new``; make ``old`` its synchronous standby again; how ``old`` was remade."""
    new.promote()
    # pg_rewind reads the source's timeline from its control file, which a promotion updates
    # only at its end-of-recovery checkpoint: wait for one, or the rewind sees one timeline.
    new.sql("CHECKPOINT")
    try:
        old.rewind(new)
        old.start()
        _wait_sync(new, REWOUND_TIMEOUT)
        return "pg_rewind"
    except RuntimeError as error:
        print(f"  pg_rewind did not give a standby ({error}); a fresh pg_basebackup instead",
              flush=True)
        old.kill()
    old.base_backup(new)
    old.start()
    _wait_sync(new)
    return "pg_basebackup"


def run(arguments: argparse.Namespace) -> int:
    rng = random.Random(arguments.seed)
    started = time.perf_counter()
    with replicated_pair(arguments.synchronous_commit) as (primary, standby, root):
        dsn = multi_host_dsn([primary, standby])
        logs = root / "logs"
        logs.mkdir()
        location = root / "location"
        location.mkdir()
        stop = root / "stop"
        schema = "convledger_failover"
        print(f"clusters: {primary.bin}, ports {primary.port} (primary) and {standby.port}"
              f" (standby) in {root}", flush=True)
        print(f"dsn: {dsn}", flush=True)
        store, close = _open(dsn, schema, arguments.command, str(location))
        close()  # the schema (or the location's store) exists before the writers open it
        writers = start_writers(arguments.writers, dsn, schema, arguments.command, location,
                                stop, logs)
        rebuilt: Counter[str] = Counter()
        killed = 0
        stalled = False
        try:
            since: dict[str, int] = {}
            for number in range(arguments.kills):
                if not _progress(writers, since, 2):
                    stalled = True
                    break
                # The standby's WAL receiver stalls a moment before the kill (SIGSTOP, then
                # SIGCONT once the primary is gone): the commits of that moment are on the
                # primary only. Synchronous, none of them is acknowledged, and each must be
                # settled; with --synchronous-commit local they are, and the audit finds them
                # lost.
                receiver = standby.receiver()
                if receiver is not None:
                    os.kill(receiver, signal.SIGSTOP)
                try:
                    time.sleep(rng.uniform(0.2, 0.5))  # a random moment among the commits
                    processes = primary.kill()
                finally:
                    if receiver is not None:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(receiver, signal.SIGCONT)
                killed += 1
                down = time.perf_counter()
                how = failover(primary, standby)
                rebuilt[how] += 1
                primary, standby = standby, primary
                since = {w.name: len(w.acknowledged()) for w in writers}
                print(f"kill {number + 1}: {processes} processes of the primary SIGKILLed;"
                      f" promoted port {primary.port}, old primary back as standby by {how}"
                      f" in {time.perf_counter() - down:.1f} s", flush=True)
            if not stalled and not _progress(writers, since, 2):  # the last primary too
                stalled = True
        except BaseException:
            for writer in writers:  # a failed run: no writer outlives it
                writer.process.kill()
            raise
        finally:
            stop.touch()
            for writer in writers:
                try:
                    writer.process.wait(SETTLE_LIMIT + 60)
                except subprocess.TimeoutExpired:
                    writer.process.kill()
                    writer.process.wait()
                if writer.process.stdout is not None:
                    writer.process.stdout.close()
        store, close = _open(dsn, schema, arguments.command, str(location))
        try:
            found = audit(store, writers)
        finally:
            close()
        exits = [writer.process.returncode for writer in writers]
    wall = time.perf_counter() - started
    print(f"writers: {arguments.writers} ({(arguments.writers + 1) // 2} on one hot conversation"
          f" without an expected head, the others each on its own with one); {BATCH} events"
          " per batch")
    print(f"synchronous_commit: {arguments.synchronous_commit}")
    print(f"primary kills and promotions: {killed}; old primaries made standbys again:"
          f" {dict(rebuilt)}")
    print(f"acknowledged writes checked: {found.acknowledged_batches} batches /"
          f" {found.acknowledged_events} events; events stored {found.events}")
    print(f"indeterminate outcomes: {found.indeterminate}; settled: {found.settled_committed}"
          f" had committed, {found.settled_appended} appended by the settling call;"
          f" unsettled {found.unsettled}")
    print(f"lost {found.lost}; partial {found.partial}; seq gaps {found.gaps};"
          f" duplicated eventIds {found.duplicated}; stored but not acknowledged"
          f" {found.unacknowledged_stored}; refusals {found.kinds}; untyped {found.untyped};"
          f" writer exits {exits}")
    print(f"wall time: {wall:.1f} s")
    bad = (not found.ok or killed != arguments.kills or any(exits) or stalled
           or found.acknowledged_batches == 0)
    print("result: " + ("FAILED" if bad else
                        "ok: nothing acknowledged lost, every indeterminate write settled"))
    return 1 if bad else 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        writer_main(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="3 kills, 4 writers (CI size)")
    parser.add_argument("--kills", type=int, help="primary kills (default 20, --small 3)")
    parser.add_argument("--writers", type=int, help="writer processes (default 6, --small 4)")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--synchronous-commit", default="on",
                        choices=("on", "remote_apply", "remote_write", "local", "off"),
                        help="the primary's synchronous_commit (default on); local or off is"
                             " the negative control: acknowledged writes can be lost")
    parser.add_argument("--command", default="",
                        help="a wire server command with {dsn} (and {dir}); default: the"
                             " reference store in process")
    arguments = parser.parse_args()
    if arguments.kills is None:
        arguments.kills = 3 if arguments.small else 20
    if arguments.writers is None:
        arguments.writers = 4 if arguments.small else 6
    # SIGTERM ends the run through the finally blocks, which remove both clusters.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return run(arguments)


if __name__ == "__main__":
    sys.exit(main())
