"""Operation traces: language-neutral vectors of store calls and what each must answer.

A trace is a list of steps, each one store operation written in wire terms
(camelCase JSON, transitions by ``type`` and ``input``), with the outcome or
error **kind** it must give and the *state digest* after it: the SHA-256 of the
conversation's export (an archive is canonical, so its bytes, and therefore
its digest, are the same in every conformant store, in every language;
``null`` when the conversation has nothing to export). Error text is never
compared (ERR-002).

The expectations are recorded from the reference in-memory store by
:func:`record`; ``python -m convledger_conformance.vectors.corpus --write`` rewrites
``spec/vectors/traces/*.json`` and the copies this package ships, and a test
keeps the shipped files equal to a fresh recording. :func:`replay` runs a
trace against any store and lists every step that answered differently.

Steps (``op`` and its members):

================== ====================================================== =======================
op                 members                                                observed
================== ====================================================== =======================
``transition``     conversationId, type, input, eventId, occurredAt       outcome, version, runId,
                                                                          admitted, seq | error
``append``         conversationId, drafts (wire drafts)                   seqs | error
``purge``          conversationId                                         outcome | error
``loadRun``        conversationId, runId                                  run (record or null)
``listActiveRuns`` conversationId                                         runIds
``loadSnapshot``   conversationId                                         head, activeRunIds,
                                                                          messageIds | error
``scanRecoverable`` after ([conversationId, ordinal] or null), limit      runs, next | error
``roundTrip``      conversationId                                         identical | error
``read``           conversationId, fromSeq, toSeq?, limit, alter?         items, nextSeq? | error
``head``           conversationId                                         head | error
``import``         conversationId (of the archive, or null), archive      conversationId, events,
                   (the archive's text)                                   headSeq | error
``catchUp``        conversationId, definition (wire, fold by name),       checkpoint | error
                   maxEvents?
``loadCheckpoint`` conversationId, name                                   checkpoint | error
``projectionStatus`` conversationId, name                                 uptoSeq, head, version
                                                                          | error
================== ====================================================== =======================

A ``read`` with ``alter: true`` then changes, in place, each payload it was handed (the
caller's own copy, LED-014: :data:`ALTERED`); the answer is taken before.

Transition inputs and drafts are built from their wire members WITHOUT
validation (:func:`convledger.wire.values.transition_in`,
:func:`~convledger.wire.values.drafts_in`), so a trace can carry a malformed
call that the store must refuse.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.runtime.operations import RecoveryCursor
from convledger.store import Capability, LedgerStore
from convledger.wire.values import (
    admitted_out,
    checkpoint_out,
    definition_in,
    drafts_in,
    import_report_out,
    page_out,
    status_out,
    transition_in,
)

FORMAT = "convledger.vectors.traces"
FORMAT_VERSION = 1
PACKAGE_DIR = "vectors"
"""The folder inside this package that ships the trace files."""

Step = dict[str, Any]

SHRUNK_PREFIX = "shrunk-"
"""Files of shrunk failures of the broken-store gallery (``scripts/record_shrunk_vectors.py``)."""
CURATED_COMMENT = (
    "Recorded from the reference store by "
    "`python -m convledger_conformance.vectors.corpus --write`; see spec/vectors/README.md."
)
SHRUNK_COMMENT = (
    "Shrunk failures of the broken-store gallery, found by `scripts/record_shrunk_vectors.py`; "
    "expectations recorded from the reference store by "
    "`python -m convledger_conformance.vectors.corpus --write`; see spec/vectors/README.md."
)


@attrs.frozen
class Trace:
    """One named trace: the capabilities it needs, the ids it covers, its steps."""

    name: str
    covers: tuple[str, ...]
    capabilities: tuple[str, ...]
    steps: tuple[Step, ...]


# -- performing one step -------------------------------------------------------------------


def perform(store: LedgerStore, step: Step, fresh: Callable[[], LedgerStore]) -> dict[str, Any]:
    """Run one step on ``store``; what it answered, in wire terms (error kinds only)."""
    try:
        return _OPERATIONS[step["op"]](store, step, fresh)
    except LedgerError as error:
        return {"error": error.kind}


def _transition(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    outcome = require(store, Capability.TRANSITIONS).transition(
        step["conversationId"],
        transition_in({"type": step["type"], "input": step["input"]}),  # type: ignore[arg-type]
        event_id=step["eventId"],
        occurred_at=step["occurredAt"],
    )
    observed: dict[str, Any] = {"outcome": outcome.status.value, "version": outcome.version}
    if outcome.run is not None:
        observed["runId"] = outcome.run.run_id
    if outcome.admitted is not None:
        observed["admitted"] = admitted_out(outcome.admitted)
    if outcome.event is not None:
        observed["seq"] = outcome.event.seq
    return observed


def _append(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    placed = store.append(
        step["conversationId"], drafts_in(step["drafts"]),  # type: ignore[arg-type]
        expected_head=step.get("expectedHead"),
    )
    return {"seqs": [envelope.seq for envelope in placed]}


def _read(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    page = store.read(
        step["conversationId"], from_seq=step["fromSeq"], to_seq=step.get("toSeq"),
        limit=step["limit"],
    )
    answer = page_out(page)
    if step.get("alter"):  # the caller then changes what it got (LED-014); see ALTERED
        for envelope in page.items:
            _alter(envelope.payload)
    return answer


ALTERED = "convledgerAlteredByTheCaller"
"""The member a ``read`` step with ``alter: true`` adds to each payload object it was handed.

An in-process store that hands its callers the objects it keeps (LED-014) then shows
the member to the next reader; over the wire every answer is a copy, so it changes nothing.
"""


def _alter(payload: object) -> None:
    if isinstance(payload, dict):
        payload[ALTERED] = True
    elif isinstance(payload, list):
        payload.append(ALTERED)


def _head(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    return {"head": store.head(step["conversationId"])}


def _import(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    return import_report_out(store.import_conversation(step["archive"].encode("utf-8")))


def _catch_up(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    from convledger.projections.named import resolve

    options = {"max_events": step["maxEvents"]} if "maxEvents" in step else {}
    definition: Any = definition_in(step["definition"], resolve)  # as it came: the store refuses
    checkpoint = require(store, Capability.PROJECTIONS).catch_up(
        step["conversationId"], definition, **options)
    return {"checkpoint": checkpoint_out(checkpoint)}


def _load_checkpoint(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    checkpoint = require(store, Capability.PROJECTIONS).load_checkpoint(
        step["conversationId"], step["name"])
    return {"checkpoint": checkpoint_out(checkpoint)}


def _projection_status(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    status = require(store, Capability.PROJECTIONS).projection_status(
        step["conversationId"], step["name"])
    return status_out(status)


def _purge(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    return {"outcome": require(store, Capability.PURGE).purge(step["conversationId"]).value}


def _load_run(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    run = require(store, Capability.TRANSITIONS).load_run(step["conversationId"], step["runId"])
    return {"run": None if run is None else run.to_json()}


def _list_active(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    runs = require(store, Capability.TRANSITIONS).list_active_runs(step["conversationId"])
    return {"runIds": [run.run_id for run in runs]}


def _snapshot(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    snapshot = require(store, Capability.TRANSITIONS).load_snapshot(step["conversationId"])
    return {
        "head": snapshot.head.to_json(),
        "activeRunIds": [run.run_id for run in snapshot.active_runs],
        "messageIds": [message.message_id for message in snapshot.messages],
    }


def _scan(store: LedgerStore, step: Step, _: object) -> dict[str, Any]:
    after = step.get("after")
    cursor = None if after is None else RecoveryCursor(after[0], after[1])
    runs = require(store, Capability.TRANSITIONS)
    page = runs.scan_recoverable(after=cursor, limit=step["limit"])
    return {
        "runs": [[run.conversation_id, run.run_id] for run in page.runs],
        "next": None if page.next is None else [page.next.conversation_id, page.next.ordinal],
    }


def _round_trip(
    store: LedgerStore, step: Step, fresh: Callable[[], LedgerStore]
) -> dict[str, Any]:
    archive = store.export_conversation(step["conversationId"])
    target = fresh()
    try:
        target.import_conversation(archive)
        return {"identical": target.export_conversation(step["conversationId"]) == archive}
    finally:
        target.close()


_OPERATIONS: dict[str, Callable[[LedgerStore, Step, Callable[[], LedgerStore]], dict[str, Any]]] = {
    "transition": _transition,
    "append": _append,
    "purge": _purge,
    "loadRun": _load_run,
    "listActiveRuns": _list_active,
    "loadSnapshot": _snapshot,
    "scanRecoverable": _scan,
    "roundTrip": _round_trip,
    "read": _read,
    "head": _head,
    "import": _import,
    "catchUp": _catch_up,
    "loadCheckpoint": _load_checkpoint,
    "projectionStatus": _projection_status,
}

READ_ONLY_OPS = frozenset(
    {"loadRun", "listActiveRuns", "loadSnapshot", "scanRecoverable", "read", "head", "roundTrip",
     "loadCheckpoint", "projectionStatus"}
)
"""The operations that change nothing (a shrunk failure's reads are tried away first)."""

_CAPABILITY_OF_OP = {
    "transition": "transitions", "loadRun": "transitions", "listActiveRuns": "transitions",
    "loadSnapshot": "transitions", "scanRecoverable": "transitions", "purge": "purge",
    "append": "ledger", "read": "ledger", "head": "ledger", "import": "ledger",
    "roundTrip": "ledger", "catchUp": "projections", "loadCheckpoint": "projections",
    "projectionStatus": "projections",
}


_CAPABILITY_OF_COMPANION = {
    "runtime": "transitions", "projections": "projections", "spills": "spills",
}


def capabilities_of(steps: Sequence[Step]) -> tuple[str, ...]:
    """The capabilities a trace of ``steps`` needs (``ledger`` alone when nothing more).

    An imported archive needs the capability of each companion it carries and
    ``transitions`` when it holds runtime events: a store without them refuses it.
    """
    needed = {_CAPABILITY_OF_OP[step["op"]] for step in steps}
    for step in steps:
        if step["op"] == "import":
            needed |= _archive_needs(step["archive"])
    needed.discard("ledger")
    return tuple(sorted(needed)) if needed else ("ledger",)


def archive_members(text: object) -> dict[str, Any]:
    """The members of an import step's archive text; empty when it is not a JSON object."""
    try:
        archive = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return archive if isinstance(archive, dict) else {}


def _archive_needs(text: object) -> set[str]:
    archive = archive_members(text)
    companions = archive.get("companions")
    events = archive.get("events")
    needed = {
        _CAPABILITY_OF_COMPANION[name]
        for name in (companions if isinstance(companions, dict) else ())
        if name in _CAPABILITY_OF_COMPANION
    }
    if isinstance(events, list) and any(
        isinstance(event, dict) and str(event.get("kind", "")).startswith("runtime/")
        for event in events
    ):
        needed.add("transitions")
    return needed


def digest(store: LedgerStore, conversation_id: str | None) -> str | None:
    """The state digest: SHA-256 of the conversation's export, None when it has none."""
    if conversation_id is None:
        return None
    try:
        return hashlib.sha256(store.export_conversation(conversation_id)).hexdigest()
    except LedgerError:
        return None


# -- recording and replaying -----------------------------------------------------------------


def record(trace: Trace) -> dict[str, JsonValue]:
    """Run ``trace`` on a fresh reference store; the trace with every expectation filled in."""
    store = MemoryStore()
    steps: list[JsonValue] = []
    for step in trace.steps:
        observed = perform(store, step, MemoryStore)
        steps.append({**step, "expect": observed, "digest": digest(store, step["conversationId"])})
    return {
        "name": trace.name,
        "covers": list(trace.covers),
        "capabilities": list(trace.capabilities),
        "steps": steps,
    }


@attrs.frozen
class Difference:
    """The first step of a replayed trace whose answer or state digest differs."""

    number: int
    step: dict[str, Any]
    """The step as recorded (its call, ``expect`` and ``digest``)."""
    observed: Any
    """What the store answered, in wire terms."""
    digest: str | None = None
    """The state digest found, when the answer matched but the digest did not."""

    @property
    def answered(self) -> bool:
        """Whether the answer itself differs (not only the state digest after it)."""
        return self.digest is None and _canonical(self.observed) != _canonical(
            self.step["expect"])

    def describe(self, name: str) -> str:
        """The difference as ``replay`` prints it."""
        where = f"{name} step {self.number} ({self.step['op']})"
        if self.answered:
            return (f"{where}: expected {_text(self.step['expect'])}, "
                    f"got {_text(self.observed)}")
        return f"{where}: state digest {self.digest} differs from {self.step['digest']}"


def first_difference(
    factory: Callable[[], LedgerStore], document: dict[str, Any]
) -> Difference | None:
    """Run one recorded trace on a fresh store of ``factory``; its first difference, if any."""
    store = factory()
    try:
        for number, step in enumerate(document["steps"], start=1):
            call = {key: value for key, value in step.items() if key not in ("expect", "digest")}
            observed = perform(store, call, factory)
            if _canonical(observed) != _canonical(step["expect"]):
                return Difference(number, step, observed)
            found = digest(store, step["conversationId"])
            if found != step["digest"]:
                # later steps assume this one answered as recorded
                return Difference(number, step, observed, digest=str(found))
    finally:
        store.close()
    return None


def replay(factory: Callable[[], LedgerStore], document: dict[str, Any]) -> list[str]:
    """Run one recorded trace on a fresh store of ``factory``; every mismatch, described."""
    found = first_difference(factory, document)
    return [] if found is None else [found.describe(document["name"])]


def _canonical(value: object) -> bytes:
    return canonical.encode(value)


def _text(value: object) -> str:
    return _canonical(value).decode("utf-8")


# -- files -------------------------------------------------------------------------------------


def trace_files() -> dict[str, dict[str, Any]]:
    """Every shipped trace file, by file name (``vectors/traces/*.json`` of this package)."""
    folder = importlib.resources.files("convledger_conformance").joinpath(PACKAGE_DIR, "traces")
    files: dict[str, dict[str, Any]] = {}
    for item in sorted(folder.iterdir(), key=lambda entry: entry.name):
        if item.name.endswith(".json"):
            files[item.name] = json.loads(item.read_bytes())
    return files


def document_of(traces: Sequence[Trace], *, comment: str = CURATED_COMMENT) -> bytes:
    """The canonical bytes of one trace file recording ``traces``."""
    return canonical.encode(
        {
            "$comment": comment,
            "format": FORMAT,
            "formatVersion": FORMAT_VERSION,
            "traces": [record(trace) for trace in traces],
        }
    )


def traces_of(document: dict[str, Any]) -> list[Trace]:
    """The traces of a recorded file, without their expectations (to record them again)."""
    return [
        Trace(
            item["name"], tuple(item["covers"]), tuple(item["capabilities"]),
            tuple(
                {key: value for key, value in step.items() if key not in ("expect", "digest")}
                for step in item["steps"]
            ),
        )
        for item in document["traces"]
    ]


def capability_of(name: str) -> Capability:
    """The capability a trace's capability name stands for."""
    return Capability(name)


def iter_traces(files: dict[str, dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, trace document) for every trace of every file."""
    for name, document in files.items():
        for trace in document["traces"]:
            yield name, trace
