"""Performing one trace step on a store: each operation of the trace format, answered in wire terms.

:func:`perform` runs one step (an ``op`` and its members, see
:mod:`convledger_conformance.vectors.traces`) and gives what the store answered, error
kinds only. Transition inputs and drafts are built from their wire members WITHOUT
validation, so a step can carry a malformed call that the store must refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from convledger.errors import LedgerError
from convledger.interface import require
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

Step = dict[str, Any]
"""One step of a trace: ``op`` and its members (and, recorded, ``expect`` and ``digest``)."""

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
