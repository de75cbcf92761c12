"""Recording failures as trace vectors: the log of calls, minimization, the runner's option."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest

from convledger.envelope import EventDraft
from convledger.errors import LedgerError
from convledger.memory import MemoryStore
from convledger.projections.named import counting, fold_name
from convledger.runtime.operations import RecoveryCursor
from convledger.runtime.transitions import Accept
from convledger.sqlite import new_file_store
from convledger_conformance.registry import all_checks
from convledger_conformance.report import FAILED, PASSED
from convledger_conformance.runner import run_suite
from convledger_conformance.vectors.failures import has_json_image, minimize, reproduces
from convledger_conformance.vectors.recording import RecordingFactory, RecordingStore
from convledger_conformance.vectors.traces import Trace, capabilities_of, replay
from galleries.ledger import DropsLastOfFullPage, EventIdsUniquePerConversation, SharesPayloads

AT = "2026-03-01T09:00:00Z"


def draft(event_id: str, value: object = 1) -> EventDraft:
    """A registered state/set draft."""
    return EventDraft(
        event_id=event_id, kind="state/set", occurred_at=AT,
        payload={"name": "slot", "version": 1, "value": value, "actor": "test"},
    )


def named(*names: str) -> list[Any]:
    """The registered checks of these names."""
    return [item for item in all_checks() if item.name in names]


def test_recording_store_logs_calls_in_wire_terms() -> None:
    """Each call becomes one step in the traces' wire terms, refusals included."""
    log: list[dict[str, Any]] = []
    store = RecordingStore(MemoryStore(), log, threading.Lock())
    store.append("c", [draft("e1")])
    store.append("c", [draft("e2")], expected_head=1)
    store.read("c", from_seq=2, limit=5)
    store.head("c")
    archive = store.export_conversation("c")
    store.transition("c", Accept("k", "in", "run", "ans", {"role": "user", "text": "hi"}),
                     event_id="t1", occurred_at=AT)
    store.scan_recoverable(after=RecoveryCursor("c", 1), limit=2)
    with pytest.raises(LedgerError):
        store.import_conversation(archive)  # occupied: refused, still logged
    store.purge("gone")
    assert [step["op"] for step in log] == [
        "append", "append", "read", "head", "transition", "scanRecoverable", "import", "purge"
    ]
    assert log[1]["expectedHead"] == 1 and "expectedHead" not in log[0]
    assert log[0]["drafts"][0]["eventId"] == "e1" and log[0]["drafts"][0]["schemaVersion"] == 1
    assert log[2] == {"op": "read", "conversationId": "c", "fromSeq": 2, "limit": 5}
    assert log[4]["type"] == "accept" and log[4]["input"]["idempotencyKey"] == "k"
    assert log[5]["after"] == ["c", 1] and log[5]["conversationId"] is None
    assert log[6]["archive"] == archive.decode("utf-8") and log[6]["conversationId"] == "c"


def test_calls_without_a_json_image_are_left_out() -> None:
    """NaN has no JSON text and 1.0 reads back as 1: such calls run but are not steps."""
    recorder = RecordingFactory(MemoryStore)
    store = recorder()
    with pytest.raises(LedgerError):
        store.append("c", [draft("e1", math.nan)])
    store.append("c", [draft("e0", 1.0)])
    store.append("c", [draft("e2")])
    kept = [step for step in recorder.logs[-1] if has_json_image(step)]
    assert [step["drafts"][0]["eventId"] for step in kept] == ["e2"]


def test_minimize_keeps_only_what_catches_the_store() -> None:
    """Unrelated appends and reads are cut away; the duplicate across conversations stays."""
    noise = [
        {"op": "append", "conversationId": f"n{number}",
         "drafts": [{"eventId": f"n{number}", "kind": "state/set", "schemaVersion": 1,
                     "occurredAt": AT, "payload": {"name": "s", "version": 1, "value": 0,
                                                   "actor": "a"}}]}
        for number in range(6)
    ]
    reads = [{"op": "read", "conversationId": "n0", "fromSeq": 1, "limit": 10}] * 3
    duplicate = [
        {**noise[0], "conversationId": "a", "drafts": [{**noise[0]["drafts"][0], "eventId": "x"}]},
        {**noise[0], "conversationId": "b", "drafts": [{**noise[0]["drafts"][0], "eventId": "x"}]},
    ]
    steps = tuple(noise[:3] + reads + duplicate[:1] + noise[3:] + duplicate[1:])
    trace = Trace("t", ("LED-004",), capabilities_of(steps), steps)
    assert reproduces(EventIdsUniquePerConversation, trace)
    assert not reproduces(MemoryStore, trace)
    smallest = minimize(EventIdsUniquePerConversation, trace)
    assert [step["conversationId"] for step in smallest.steps] == ["a", "b"]
    assert smallest.capabilities == ("ledger",)


def test_runner_writes_a_minimal_vector_that_catches_the_store(tmp_path: Path) -> None:
    """A failed check's shrunk failure becomes a trace the reference passes and the store fails."""
    report = run_suite(DropsLastOfFullPage, profile="smoke", checks=named("read_windows"),
                       derandomize=True, record_failures=tmp_path)
    failed = [item for item in report.checks if item.status == FAILED]
    assert [item.name for item in failed] == ["read_windows"]
    files = sorted(tmp_path.glob("read_windows-*.json"))
    assert len(files) == 1 and str(files[0]) in failed[0].detail
    document = json.loads(files[0].read_bytes())
    (trace,) = document["traces"]
    assert trace["name"] == "shrunk/galleries.ledger:DropsLastOfFullPage/read_windows"
    assert set(trace["covers"]) <= set(failed[0].ids) and trace["capabilities"] == ["ledger"]
    assert len(trace["steps"]) <= 3
    assert replay(MemoryStore, trace) == [] and replay(new_file_store, trace) == []
    assert replay(DropsLastOfFullPage, trace)


def test_failures_without_a_trace_form_say_why(tmp_path: Path) -> None:
    """A store that shares payload objects with its caller fails, and no vector is claimed."""
    report = run_suite(SharesPayloads, profile="smoke", checks=named("caller_values_stay_outside"),
                       derandomize=True, record_failures=tmp_path)
    failed = [item for item in report.checks if item.status == FAILED]
    assert failed and all("No trace vector was recorded" in item.detail for item in failed)
    assert list(tmp_path.glob("*.json")) == []


def test_a_passing_store_records_nothing(tmp_path: Path) -> None:
    """Nothing is re-run or written when every check passes."""
    report = run_suite(MemoryStore, profile="smoke", checks=named("read_windows"),
                       derandomize=True, record_failures=tmp_path / "out")
    assert all(item.status == PASSED for item in report.checks)
    assert not (tmp_path / "out").exists()


def test_an_import_needs_the_capabilities_of_its_archive() -> None:
    """An archive with runtime events or companions needs their capabilities, a plain one not."""
    store = MemoryStore()
    store.append("plain", [draft("p1")])
    store.transition("run", Accept("k", "in", "r", "a", {"role": "user", "text": "hi"}),
                     event_id="t1", occurred_at=AT)
    steps = {
        name: ({"op": "import", "conversationId": name,
                "archive": store.export_conversation(name).decode("utf-8")},)
        for name in ("plain", "run")
    }
    assert capabilities_of(steps["plain"]) == ("ledger",)
    assert capabilities_of(steps["run"]) == ("transitions",)
    assert capabilities_of(({"op": "import", "conversationId": None, "archive": "{"},)) == (
        "ledger",)


def test_projection_calls_are_logged_with_the_fold_by_name() -> None:
    """A catch-up of a named fold is a step; one of an unnamed Python fold cannot be."""
    log: list[dict[str, Any]] = []
    store = RecordingStore(MemoryStore(), log, threading.Lock())
    store.append("c", [draft("e1"), draft("e2")])
    named_fold = counting()
    store.catch_up("c", named_fold, max_events=1)
    store.load_checkpoint("c", named_fold.name)
    store.projection_status("c", named_fold.name)
    unnamed = attrs.evolve(named_fold, name="python-fold", fold=lambda state, envelope: state)
    store.catch_up("c", unnamed)
    assert [step["op"] for step in log] == [
        "append", "catchUp", "loadCheckpoint", "projectionStatus"]
    assert log[1]["definition"]["fold"] == fold_name(named_fold) and log[1]["maxEvents"] == 1
    assert capabilities_of(log) == ("projections",)
    trace = Trace("p", (), capabilities_of(log), tuple(log))
    assert not reproduces(MemoryStore, trace) and not reproduces(new_file_store, trace)
