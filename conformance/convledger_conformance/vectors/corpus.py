"""The curated corpus of operation traces, and the command that records it.

``python -m convledger_conformance.vectors.corpus ROOT --write`` records every
trace file (:func:`corpus_files`, the format of
:mod:`convledger_conformance.vectors.traces`) into ``spec/vectors/traces`` and
this package's copies; without ``--write`` it lists the stale files.

Each trace is written as a script of calls. :class:`Script` runs every call on
a reference store while the script is built, so a fenced call can take the
owner, revision and fencing token the run has at that point (:meth:`fence`);
the recorded file then holds the literal values, and the expectations come
from :func:`convledger_conformance.vectors.traces.record`.

Conversation ids include NUL and non-ASCII characters on purpose: they must
round-trip through every store and order by code points (TRN-083).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from convledger.memory import MemoryStore
from convledger_conformance.vectors.operations import Step, perform
from convledger_conformance.vectors.traces import (
    PACKAGE_DIR,
    SHRUNK_COMMENT,
    SHRUNK_PREFIX,
    Trace,
    document_of,
    trace_files,
    traces_of,
)

AT = "2026-03-01T09:00:00.125+01:00"
LATER = "2026-03-01T08:00:01Z"


class Script:
    """Builds the steps of one trace, running each on a reference store as it goes."""

    def __init__(self, name: str, conversation_id: str) -> None:
        self.name = name
        self.conversation_id = conversation_id
        self.store = MemoryStore()
        self.steps: list[Step] = []
        self.events = 0

    def _run(self, step: Step) -> Step:
        perform(self.store, step, MemoryStore)
        self.steps.append(step)
        return step

    def on(self, conversation_id: str) -> Script:
        """Address later calls to ``conversation_id``."""
        self.conversation_id = conversation_id
        return self

    def transition(self, kind: str, **members: Any) -> Step:
        """A transition of ``kind`` with wire ``members``, with a fresh eventId."""
        self.events += 1
        return self._run({
            "op": "transition",
            "conversationId": self.conversation_id,
            "type": kind,
            "input": members,
            "eventId": f"{self.name}/{self.events}",
            "occurredAt": AT if self.events % 2 else LATER,
        })

    def call(self, op: str, **members: Any) -> Step:
        """Any other operation of the trace format."""
        return self._run({"op": op, "conversationId": self.conversation_id, **members})

    def fence(self, run_id: str) -> dict[str, Any]:
        """The owner, revision and token ``run_id`` holds now (a current caller's fence)."""
        run = self.store.load_run(self.conversation_id, run_id)
        assert run is not None and run.owner is not None
        return {"owner": run.owner, "revision": run.revision, "fencingToken": run.fencing_token}

    def accept(self, key: str, input_id: str, run_id: str, answer_id: str) -> Step:
        """An accept with a small text body."""
        return self.transition(
            "accept", idempotencyKey=key, inputId=input_id, runId=run_id,
            assistantMessageId=answer_id, message={"role": "user", "text": f"input {input_id}"},
        )

    def trace(self, covers: tuple[str, ...], *capabilities: str) -> Trace:
        """The finished trace."""
        return Trace(self.name, covers, ("transitions", *capabilities), tuple(self.steps))


def accept_duplicates() -> Trace:
    """Keys answer with their first ids forever; inputs coalesce while nobody runs them."""
    s = Script("accept-duplicates", "conv/ä\x001")
    s.accept("k1", "in-1", "run-1", "ans-1")
    s.accept("k1", "in-x", "run-x", "ans-x")
    s.accept("k2", "in-2", "run-2", "ans-2")  # coalesces into run-1
    s.transition("acquire", runId="run-1", owner="w1")
    s.accept("k3", "in-3", "run-3", "ans-3")  # run-1 was taken: a new run
    s.transition(
        "terminal", runId="run-1", **s.fence("run-1"), reason="success",
        message={"text": "done"}, absorbRunIds=[],
    )
    for key in ("k1", "k2", "k3"):
        s.accept(key, "in-y", "run-y", "ans-y")
    s.call("loadRun", runId="run-1")
    s.call("roundTrip")
    return s.trace(("TRN-001", "TRN-020", "TRN-021", "TRN-023", "TRN-024", "TRN-025", "TRN-106"))


def causal_order() -> Trace:
    """Runs are acquired in admission order; a successor's input lands after the answer.

    Run ids sort against their ordinals (``run-z`` is first), so an order by
    run id cannot pass for causal order (TRN-085).
    """
    s = Script("causal-order", "conv-causal")
    s.accept("k1", "in-1", "run-z", "ans-1")
    s.transition("acquire", runId="run-z", owner="w1")
    s.accept("k2", "in-2", "run-a", "ans-2")
    s.transition("acquire", runId="run-a", owner="w2")  # run-z is running: conflict
    s.transition("acquire", runId="run-z", owner="w9")  # not queued: conflict
    s.call("listActiveRuns")
    s.transition("recover", runId="run-z", revision=s.fence("run-z")["revision"],
                 action="requeue", evidence={"replaySafe": True})
    s.transition("acquire", runId="run-a", owner="w2")  # run-z is queued before it: conflict
    s.call("listActiveRuns")
    s.transition("acquire", runId="run-z", owner="w3")
    s.transition(
        "terminal", runId="run-z", **s.fence("run-z"), reason="provider_stop",
        message={"text": "first answer"}, absorbRunIds=[],
    )
    s.transition("acquire", runId="run-a", owner="w2")
    s.call("loadSnapshot")
    s.transition("acquire", runId="no-such-run", owner="w2")
    return s.trace(
        ("TRN-030", "TRN-031", "TRN-032", "TRN-033", "TRN-034", "TRN-081", "TRN-082", "TRN-085")
    )


def fencing() -> Trace:
    """Owner, revision and fencing token guard every change of a running run."""
    s = Script("fencing", "conv-fence")
    s.accept("k1", "in-1", "run-1", "ans-1")
    s.transition("acquire", runId="run-1", owner="w1")
    good = s.fence("run-1")
    draft = {"id": "d1", "status": "streaming", "parts": [{"text": "par"}, {"text": "tial"}]}
    s.transition("checkpoint", runId="run-1", **{**good, "fencingToken": 7}, draft=draft)
    s.transition("checkpoint", runId="run-1", **{**good, "revision": 0}, draft=draft)
    s.transition("checkpoint", runId="run-1", **{**good, "owner": "intruder"}, draft=draft)
    s.transition("checkpoint", runId="run-1", **good, draft={"id": "d1", "parts": "x"})
    s.transition("checkpoint", runId="run-1", **good, draft=draft)
    s.transition("operation", runId="run-1", **good, operation={"tool": "search"})  # stale
    s.transition("operation", runId="run-1", **s.fence("run-1"), operation={"tool": "search"})
    s.call("loadRun", runId="run-1")
    s.call("roundTrip")
    return s.trace(("TRN-016", "TRN-040", "TRN-041", "TRN-042", "TRN-043", "TRN-044"))


def interrupt_and_recover() -> Trace:
    """Interrupt ends a queued run and asks a running one; recover requeues or abandons."""
    s = Script("interrupt-recover", "conv-recover")
    s.accept("k1", "in-1", "run-1", "ans-1")
    s.transition("interrupt", runId="run-1")
    s.transition("interrupt", runId="run-1")  # terminal: conflict
    s.accept("k2", "in-2", "run-2", "ans-2")
    s.transition("acquire", runId="run-2", owner="w1")
    s.transition("interrupt", runId="run-2")
    s.transition("interrupt", runId="run-2")  # already asked: duplicate
    revision = s.fence("run-2")["revision"]
    s.transition("recover", runId="run-2", revision=revision, action="requeue", evidence={})
    s.transition("recover", runId="run-2", revision=revision, action="requeue",
                 evidence={"replaySafe": 1})
    s.transition("recover", runId="run-2", revision=revision - 1, action="requeue",
                 evidence={"replaySafe": True})
    s.transition("recover", runId="run-2", revision=revision, action="requeue",
                 evidence={"replaySafe": True})
    s.transition("acquire", runId="run-2", owner="w2")
    s.transition("recover", runId="run-2", revision=s.fence("run-2")["revision"],
                 action="abandon", evidence={"reason": "worker lost"})
    s.call("loadSnapshot")
    s.call("roundTrip")
    return s.trace(("TRN-050", "TRN-051", "TRN-053", "TRN-054", "TRN-055"))


def terminal_and_absorption() -> Trace:
    """Terminal ends a run by the reason table and absorbs later queued runs atomically."""
    s = Script("terminal-absorption", "conv-absorb")
    s.accept("k1", "in-1", "run-1", "ans-1")
    s.transition("acquire", runId="run-1", owner="w1")
    s.accept("k2", "in-2", "run-2", "ans-2")
    fence = s.fence("run-1")
    message = {"text": "answered both"}
    s.transition("terminal", runId="run-1", **fence, reason="absorbed", message=message,
                 absorbRunIds=[])
    s.transition("terminal", runId="run-1", **fence, reason="policy_stop", message=message,
                 absorbRunIds=[])
    s.transition("terminal", runId="run-1", **fence, reason="success", message=message,
                 absorbRunIds=["run-1"])
    s.transition("terminal", runId="run-1", **fence, reason="success", message=message,
                 absorbRunIds=["ghost"])
    s.transition("terminal", runId="run-1", **fence, reason="policy_stop", policy="budget",
                 message=message, absorbRunIds=["run-2"])
    s.transition("terminal", runId="run-1", **fence, reason="success", message=message,
                 absorbRunIds=[])  # ended: conflict
    s.call("loadRun", runId="run-2")
    s.call("listActiveRuns")
    s.accept("k2", "in-z", "run-z", "ans-z")
    s.call("roundTrip")
    return s.trace(
        ("TRN-013", "TRN-060", "TRN-061", "TRN-062", "TRN-063", "TRN-064", "TRN-065", "TRN-066")
    )


def compaction() -> Trace:
    """Compaction replaces an exact prefix of history, at the version the caller read."""
    s = Script("compaction", "conv-compact")
    s.transition("compact", expectedVersion=0, firstMessageId="a", lastMessageId="b",
                 summaryMessageId="s", summary={"text": "nothing"})
    for n in (1, 2):
        s.accept(f"k{n}", f"in-{n}", f"run-{n}", f"ans-{n}")
        s.transition("acquire", runId=f"run-{n}", owner="w")
        s.transition("terminal", runId=f"run-{n}", **s.fence(f"run-{n}"), reason="success",
                     message={"text": f"answer {n}"}, absorbRunIds=[])
    version = 6
    summary = {"text": "two questions answered"}
    s.transition("compact", expectedVersion=version - 1, firstMessageId="in-1",
                 lastMessageId="ans-1", summaryMessageId="sum-1", summary=summary)
    s.transition("compact", expectedVersion=version, firstMessageId="in-2",
                 lastMessageId="ans-2", summaryMessageId="sum-1", summary=summary)
    s.transition("compact", expectedVersion=version, firstMessageId="in-1",
                 lastMessageId="ans-1", summaryMessageId="in-2", summary=summary)
    s.transition("compact", expectedVersion=version, firstMessageId="in-1",
                 lastMessageId="ans-1", summaryMessageId="sum-1", summary=summary)
    s.call("loadSnapshot")
    s.accept("k1", "in-q", "run-q", "ans-q")
    s.call("roundTrip")
    return s.trace(("TRN-070", "TRN-071", "TRN-072", "TRN-073", "TRN-074", "TRN-075"))


def refusals() -> Trace:
    """Bad calls are typed errors that change nothing; runtime kinds are never appended."""
    s = Script("refusals", "conv-refuse")
    s.accept("k1", "same", "same", "ans")
    s.accept("k1", "in-1", "run-1", "ans-1")
    s.accept("k2", "in-1", "run-2", "ans-2")  # inputId reused
    s.accept("k3", "in-3", "run-1", "ans-3")  # runId reused
    s.accept("k4", "in-4", "run-4", "ans-1")  # assistantMessageId reused
    s.transition("bogus", runId="run-1")
    s.transition("terminal", runId="run-1", owner="w", revision=0, fencingToken=0,
                 reason="vanished", message={}, absorbRunIds=[])
    s.call("append", drafts=[{
        "eventId": "refusals/forged", "kind": "runtime/transition", "schemaVersion": 1,
        "occurredAt": AT, "payload": {"type": "interrupt", "input": {"runId": "run-1"}},
    }])
    s.call("roundTrip")
    return s.trace(("TRN-004", "TRN-007", "TRN-013", "TRN-022", "TRN-108"))


def recovery_scan() -> Trace:
    """Recoverable runs page by conversation id in code-point order, then ordinal."""
    s = Script("recovery-scan", "b")
    for conversation in ("b", "B", "\u00e9", "a\x00", "a", "\U0001f600"):
        s.on(conversation)
        s.accept(f"k-{conversation}", "in-1", "run-1", "ans-1")
        s.transition("acquire", runId="run-1", owner="w")
    s.on("b")
    s.call("scanRecoverable", after=None, limit=4)
    s.call("scanRecoverable", after=["a\x00", 1], limit=4)
    s.call("scanRecoverable", after=["\u00e9", 1], limit=4)
    s.call("scanRecoverable", after=None, limit=0)
    s.call("loadRun", runId="run-1")
    s.on("zzz").call("loadRun", runId="run-1")
    return s.trace(("TRN-080", "TRN-083", "TRN-084", "TRN-085"))


def purge() -> Trace:
    """Purge is refused while runs are active, then removes the conversation for good."""
    s = Script("purge", "conv-purge")
    s.accept("k1", "in-1", "run-1", "ans-1")
    s.call("purge")
    s.transition("interrupt", runId="run-1")
    s.call("purge")
    s.call("purge")
    s.accept("k2", "in-2", "run-2", "ans-2")
    s.call("append", drafts=[{
        "eventId": "purge/late", "kind": "state/set", "schemaVersion": 1, "occurredAt": AT,
        "payload": {"name": "mood", "version": 1, "value": "calm", "actor": "user"},
    }])
    s.call("loadRun", runId="run-1")
    s.call("listActiveRuns")
    s.call("loadSnapshot")
    s.on("never-seen").call("purge")
    return s.trace(("TRN-090", "TRN-091", "TRN-092", "TRN-093", "TRN-094"), "purge")


FILES = {
    "transitions.json": [
        accept_duplicates(), causal_order(), fencing(), interrupt_and_recover(),
        terminal_and_absorption(), compaction(), refusals(), recovery_scan(),
    ],
    "purge.json": [purge()],
}
"""The trace files and the traces each holds."""


def corpus_files() -> dict[str, bytes]:
    """Every trace file as the corpus records it now, by file name.

    The curated traces come from :data:`FILES`; the shrunk failures
    (``shrunk-*.json``) keep the steps they were recorded with and get their
    expectations recorded again.
    """
    files = {name: document_of(traces) for name, traces in FILES.items()}
    for name, document in trace_files().items():
        if name.startswith(SHRUNK_PREFIX):
            files[name] = document_of(traces_of(document), comment=SHRUNK_COMMENT)
    return files


def main(argv: Sequence[str] | None = None) -> int:
    """``--write``: record the corpus into spec/vectors/traces and this package's copy."""
    parser = argparse.ArgumentParser(description="record the operation-trace vectors")
    parser.add_argument("root", type=Path, help="the repository root")
    parser.add_argument("--write", action="store_true", help="write the files (else compare)")
    args = parser.parse_args(argv)
    targets = (
        args.root / "spec" / "vectors" / "traces",
        args.root / "conformance" / "convledger_conformance" / PACKAGE_DIR / "traces",
    )
    stale = []
    for name, data in corpus_files().items():
        for folder in targets:
            path = folder / name
            if args.write:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            elif not path.exists() or path.read_bytes() != data:
                stale.append(str(path))
    for path in stale:
        print(f"stale: {path}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
