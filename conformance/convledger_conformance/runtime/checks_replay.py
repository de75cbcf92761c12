"""Checks of chapter TRN, replay and archives: companions, baselines, kinds (TRN-100 .. TRN-109).

Hostile ``runtime`` companions are checked on import (TRN-102 .. TRN-107), a
companion without runtime events is refused (TRN-104), a fold starts from a
baseline (TRN-100, TRN-101), runtime kinds are never appended (TRN-108) and a
runtime companion is not imported without the capability (TRN-109). The
helpers are those of :mod:`convledger_conformance.runtime.checks_transitions`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from convledger.capabilities import Capability
from convledger.errors import LedgerError
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.runtime import Accept, Checkpoint
from convledger.runtime.store import TransitionStore
from convledger.store import LedgerStore
from convledger_conformance.ledger.handles_support import second_handles
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.checks_transitions import (
    TRANSITIONS,
    Driver,
    document_of,
    encode,
    fence_of,
)
from convledger_conformance.runtime.model import RUNTIME_KINDS_ON_APPEND
from convledger_conformance.support import (
    STAMP,
    accepted,
    draft,
    expect_same_bytes,
    fail,
    fresh_store,
    ledger_bytes,
    refused,
    run_once,
)


def _runtime_archive(store: TransitionStore, conversation: str = "c") -> bytes:
    """An exported conversation with a draft, absorption and interleaved other events."""
    driver = Driver(store, ("TRN-103",))
    store.append(conversation, [draft(f"{conversation}-plain-1")])
    run = driver.owned(conversation, "r1")
    driver.admit(conversation, "r2")
    driver.apply(conversation, Checkpoint("r1", fence_of(run), {
        "id": "d", "status": "partial", "parts": [{"text": "draft é"}]}))
    store.append(conversation, [draft(f"{conversation}-plain-2")])
    return store.export_conversation(conversation)


COMPANION_FAULTS: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "companion missing": ("invalid_input", lambda d: d["companions"].clear()),
    "companion not an object": ("invalid_input",
                                lambda d: d["companions"].update(runtime=[])),
    "companion lacks runs": ("invalid_input", lambda d: d["companions"]["runtime"].pop("runs")),
    "run lacks a member": ("invalid_input",
                           lambda d: d["companions"]["runtime"]["runs"][0].pop("revision")),
    "run inputIds holds a number": ("invalid_input", lambda d: d["companions"]["runtime"]
                                    ["runs"][0].update(inputIds=[1])),
    "run inputIds is empty": ("invalid_input", lambda d: d["companions"]["runtime"]["runs"][0]
                              .update(inputIds=[])),
    "queued run has an owner": ("invalid_input", lambda d: d["companions"]["runtime"]["runs"][1]
                                .update(owner="w")),
    "queued run names an absorber": ("invalid_input", lambda d: d["companions"]["runtime"]
                                     ["runs"][1].update(absorbedIntoRunId="r1")),
    "run absorbed into itself": ("invalid_input", lambda d: d["companions"]["runtime"]["runs"][1]
                                 .update(state="superseded", reason="absorbed",
                                         absorbedIntoRunId="r2")),
    "run revision differs": ("integrity", lambda d: d["companions"]["runtime"]["runs"][0]
                             .update(revision=7)),
    "admission dropped": ("integrity",
                          lambda d: d["companions"]["runtime"]["admissions"].pop()),
    "head version differs": ("integrity",
                             lambda d: d["companions"]["runtime"]["head"].update(version=9)),
    "draft body differs": ("integrity", lambda d: d["companions"]["runtime"]["messages"][-1]
                           .update(content={"id": "d", "status": "partial", "parts": []})),
}
"""Tampered ``runtime`` companions and the kind import must refuse each with (TRN-104)."""
RECORD_INVARIANTS = frozenset({"run inputIds is empty", "queued run has an owner",
                               "queued run names an absorber", "run absorbed into itself"})
"""The faults of a run record breaking TRN-011, TRN-014 or TRN-015: invalid_input (TRN-111).
They and ``run inputIds holds a number`` come from the mutation run of issue 37."""


@check("TRN-102", "TRN-103", "TRN-104", "TRN-105", "TRN-106", "TRN-107", "TRN-111",
       capability=TRANSITIONS)
def check_runtime_companion_checked_on_import(ctx: CheckContext) -> None:
    """TRN-103 .. TRN-106: a true companion imports and re-exports; tampered ones are refused."""
    ids = ("TRN-103", "TRN-104", "TRN-105", "TRN-106")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        data = _runtime_archive(store)
        companion = document_of(data)["companions"].get("runtime")
        if not isinstance(companion, dict) or [r["runId"] for r in companion["runs"]] != [
            "r1", "r2"
        ] or companion["messages"][-1]["content"] is None:
            fail(("TRN-103", "TRN-107"), f"the export's runtime companion is {companion!r}")
        for name, (kind, tamper) in COMPANION_FAULTS.items():
            document = document_of(data)
            tamper(document)
            blame = ("TRN-102", "TRN-104") if name == "draft body differs" else (
                ("TRN-104", "TRN-111") if name in RECORD_INVARIANTS else ("TRN-104",))
            with fresh_store(ctx) as made:
                target = require(made, TRANSITIONS)
                refused(partial(target.import_conversation, encode(document)), kind, blame,
                        f"import of an archive whose {name}", store=target, touched=["c"])
                if target.list_active_runs("c") != ():
                    fail("TRN-104", f"the refused import ({name}) left runs behind")
        with fresh_store(ctx) as made:
            target = require(made, TRANSITIONS)
            accepted(partial(target.import_conversation, data), ids, "import of a true archive")
            expect_same_bytes("TRN-106", "re-export of the imported conversation differs",
                              expected=data, got=target.export_conversation("c"))
            if target.load_snapshot("c") != store.load_snapshot("c"):
                fail("TRN-105", "the imported snapshot differs from the exporter's")
            for key, ids_of in (("r1-key", ("r1-input", "r1", "r1-answer")),
                                ("r2-key", ("r2-input", "r2", "r2-answer"))):
                outcome = target.transition("c", Accept(key, "x-in", "x-run", "x-ans", {}),
                                            event_id="again-" + key, occurred_at=STAMP)
                got = outcome.admitted
                if outcome.status.value != "duplicate" or got is None or (
                    got.input_id, got.run_id, got.assistant_message_id) != ids_of:
                    fail("TRN-106", f"key {key!r} after import answered {outcome!r}")

    run_once(ctx, body)


@check("TRN-104", capability=TRANSITIONS)
def check_companion_without_runtime_events_refused(ctx: CheckContext) -> None:
    """TRN-104: a runtime companion beside a ledger without runtime events is invalid_input."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        store.append("p", [draft("p-1")])
        document = document_of(store.export_conversation("p"))
        document["companions"]["runtime"] = {"head": None, "runs": [], "admissions": [],
                                             "messages": []}
        with fresh_store(ctx) as target:
            refused(partial(target.import_conversation, encode(document)), "invalid_input",
                    "TRN-104", "import of a companion without runtime events", store=target,
                    touched=["p"])

    run_once(ctx, body)


@check("TRN-100", "TRN-101", capability=TRANSITIONS)
def check_fold_from_a_baseline(ctx: CheckContext) -> None:
    """TRN-100: a ledger starting at a baseline folds from its records; a late baseline does not."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        source = MemoryStore()
        try:
            _runtime_archive(source)
            snapshot_state = json.loads(source.export_conversation("c"))["companions"]["runtime"]
        finally:
            source.close()
        # drafts become summaries only, as a baseline migrated from v1 would carry them
        baseline = {"migratedAt": "2024-01-01T00:00:00Z", **snapshot_state}
        events: list[dict[str, Any]] = [{
            "schemaVersion": 1, "eventId": "base", "conversationId": "c", "seq": 1,
            "kind": "runtime/baseline", "occurredAt": STAMP, "payload": baseline,
        }]
        run = snapshot_state["runs"][0]
        events.append({
            "schemaVersion": 1, "eventId": "op", "conversationId": "c", "seq": 2,
            "kind": "runtime/transition", "occurredAt": "2024-06-01T00:00:00Z",
            "payload": {"type": "operation", "input": {
                "runId": "r1", "owner": run["owner"], "revision": run["revision"],
                "fencingToken": run["fencingToken"], "operation": {"tool": "t"}}},
        })
        after = json.loads(json.dumps(snapshot_state))
        after["head"]["version"] += 1
        after["runs"][0].update(revision=run["revision"] + 1, lastOperation={"tool": "t"},
                                updatedAt="2024-06-01T00:00:00Z")
        document = {"format": "convledger.archive", "formatVersion": 1, "conversationId": "c",
                    "events": events, "companions": {"runtime": after}}
        accepted(partial(store.import_conversation, encode(document)), ("TRN-100", "TRN-101"),
                 "import of a ledger that starts at a baseline")
        loaded = store.load_run("c", "r1")
        if loaded is None or loaded.last_operation != {"tool": "t"}:
            fail("TRN-100", f"the fold from the baseline gave {loaded!r}")
        late = json.loads(json.dumps(document))
        late["conversationId"] = "d"
        late["events"] = [{"schemaVersion": 1, "eventId": "d-plain", "conversationId": "d",
                           "seq": 1, "kind": "state/set", "occurredAt": STAMP,
                           "payload": {"name": "n", "version": 1, "value": 1, "actor": "a"}}]
        late["events"] += [{**e, "conversationId": "d", "seq": e["seq"] + 1,
                            "eventId": "d-" + e["eventId"]} for e in events]
        for record in ("runs", "admissions", "messages"):
            for item in late["companions"]["runtime"][record]:
                item["conversationId"] = "d"
        late["companions"]["runtime"]["head"]["conversationId"] = "d"
        refused(partial(store.import_conversation, encode(late)), "integrity", "TRN-100",
                "import of a ledger with a baseline after seq 1", store=store, touched=["d"])

    run_once(ctx, body)


@check("TRN-108")
def check_runtime_kinds_never_appended(ctx: CheckContext) -> None:
    """TRN-108: an append of runtime/baseline or runtime/transition is invalid_input, unwritten."""
    from convledger_conformance.ledger import strategies_kinds as knd

    def body(store: LedgerStore) -> None:
        for number, kind in enumerate(RUNTIME_KINDS_ON_APPEND):
            payload = knd.EXAMPLE_PAYLOADS[(kind, 1)]
            for ignorable in (False, True):
                batch = [draft(f"ok-{number}-{ignorable}"),
                         draft(f"rt-{number}-{ignorable}", kind=kind, payload=payload,
                               ignorable=ignorable)]
                refused(partial(store.append, "c", batch), "invalid_input", "TRN-108",
                        f"append of {kind} (ignorable {ignorable})", store=store, touched=["c"])
        if store.head("c") != 0:
            fail("TRN-108", "a refused runtime append left events behind")

    run_once(ctx, body)


@check("TRN-109")
def check_runtime_import_without_capability(ctx: CheckContext) -> None:
    """TRN-109: without capability transitions, an archive with a runtime companion is refused."""
    source = MemoryStore()
    try:
        data = _runtime_archive(source)
    finally:
        source.close()

    def body(store: LedgerStore) -> None:
        if TRANSITIONS in store.capabilities:
            accepted(partial(store.import_conversation, data), "TRN-109",
                     "import of a runtime archive by a store declaring transitions")
            if ledger_bytes(store, "c") == ():
                fail("TRN-109", "the import wrote nothing")
            return
        refused(partial(store.import_conversation, data), "not_supported", "TRN-109",
                "import of a runtime companion without capability transitions", store=store,
                touched=["c"])

    run_once(ctx, body)


__all__ = ["COMPANION_FAULTS"]


@check("TRN-107", capability=TRANSITIONS, also=(Capability.MULTI_PROCESS,))
def check_exports_beside_transitions(ctx: CheckContext) -> None:
    """TRN-107: exports taken while another handle runs transitions import into a fresh store.

    An export whose ``runtime`` companion is read after its events (not in one
    snapshot) can hold a run whose admission event the archive lacks; a fresh
    reference store (:class:`MemoryStore`) refuses such an archive on import.
    """
    ids = ("TRN-107",)
    with fresh_store(ctx) as given, second_handles(given, 1, ids) as (other,):
        store = require(given, TRANSITIONS)
        writer = Driver(require(other, TRANSITIONS), ids)
        store.append("c", [draft("c-seed")])
        done = threading.Event()
        errors: list[BaseException] = []

        def transit() -> None:
            try:
                for number in range(EXPORT_RACE_RUNS):
                    writer.admit("c", f"r{number}")
            except BaseException as error:  # reported on the main thread
                errors.append(error)
            finally:
                done.set()

        thread = threading.Thread(target=transit)
        thread.start()
        exports = 0
        try:
            while not done.is_set() or not exports:
                data = store.export_conversation("c")
                exports += 1
                try:
                    MemoryStore().import_conversation(data)
                except LedgerError as error:
                    fail(ids, f"export {exports}, taken while another handle ran transitions, "
                              f"does not import into a fresh store: {error!r}")
        finally:
            thread.join()
        if errors:
            fail(ids, f"a transition through open_handle() during exports: expected success, "
                      f"got {errors[0]!r}")


EXPORT_RACE_RUNS = 60
"""Runs admitted by the other handle while :func:`check_exports_beside_transitions` exports."""
