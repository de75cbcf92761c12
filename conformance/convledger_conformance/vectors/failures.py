"""Shrunk failures as trace vectors: a failing check's calls, replayable in any language.

When a check fails, the runner (``convledger-conformance --record-failures
DIR``) runs that check once more with every store wrapped in a
:class:`~convledger_conformance.vectors.recording.RecordingStore`. The wrapper
writes each call the check makes, in the wire terms of
:mod:`convledger_conformance.vectors.traces`, into the log of the store it
was made on. Hypothesis replays its shrunk failing example last, so the newest
logs hold the shrunk program. :func:`trace_of_failure` then

1. turns a log into a trace and records its expectations from the reference
   store (:func:`convledger_conformance.vectors.traces.record`);
2. keeps it only if the store under test answers it differently from the
   reference (:func:`reproduces`): a vector is written only when it catches the
   store by itself;
3. removes every step it can while it still catches the store
   (:func:`minimize`: first all reads, then halves, quarters, ..., single steps).

Calls a trace cannot express (spills, search, a fold without a name, a reopen, values
without a JSON image) are left out of the log, and counted: when nothing
remaining catches the store, the note says what was left out.

The written file has the format of ``spec/vectors/traces/*.json``; a
maintainer who adds it there (and to this package's copy) makes the failure a
regression vector for every store.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from convledger import canonical
from convledger.errors import LedgerError
from convledger_conformance.registry import Check, CheckContext, StoreFactory
from convledger_conformance.vectors.operations import Step
from convledger_conformance.vectors.recording import RecordingFactory
from convledger_conformance.vectors.traces import (
    FORMAT,
    FORMAT_VERSION,
    READ_ONLY_OPS,
    Trace,
    capabilities_of,
    first_difference,
    record,
    replay,
)

MAX_REPLAYS: Final = 400
"""The most replays :func:`minimize` spends on one trace."""


# -- from a log to a minimal vector -----------------------------------------------------------


@attrs.frozen
class RecordedFailure:
    """What recording one failed check gave: a trace document, or why there is none."""

    check: str
    trace: dict[str, Any] | None
    note: str
    """How many steps the trace kept and the first difference, or why nothing was recorded."""
    divergence: str = ""
    """The first diverging operation, its arguments (shortened), expected and actual answer."""
    signature: str = ""
    """The operation that diverged and what differed (the answer's members, or the state
    digest): failures of one signature share their root cause (one trace is written)."""
    size: tuple[int, int] = (0, 0)
    """Steps and canonical bytes of the trace: the smallest reproduction is the simplest."""


def reproduces(factory: StoreFactory, trace: Trace) -> list[str]:
    """The differences of ``factory``'s store from the reference on ``trace`` ([] if none)."""
    document = record(trace)
    try:
        return replay(factory, document)
    except Exception as error:  # a store that crashes on a step is caught too
        return [f"{trace.name}: the store raised {type(error).__name__}: {error}"]


def minimize(factory: StoreFactory, trace: Trace, *, budget: int = MAX_REPLAYS) -> Trace:
    """A shorter trace that still catches ``factory``'s store (greedy delta debugging)."""
    spent = 0

    def still(steps: Sequence[Step]) -> bool:
        nonlocal spent
        spent += 1
        return bool(steps) and bool(reproduces(factory, _with_steps(trace, steps)))

    steps = list(trace.steps)
    last_write = max(
        (number for number, step in enumerate(steps) if step["op"] not in READ_ONLY_OPS),
        default=None,
    )
    if last_write is not None:  # first: every read before the last write at once
        fewer = [s for s in steps[:last_write] if s["op"] not in READ_ONLY_OPS]
        if len(fewer) < last_write and still(fewer + steps[last_write:]):
            steps = fewer + steps[last_write:]
    chunk = max(1, len(steps) // 2)
    while spent < budget:
        start = 0
        removed_any = False
        while start < len(steps) and spent < budget:
            candidate = steps[:start] + steps[start + chunk:]
            if still(candidate):
                steps = candidate
                removed_any = True
            else:
                start += chunk
        if chunk == 1 and not removed_any:
            break
        chunk = max(1, chunk // 2)
    return _with_steps(trace, steps)


def _with_steps(trace: Trace, steps: Sequence[Step]) -> Trace:
    return attrs.evolve(trace, steps=tuple(steps), capabilities=capabilities_of(steps))


def trace_of_failure(
    item: Check, context: CheckContext, failed: Sequence[str], *, store_name: str
) -> RecordedFailure:
    """Re-run the failed check ``item`` with recording; its shrunk failure as a minimal trace.

    A trace is returned only when it is faithful: every step is an operation of a
    capability the store declares (a store answers the others ``not_supported``, CAP-002,
    which is right, not a failure), and replaying the recorded document exactly as
    ``convledger-conformance replay`` does fails on this store (:func:`faithful`).
    When no log gives one as recorded, its reads are tried once more with ``alter``
    (the caller changes what it was handed, LED-014).
    """
    recorder = RecordingFactory(context.factory)
    try:
        item.run(attrs.evolve(context, factory=recorder))
    except Exception:
        pass
    else:
        return RecordedFailure(item.name, None, "the check passed when re-run with recording")
    declared = {capability.value for capability in context.capabilities}
    candidates: list[list[Step]] = []
    for log in reversed(recorder.logs):
        steps = [step for step in log if has_json_image(step)]
        recorder.unlogged["a call (a value whose JSON text reads back otherwise)"] += (
            len(log) - len(steps))
        kept = [step for step in steps if set(capabilities_of([step])) <= declared | {"ledger"}]
        for step in steps:
            if not set(capabilities_of([step])) <= declared | {"ledger"}:
                recorder.unlogged[f"{step['op']} (capability not declared)"] += 1
        if kept:
            candidates.append(kept)
    recorder.logs.clear()  # the logs can be large (issue 35): only the candidates are kept
    replayed = 0
    name = f"shrunk/{vector_label(store_name)}/{item.name}"
    for variant in (_as_recorded, _altered):
        for steps in candidates:
            tried = variant(steps)
            if tried is None:
                continue
            replayed += 1
            trace = Trace(name, tuple(failed), capabilities_of(tried), tuple(tried))
            if not reproduces(context.factory, trace):
                continue
            smallest = minimize(context.factory, trace)
            document = record(smallest)
            first = faithful(context.factory, document, declared)
            if not first:
                continue
            note = f"{len(smallest.steps)} steps (from {len(tried)}); {_shortened(first[0])}"
            divergence, signature = _diverging(context.factory, document)
            size = (len(smallest.steps), len(canonical.encode(document)))
            return RecordedFailure(item.name, document, note, divergence, signature, size)
    return RecordedFailure(item.name, None, _why_not(replayed, recorder.unlogged))


def faithful(
    factory: StoreFactory, document: dict[str, Any], declared: set[str]
) -> list[str]:
    """The differences replaying ``document`` shows on ``factory``'s store, as ``replay`` would.

    Empty (so the document must not be written) when the trace needs a capability the
    store does not declare, when it passes, or when the store crashes on it.
    """
    needed = set(document.get("capabilities", ())) - {"ledger"}
    if not needed <= declared:
        return []
    try:
        return replay(factory, document)
    except Exception as error:  # a crash on a step is a difference too, as replay prints
        return [f"{document['name']}: the store raised {type(error).__name__}: {error}"]


def _diverging(factory: StoreFactory, document: dict[str, Any]) -> tuple[str, str]:
    """The first diverging operation of a faithful trace, described, and its signature."""
    try:
        found = first_difference(factory, document)
    except Exception as error:
        return f"the store raised {type(error).__name__}", "raised"
    if found is None:
        return "", ""
    step = found.step
    call = describe_call(step)
    if not found.answered:
        return (f"step {found.number}, {call}: answered as expected, but the state after it "
                "differs (its export)", f"{step['op']} (state)")
    expected, observed = step["expect"], found.observed
    differing = sorted(
        key for key in set(expected) | set(observed) if expected.get(key) != observed.get(key)
    ) if isinstance(expected, dict) and isinstance(observed, dict) else []
    return (f"step {found.number}, {call}: expected {_shortened(_json(expected), limit=160)}, "
            f"got {_shortened(_json(observed), limit=160)}",
            f"{step['op']} ({', '.join(differing) or 'answer'})")


def describe_call(step: Step) -> str:
    """``op(arguments)`` of a trace step, each argument shortened."""
    arguments = []
    for key, value in step.items():
        if key in ("op", "expect", "digest"):
            continue
        if key == "drafts" and isinstance(value, list):
            shown = f"[{len(value)} draft{'s' * (len(value) != 1)}]"
        elif key == "archive" and isinstance(value, str):
            shown = f"<archive, {len(value)} chars>"
        else:
            shown = _shortened(_json(value), limit=40)
        arguments.append(f"{key}={shown}")
    return f"{step['op']}({', '.join(arguments)})"


def _json(value: object) -> str:
    try:
        return canonical.encode(value).decode("utf-8")
    except LedgerError:
        return repr(value)


def _as_recorded(steps: list[Step]) -> list[Step] | None:
    return steps


def _altered(steps: list[Step]) -> list[Step] | None:
    """``steps`` with every read made an altering read; None when there is no read."""
    if not any(step["op"] == "read" for step in steps):
        return None
    return [{**step, "alter": True} if step["op"] == "read" else step for step in steps]


def vector_label(store_name: str) -> str:
    """The store's name as a vector meant for sharing may hold it: a Python name
    (``module:Class``, a gallery class) as it is; anything else (a ``--command`` line, with
    the user's paths) as ``wire-command``."""
    return store_name if re.fullmatch(r"[A-Za-z0-9_.:-]{1,200}", store_name) else "wire-command"


def _why_not(replayed: int, unlogged: collections.Counter[str]) -> str:
    """Why no trace catches the failure: what was replayed, what could not be recorded."""
    left_out = ", ".join(f"{n} x {name}" for name, n in sorted(unlogged.items()) if n)
    return (f"no recorded store log reproduces the failure as a trace: replayed on a fresh "
            f"store, each of the {replayed} newest logs with calls answers as the reference "
            f"does. Left out of the logs: {left_out or 'nothing'}. So the failure lies where "
            "a trace cannot reach: in calls left out, in values the store shares with its "
            "caller in process (LED-014), in a race between threads, or in what the check "
            "inspects besides the store's answers (its class, its file)")


def _shortened(text: str, *, limit: int = 300) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


def has_json_image(step: Step) -> bool:
    """Whether ``step`` survives canonical JSON text unchanged, types included.

    Not so for NaN, a lone surrogate or an integer beyond 2**53, which have no
    canonical text, nor for a float with an integral value, which a reader
    parses back as an integer (a store may treat ``1.0`` and ``1`` differently).
    """
    try:
        text = canonical.encode(step)
    except LedgerError:
        return False
    return _identical(json.loads(text), step)


def _identical(parsed: object, value: object) -> bool:
    if isinstance(value, (list, tuple)):
        return isinstance(parsed, list) and len(parsed) == len(value) and all(
            _identical(left, right) for left, right in zip(parsed, value, strict=True))
    if isinstance(value, dict):
        return isinstance(parsed, dict) and parsed.keys() == value.keys() and all(
            _identical(parsed[key], value[key]) for key in value)
    return type(parsed) is type(value) and parsed == value


def file_of(recorded: Sequence[RecordedFailure]) -> bytes:
    """The canonical bytes of a trace file holding every recorded trace."""
    return canonical.encode({
        "$comment": "Shrunk failures recorded by `convledger-conformance --record-failures`; "
        "see spec/vectors/README.md.",
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "traces": [item.trace for item in recorded if item.trace is not None],
    })


def write_failure(folder: Path, recorded: RecordedFailure) -> Path | None:
    """Write one recorded failure as ``folder/<check>-<digest>.json``; its path, or None."""
    if recorded.trace is None:
        return None
    data = file_of([recorded])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{recorded.check}-{hashlib.sha256(data).hexdigest()[:12]}.json"
    path.write_bytes(data)
    return path
