"""The second process of the SQLite machine, and the fresh eventIds of its batches (SQL-047).

:data:`_CHILD` is the script the rule ``append_from_another_process`` of
:class:`~convledger_conformance.sqlite.machine.SqliteLedgerMachine` runs in a
real second Python process on the same file (SQL-047); the small helpers make
the drawn eventIds fresh against the store (ENV-011) and order the two
concurrent batches by their seqs.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from typing import IO, Final, NoReturn

import attrs

from convledger import canonical
from convledger.envelope import EventDraft
from convledger_conformance.registry import CheckFailure

_CHILD = textwrap.dedent(
    """
    import importlib, json, sys
    from convledger.envelope import EventDraft
    for line in sys.stdin:
        plan = json.loads(line)
        module, _, name = plan["store"].partition(":")
        opener = importlib.import_module(module)
        for part in name.split("."):
            opener = getattr(opener, part)
        store = opener(plan["path"], busy_timeout=60)
        print("ready", flush=True)
        if sys.stdin.readline() != "go\\n":
            store.close()
            break
        placed = store.append(plan["conversation"], [EventDraft(**d) for d in plan["drafts"]])
        store.close()
        wires = []
        for e in placed:
            wire = {"schemaVersion": e.schema_version, "eventId": e.event_id,
                    "conversationId": e.conversation_id, "seq": e.seq, "kind": e.kind,
                    "occurredAt": e.occurred_at, "payload": e.payload}
            if e.ignorable is not False:
                wire["ignorable"] = e.ignorable
            wires.append(wire)
        print(json.dumps(wires), flush=True)
    """
)
"""The second process: for each plan line, open the file with a new store, say ready,
append on ``go``, close the store, print what came back; end at the end of its input
(also in place of ``go``: an unanswered plan is never appended)."""

ANSWER_SECONDS: Final = 120.0
"""How long the second process may take to open the file or to answer (bounded, not hung)."""


class OtherProcess:
    """The second process of the SQL-047 rule, started once and reused by every program.

    A Python start costs a few tenths of a second, and the rule fires in most
    of a run's programs. Each plan still opens the file with a store of its
    own (its own connection) and closes it after the append, so what the rule
    checks, two processes writing one file, is the same as with a process per
    plan. Reader threads turn the child's output into lines, so every wait is
    bounded by :data:`ANSWER_SECONDS`.
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._errors: list[str] = []
        self._stderr: threading.Thread | None = None
        self._pending = False
        """A plan was sent and its answer not read (a failed step left it): start afresh."""

    def open(self, plan: dict[str, object]) -> None:
        """Send a plan; return once the child has opened the file with a new store."""
        if self._pending:
            self.close()
        self._send(json.dumps(plan))
        self._pending = True
        if self._line() != "ready":
            self._fail("another process could not open the file")

    def go(self) -> None:
        """Let the child append the plan's drafts (it answers with :meth:`answer`)."""
        self._send("go")

    def answer(self) -> list[object]:
        """The envelopes (wire JSON) the child's append returned."""
        line = self._line()
        self._pending = False
        try:
            wires = json.loads(line) if line is not None else None
        except json.JSONDecodeError:
            wires = None
        if not isinstance(wires, list):
            self._fail("the other process failed")
        return wires

    def close(self) -> None:
        """End the child: end of its input, then a kill if it lingers."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        if self._stderr is not None:
            self._stderr.join(10)

    def _send(self, line: str) -> None:
        process = self._running()
        assert process.stdin is not None
        try:
            process.stdin.write(line + "\n")
            process.stdin.flush()
        except OSError:
            self._fail("the other process ended")

    def _running(self) -> subprocess.Popen[str]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self.close()
        paths = [entry for entry in sys.path if isinstance(entry, str) and entry]
        process = subprocess.Popen(
            [sys.executable, "-c", _CHILD],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        )
        self._process, self._lines, self._errors = process, queue.Queue(), []
        threading.Thread(target=_pump, args=(process.stdout, self._lines.put),
                         daemon=True).start()
        self._stderr = threading.Thread(target=_pump, args=(process.stderr, self._error),
                                        daemon=True)
        self._stderr.start()
        return process

    def _error(self, line: str | None) -> None:
        if line is not None:
            self._errors.append(line)

    def _line(self) -> str | None:
        try:
            line = self._lines.get(timeout=ANSWER_SECONDS)
        except queue.Empty:
            return None
        return None if line is None else line.strip()

    def _fail(self, what: str) -> NoReturn:
        self.close()  # the child ends, so its standard error is whole
        raise CheckFailure(("SQL-047",), f"{what}: {''.join(self._errors)}")


def _pump(stream: IO[str] | None, sink: Callable[[str | None], None]) -> None:
    """Copy a child's stream line by line into ``sink``; ``None`` at its end."""
    if stream is None:
        return
    for line in stream:
        sink(line)
    sink(None)


# -- small helpers -------------------------------------------------------------------------


def _fresh_id(candidate: str, taken: set[str]) -> str:
    """``candidate``, primed until no stored or used eventId equals it."""
    while candidate in taken:
        candidate += "'"
    return candidate


def _fresh(batch: list[EventDraft], taken: set[str]) -> list[EventDraft]:
    """The batch with each eventId made fresh against ``taken`` (which then holds them)."""
    fresh = []
    for draft in batch:
        event_id = _fresh_id(draft.event_id, taken)
        taken.add(event_id)
        fresh.append(attrs.evolve(draft, event_id=event_id))
    return fresh


def _first_seq(envelopes: tuple[bytes, ...]) -> int:
    """The seq of the first envelope of a returned batch (0 for none)."""
    wire = canonical.decode(envelopes[0]) if envelopes else None
    seq = wire.get("seq") if isinstance(wire, dict) else None
    return seq if isinstance(seq, int) else 0
