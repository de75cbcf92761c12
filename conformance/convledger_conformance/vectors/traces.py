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
caller's own copy, LED-014: :data:`~convledger_conformance.vectors.operations.ALTERED`);
the answer is taken before. Each step is performed by
:func:`~convledger_conformance.vectors.operations.perform`.

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
from convledger.memory import MemoryStore
from convledger.store import Capability, LedgerStore
from convledger_conformance.vectors.operations import Step, perform

FORMAT = "convledger.vectors.traces"
FORMAT_VERSION = 1
PACKAGE_DIR = "vectors"
"""The folder inside this package that ships the trace files."""

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
