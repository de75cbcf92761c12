"""Checks of chapter TRN: runtime transitions, bounded reads, replay and archives.

The state machine (:mod:`convledger_conformance.runtime.machine`) covers the
transition rules, the records and the reads over random programs; the checks
below pin the behaviours a random program reaches rarely: keyset paging over
many conversations in code-point order, cross-conversation lookups, hostile
``runtime`` companions, baselines, and the refusals of runtime kinds on append.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import partial
from typing import Any, Final, cast

from hypothesis.stateful import run_state_machine_as_test

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.interface import require
from convledger.memory import MemoryStore
from convledger.runtime import (
    Accept,
    Acquire,
    Checkpoint,
    Fence,
    Interrupt,
    Operation,
    Recover,
    RecoveryCursor,
    Run,
    Terminal,
    Transition,
)
from convledger.runtime.store import TransitionStore
from convledger.store import Capability, LedgerStore
from convledger_conformance.profiles import settings_for
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.runtime.machine import RUNTIME_MACHINE_IDS, build_runtime_machine
from convledger_conformance.runtime.model import RUNTIME_KINDS_ON_APPEND
from convledger_conformance.support import (
    STAMP,
    accepted,
    draft,
    fail,
    fresh_store,
    ledger_bytes,
    refused,
    run_once,
    untyped,
)

TRANSITIONS: Final = Capability.TRANSITIONS


@check(*RUNTIME_MACHINE_IDS, capability=TRANSITIONS)
def check_runtime_state_machine(ctx: CheckContext) -> None:
    """The store agrees with the reference rules over random programs of transitions and races."""
    machine = build_runtime_machine(ctx.factory)
    run_state_machine_as_test(machine, settings=settings_for(ctx.profile))


# -- helpers ---------------------------------------------------------------------------------


class Driver:
    """Calls transitions on one store with fresh eventIds; a refusal or non-applied fails."""

    def __init__(self, store: TransitionStore, ids: tuple[str, ...]) -> None:
        self.store = store
        self.ids = ids
        self.count = 0

    def event_id(self) -> str:
        """A fresh eventId."""
        self.count += 1
        return f"trn-{self.count}"

    def apply(self, conversation: str, transition: Transition, *, at: str = STAMP) -> Run | None:
        """Apply ``transition``; fail ``ids`` unless it is applied."""
        outcome = accepted(
            partial(self.store.transition, conversation, transition,
                    event_id=self.event_id(), occurred_at=at),
            self.ids, f"{transition!r} in {conversation!r}",
        )
        if outcome.status.value != "applied":
            fail(self.ids, f"{transition!r} in {conversation!r} answered {outcome!r}")
        return outcome.run

    def admit(self, conversation: str, name: str, *, text: str = "hello") -> None:
        """Admit one input as a new run ``name`` (answer ``name-answer``)."""
        self.apply(conversation, Accept(f"{name}-key", f"{name}-input", name, f"{name}-answer",
                                        {"text": text}))

    def acquire(self, conversation: str, name: str, owner: str = "w") -> Run:
        """Acquire run ``name``."""
        run = self.apply(conversation, Acquire(name, owner))
        assert run is not None
        return run

    def owned(self, conversation: str, name: str) -> Run:
        """Admit and acquire run ``name``."""
        self.admit(conversation, name)
        return self.acquire(conversation, name)


def fence_of(run: Run) -> Fence:
    """The fence the owner of ``run`` holds."""
    return Fence(run.owner or "", run.revision, run.fencing_token)


def document_of(data: bytes) -> dict[str, Any]:
    """An archive as a JSON document to tamper with."""
    decoded = json.loads(data)
    assert isinstance(decoded, dict)
    return decoded


def encode(document: dict[str, Any]) -> bytes:
    """Canonical archive bytes of a (tampered) document."""
    return canonical.encode(document)


# -- bounded reads (TRN-080 .. TRN-085) -----------------------------------------------------


@check("TRN-080", capability=TRANSITIONS)
def check_load_run_stays_in_its_conversation(ctx: CheckContext) -> None:
    """TRN-080: load_run finds a run only in its own conversation, even with a shared run id."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ("TRN-080",))
        driver.apply("a", Accept("k", "in-a", "shared", "ans-a", {"text": "a"}))
        driver.apply("a", Accept("k2", "in-a2", "only-a", "ans-a2", {"text": "a2"}))
        if store.load_run("b", "only-a") is not None:
            fail("TRN-080", "load_run('b', 'only-a') returned conversation a's run")
        driver.apply("b", Accept("k", "in-b", "shared", "ans-b", {"text": "b"}))
        for conversation in ("a", "b"):
            run = store.load_run(conversation, "shared")
            if run is None or run.conversation_id != conversation or (
                run.assistant_message_id != f"ans-{conversation}"
            ):
                fail("TRN-080", f"load_run({conversation!r}, 'shared') is {run!r}")
        if store.load_run("never", "shared") is not None:
            fail("TRN-080", "load_run of a conversation without runs found a run")
        if store.list_active_runs("never") != ():
            fail("TRN-080", "list_active_runs of a conversation without runs is not empty")

    run_once(ctx, body)


SCAN_CONVERSATIONS = ("z", "a\x00b", "\U0001f600", "Z", "a", "\uffff", "\u00e9", "a\x01")
"""Conversation ids whose code-point order differs from UTF-16 and locale orders (TRN-085)."""


@check("TRN-081", "TRN-083", "TRN-084", "TRN-085", capability=TRANSITIONS)
def check_scan_recoverable_pages_in_code_point_order(ctx: CheckContext) -> None:
    """TRN-083 .. TRN-085: keyset pages of owned runs by code points, then ordinal; bounds."""
    ids = ("TRN-083", "TRN-084", "TRN-085")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ids)
        for conversation in SCAN_CONVERSATIONS:
            first = driver.owned(conversation, "r1")
            driver.apply(conversation, Terminal("r1", fence_of(first), "success", {"t": 1}))
            driver.admit(conversation, "r2")  # ordinal 2, queued: not recoverable yet
            driver.acquire(conversation, "r2")
            driver.admit(conversation, "r3")  # queued behind r2
            active = [run.run_id for run in store.list_active_runs(conversation)]
            if active != ["r2", "r3"]:
                fail("TRN-081", f"active runs of {conversation!r} are {active}, not by ordinal")
        order = sorted(SCAN_CONVERSATIONS, key=lambda c: c.encode("utf-8"))
        want = [(c, 2) for c in order]
        for limit in (1, 2, 3, len(want), len(want) + 1, 1000):
            got: list[tuple[str, int]] = []
            after: RecoveryCursor | None = None
            pages = 0
            while True:
                page = store.scan_recoverable(after=after, limit=limit)
                pages += 1
                if len(page.runs) > limit:
                    fail("TRN-083", f"a page of limit {limit} returned {len(page.runs)} runs")
                got.extend((run.conversation_id, run.ordinal) for run in page.runs)
                more = len(got) < len(want)
                if (page.next is not None) != more:
                    fail("TRN-084", f"limit {limit}: next is {page.next!r} with "
                         f"{len(want) - len(got)} runs to come")
                if page.next is None:
                    break
                if page.next != RecoveryCursor.after(page.runs[-1]):
                    fail("TRN-084", f"next {page.next!r} is not the last returned run")
                after = page.next
                if pages > len(want) + 1:
                    fail("TRN-084", "following the cursor does not end")
            if got != want:
                fail(("TRN-083", "TRN-085"), f"limit {limit}: scanned {got!r}, expected the "
                     f"code-point order {want!r}")
        whole = store.scan_recoverable()
        if [(r.conversation_id, r.ordinal) for r in whole.runs] != want or whole.next is not None:
            fail("TRN-083", "the default limit is not 100")
        middle = store.scan_recoverable(after=RecoveryCursor("a", 5), limit=1000)
        if [(r.conversation_id, r.ordinal) for r in middle.runs] != want[2:]:
            fail("TRN-083", f"after ('a', 5) scanned {middle.runs!r}")
        loose = untyped(store)
        bad_limits: tuple[object, ...] = (0, 1001, -1, True, 1.5, "2", None)
        for bad in bad_limits:
            refused(partial(loose.scan_recoverable, limit=bad), "invalid_input", "TRN-083",
                    f"scan_recoverable(limit={bad!r})")
        bad_cursors: tuple[object, ...] = (
            ("a", 1), RecoveryCursor("", 1), RecoveryCursor("a", cast(int, "1")),
            RecoveryCursor("a", True), "a",
        )
        for cursor in bad_cursors:
            refused(partial(loose.scan_recoverable, after=cursor), "invalid_input", "TRN-083",
                    f"scan_recoverable(after={cursor!r})")

    run_once(ctx, body)


@check("TRN-082", "TRN-010", capability=TRANSITIONS)
def check_snapshot_before_and_after_the_first_transition(ctx: CheckContext) -> None:
    """TRN-082: no head is not_found; then head, active runs by ordinal, history by position."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        store.append("c", [draft("plain")])
        refused(partial(store.load_snapshot, "c"), "not_found", "TRN-082",
                "load_snapshot of a conversation with events but no head", store=store,
                touched=["c"])
        driver = Driver(store, ("TRN-082",))
        driver.owned("c", "r1")
        driver.admit("c", "r2")
        snapshot = store.load_snapshot("c")
        if snapshot.head.version != 3 or snapshot.head.conversation_id != "c":
            fail(("TRN-082", "TRN-010"), f"head is {snapshot.head!r} after 3 transitions")
        if [r.run_id for r in snapshot.active_runs] != ["r1", "r2"]:
            fail("TRN-082", f"active runs are {snapshot.active_runs!r}")
        if [(m.message_id, m.position) for m in snapshot.messages] != [
            ("r1-input", 1), ("r1-answer", 2)
        ]:
            fail("TRN-082", f"history is {snapshot.messages!r}")

    run_once(ctx, body)


# -- transitions the machine reaches rarely ---------------------------------------------------


@check("TRN-023", "TRN-024", "TRN-032", "TRN-034", "TRN-065", capability=TRANSITIONS)
def check_coalescing_placement_and_absorption(ctx: CheckContext) -> None:
    """TRN-023, TRN-032, TRN-065: a burst joins one run; later runs are absorbed, never placed."""
    ids = ("TRN-023", "TRN-024", "TRN-032", "TRN-034", "TRN-065")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ids)
        driver.admit("c", "r1", text="one")
        driver.apply("c", Accept("k2", "in-2", "unused-run", "unused-answer", {"text": "two"}))
        run = store.load_run("c", "r1")
        if run is None or run.input_ids != ("r1-input", "in-2") or run.revision != 1:
            fail("TRN-023", f"a second input before the acquire did not coalesce: {run!r}")
        if store.load_run("c", "unused-run") is not None:
            fail("TRN-023", "the proposed run of a coalesced input was created")
        acquired = driver.acquire("c", "r1")
        driver.admit("c", "r2")
        driver.apply("c", Accept("k3", "in-3", "r3", "r3-answer", {"text": "three"}))
        queued = store.load_run("c", "r2")
        if queued is None or queued.input_ids != ("r2-input", "in-3"):
            fail("TRN-024", f"inputs after the acquire go to one new run: {queued!r}")
        history = [(m.message_id, m.position) for m in store.load_snapshot("c").messages]
        if history != [("r1-input", 1), ("in-2", 2), ("r1-answer", 3)]:
            fail(("TRN-032", "TRN-034"), f"history after the first acquire is {history}")
        driver.apply("c", Terminal("r1", fence_of(acquired), "success", {"text": "both"},
                                   absorb_run_ids=("r2",)))
        absorbed = store.load_run("c", "r2")
        if absorbed is None or absorbed.state.value != "superseded" or (
            absorbed.reason, absorbed.absorbed_into_run_id) != ("absorbed", "r1"):
            fail("TRN-065", f"the absorbed run is {absorbed!r}")
        statuses = [(m.message_id, m.status.value) for m in store.load_snapshot("c").messages]
        if statuses != [("r1-input", "final"), ("in-2", "final"), ("r1-answer", "final")]:
            fail("TRN-065", f"absorption placed or changed messages: {statuses}")

    run_once(ctx, body)


@check("TRN-041", "TRN-043", "TRN-102", capability=TRANSITIONS)
def check_checkpoint_records_the_summary_only(ctx: CheckContext) -> None:
    """TRN-041: the ledger holds the draft's hash, parts and bytes; the message holds the draft."""

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ("TRN-041", "TRN-043"))
        run = driver.owned("c", "r")
        body_draft: dict[str, JsonValue] = {"id": "d", "status": "partial",
                                            "parts": [{"text": "é\x00\U0001f600"}, 1.5]}
        driver.apply("c", Checkpoint("r", fence_of(run), body_draft))
        encoded = canonical.encode(body_draft)
        want = {"id": "d", "status": "partial", "sha256": hashlib.sha256(encoded).hexdigest(),
                "parts": 2, "bytes": len(encoded)}
        event = store.read("c").items[-1]
        payload = event.payload
        assert isinstance(payload, dict)
        recorded = payload["input"]
        assert isinstance(recorded, dict)
        if recorded.get("draft") != want:
            fail("TRN-041", f"the recorded draft is {recorded.get('draft')!r}, expected {want!r}")
        if "é\x00\U0001f600" in canonical.encode(payload).decode():
            fail("TRN-041", "the draft's content is in the ledger")
        answer = store.load_snapshot("c").messages[-1]
        if answer.status.value != "draft" or answer.content != body_draft or (
            answer.draft is None or answer.draft.to_json() != want
        ):
            fail(("TRN-043", "TRN-102"), f"the drafted answer is {answer!r}")

    run_once(ctx, body)


@check("TRN-040", "TRN-060", "TRN-053", "TRN-004", capability=TRANSITIONS)
def check_stale_fences_are_conflicts(ctx: CheckContext) -> None:
    """TRN-040, TRN-060: a stale owner, revision or token is a conflict that writes nothing."""
    ids = ("TRN-040", "TRN-060")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ids)
        run = driver.owned("c", "r")
        fence = fence_of(run)
        stale = (
            Fence(fence.owner + "-other", fence.revision, fence.fencing_token),
            Fence(fence.owner, fence.revision + 1, fence.fencing_token),
            Fence(fence.owner, fence.revision - 1, fence.fencing_token),
            Fence(fence.owner, fence.revision, fence.fencing_token + 1),
        )
        calls: list[Transition] = []
        for spoiled in stale:
            calls += [
                Checkpoint("r", spoiled, {"id": "d", "status": "s", "parts": []}),
                Operation("r", spoiled, {"tool": "t"}),
                Terminal("r", spoiled, "success", {"text": "late"}),
            ]
        calls.append(Recover("r", run.revision + 1, "abandon", {}))
        for transition in calls:
            before = (ledger_bytes(store, "c"), store.load_snapshot("c"))
            outcome = accepted(partial(store.transition, "c", transition,
                                       event_id=driver.event_id(), occurred_at=STAMP),
                               ids, f"{transition!r}")
            if outcome.status.value != "conflict" or outcome.version != before[1].head.version:
                fail(("TRN-040", "TRN-060", "TRN-053"), f"{transition!r} answered {outcome!r}, "
                     "expected a conflict at the current version")
            if (ledger_bytes(store, "c"), store.load_snapshot("c")) != before:
                fail("TRN-004", f"the conflicting {transition!r} changed something")
        driver.apply("c", Recover("r", run.revision, "requeue", {"replaySafe": True}))
        again = driver.acquire("c", "r", owner="w2")
        late = Terminal("r", fence, "success", {"text": "from the first owner"})
        outcome = store.transition("c", late, event_id=driver.event_id(), occurred_at=STAMP)
        if outcome.status.value != "conflict":
            fail(("TRN-040", "TRN-060"), f"the first owner ended a run it lost: {outcome!r}")
        driver.apply("c", Terminal("r", fence_of(again), "success", {"text": "done"}))

    run_once(ctx, body)


@check("TRN-020", "TRN-021", capability=TRANSITIONS)
def check_idempotency_keys_answer_forever(ctx: CheckContext) -> None:
    """TRN-021: a key answers duplicate with its first ids after its run ended or was absorbed."""
    ids = ("TRN-020", "TRN-021")

    def body(given: LedgerStore) -> None:
        store = require(given, TRANSITIONS)
        driver = Driver(store, ids)
        first = driver.owned("c", "r1")
        driver.admit("c", "r2")
        driver.apply("c", Terminal("r1", fence_of(first), "success", {"text": "both"},
                                   absorb_run_ids=("r2",)))
        driver.admit("c", "r3")
        driver.apply("c", Interrupt("r3"))
        for name in ("r1", "r2", "r3"):
            head = store.head("c")
            again = Accept(f"{name}-key", "other-input", "other-run", "other-answer",
                           {"text": "retry"})
            outcome = accepted(partial(store.transition, "c", again,
                                       event_id=driver.event_id(), occurred_at=STAMP),
                               ids, f"retry of {name}-key")
            got = outcome.admitted
            if outcome.status.value != "duplicate" or got is None or (
                got.input_id, got.run_id, got.assistant_message_id
            ) != (f"{name}-input", name, f"{name}-answer"):
                fail("TRN-021", f"a retry of {name}-key after its run ended answered "
                     f"{outcome!r}")
            if store.head("c") != head:
                fail("TRN-021", "a duplicate accept appended an event")

    run_once(ctx, body)


# -- replay and archives (TRN-100 .. TRN-109) -------------------------------------------------


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


@check("TRN-102", "TRN-103", "TRN-104", "TRN-105", "TRN-106", "TRN-107",
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
            blame = ("TRN-102", "TRN-104") if name == "draft body differs" else ("TRN-104",)
            with fresh_store(ctx) as made:
                target = require(made, TRANSITIONS)
                refused(partial(target.import_conversation, encode(document)), kind, blame,
                        f"import of an archive whose {name}", store=target, touched=["c"])
                if target.list_active_runs("c") != ():
                    fail("TRN-104", f"the refused import ({name}) left runs behind")
        with fresh_store(ctx) as made:
            target = require(made, TRANSITIONS)
            accepted(partial(target.import_conversation, data), ids, "import of a true archive")
            if target.export_conversation("c") != data:
                fail("TRN-106", "re-export of the imported conversation differs")
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


__all__ = ["COMPANION_FAULTS", "SCAN_CONVERSATIONS", "Driver", "fence_of"]
