"""Archives of conversations with runtime state (spec ``transitions.md``, TRN-100 .. TRN-109).

A conversation with checkpoints, operations, compaction, terminal, absorbed,
abandoned and interrupted runs exports, imports into an empty store,
re-exports to the same bytes and keeps answering its idempotency keys. A
companion that lies, is missing, is misshaped or carries a draft that does not
match its summary is refused, and a store without capability ``transitions``
refuses such an archive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conftest import draft
from convledger import canonical
from convledger.archive import inspect_archive
from convledger.capabilities import Capability
from convledger.errors import (
    IntegrityError,
    InvalidInputError,
    LedgerError,
    NotFoundError,
    NotSupportedError,
)
from convledger.kinds import default_registry
from convledger.memory import MemoryStore
from convledger.runtime import Accept, Status
from test_runtime_memory import RICH, RUN_IDS, Probe, _terminal, observe, play, store_with
from test_runtime_rules import Driver

Document = dict[str, Any]


def rich_archive() -> bytes:
    """The export of c1 after the whole RICH scenario (r7 still running with a draft)."""
    store, d = store_with(Probe())
    play(d, RICH)
    return store.export_conversation("c1")


ARCHIVE = rich_archive()


def document() -> Document:
    """A fresh decoded copy of the rich archive."""
    decoded = canonical.decode(ARCHIVE)
    assert isinstance(decoded, dict)
    return decoded


def runtime_of(doc: Document) -> Document:
    """The ``runtime`` companion of a decoded archive."""
    runtime = doc["companions"]["runtime"]
    assert isinstance(runtime, dict)
    return runtime


def test_rich_archive_holds_every_kind_of_record() -> None:
    """TRN-103: the companion holds terminal, absorbed, abandoned, interrupted runs and drafts."""
    runtime = runtime_of(document())
    assert set(runtime) == {"head", "runs", "admissions", "messages"}
    reasons = {run["reason"] for run in runtime["runs"]}
    assert {"success", "absorbed", "abandoned", "interrupted", "policy_stop", None} <= reasons
    assert [run["ordinal"] for run in runtime["runs"]] == sorted(
        run["ordinal"] for run in runtime["runs"])
    assert [a["ordinal"] for a in runtime["admissions"]] == list(range(1, 8))
    positions = [m["position"] for m in runtime["messages"]]
    assert positions == sorted(positions)
    statuses = {m["status"] for m in runtime["messages"]}
    assert statuses == {"final", "failed", "draft"}
    assert any(not m["active"] for m in runtime["messages"])
    assert any(run["lastOperation"] for run in runtime["runs"])
    drafted = [m for m in runtime["messages"] if m["status"] == "draft"]
    assert drafted and drafted[0]["content"] == {"id": "r7", "status": "s",
                                                 "parts": [{"t": "r7"}]}


def test_archive_imports_and_re_exports_the_same_bytes() -> None:
    """TRN-105/TRN-106/ARC-004: import into an empty store; re-export gives identical bytes."""
    source, _ = store_with(Probe())
    play(Driver(source, "c1"), RICH)
    target = MemoryStore()
    report = target.import_conversation(ARCHIVE)
    assert report.conversation_id == "c1"
    assert target.export_conversation("c1") == ARCHIVE
    assert observe(target, ("c1",))[1] == observe(source, ("c1",))[1]


def test_every_original_key_answers_duplicate_with_original_ids_after_import() -> None:
    """TRN-106/TRN-021: each archived idempotency key answers duplicate with its original ids."""
    target = MemoryStore()
    target.import_conversation(ARCHIVE)
    d = Driver(target, "c1")
    admissions = runtime_of(document())["admissions"]
    assert len(admissions) == 7
    for admission in admissions:
        outcome = d(Accept(admission["idempotencyKey"], "new-in", "new-run", "new-answer", {}))
        assert outcome.status is Status.DUPLICATE and outcome.event is None
        assert outcome.admitted is not None
        assert (outcome.admitted.input_id, outcome.admitted.run_id,
                outcome.admitted.assistant_message_id) == (
            admission["inputId"], admission["runId"], admission["assistantMessageId"])
    assert target.export_conversation("c1") == ARCHIVE


def test_imported_conversation_continues_where_the_export_stopped() -> None:
    """TRN-105: the imported records serve transitions; the version and seqs continue."""
    target = MemoryStore()
    target.import_conversation(ARCHIVE)
    d = Driver(target, "c1")
    d.count = 1000
    version = d.version()
    outcome = d(_terminal("r7", "success")(d))
    assert outcome.status is Status.APPLIED and outcome.version == version + 1
    assert outcome.event is not None and outcome.event.seq == target.head("c1")
    assert d.accept(9).admitted.run_id == "r9"


def refused(data: bytes, kind: type[LedgerError]) -> LedgerError:
    """Import ``data`` into an empty store, expect ``kind``, and check nothing was kept."""
    store = MemoryStore()
    with pytest.raises(kind) as raised:
        store.import_conversation(data)
    assert store.head("c1") == 0 and store.list_active_runs("c1") == ()
    with pytest.raises(NotFoundError):
        store.export_conversation("c1")
    with pytest.raises(NotFoundError):
        store.load_snapshot("c1")
    return raised.value


def changed(edit: Callable[[Document], object]) -> bytes:
    """The rich archive with ``edit`` applied to its decoded document."""
    doc = document()
    edit(doc)
    return canonical.encode(doc)


def _run(doc: Document, run_id: str) -> Document:
    return next(run for run in runtime_of(doc)["runs"] if run["runId"] == run_id)


def _message(doc: Document, message_id: str) -> Document:
    return next(m for m in runtime_of(doc)["messages"] if m["messageId"] == message_id)


LIES: dict[str, Callable[[Document], object]] = {
    "run revision": lambda doc: _run(doc, "r1").update(revision=99),
    "run operation": lambda doc: _run(doc, "r1").update(lastOperation={"name": "other"}),
    "run state kept sound": lambda doc: _run(doc, "r6").update(reason="success", policy=None),
    "run owner": lambda doc: _run(doc, "r7").update(owner="intruder"),
    "admission message": lambda doc: runtime_of(doc)["admissions"][0].update(message={"x": 1}),
    "message content": lambda doc: _message(doc, "a6").update(content={"answer": "forged"}),
    "message inactive": lambda doc: _message(doc, "in6").update(active=False),
    "head version": lambda doc: runtime_of(doc)["head"].update(version=1),
    "draft summary and body": lambda doc: _message(doc, "a7")["draft"].update(parts=5),
}


@pytest.mark.parametrize("edit", LIES.values(), ids=LIES.keys())
def test_companion_differing_from_the_fold_is_integrity(edit: Callable[[Document], object]) -> None:
    """TRN-101/TRN-104: a companion record differing from the ledger's fold is integrity."""
    error = refused(changed(edit), IntegrityError)
    assert error.requirement in ("TRN-104", "TRN-102")


def test_draft_body_not_matching_its_summary_is_integrity() -> None:
    """TRN-102/TRN-104: a draft whose content does not hash to its summary is integrity."""
    forged = changed(lambda doc: _message(doc, "a7").update(
        content={"id": "r7", "status": "s", "parts": [{"t": "forged"}]}))
    error = refused(forged, IntegrityError)
    assert error.requirement == "TRN-102"


def test_ledger_event_that_does_not_replay_is_integrity() -> None:
    """TRN-100: a recorded transition that does not apply on replay is integrity."""

    def unknown_run(doc: Document) -> None:
        acquire = next(e for e in doc["events"]
                       if e["kind"] == "runtime/transition" and e["payload"]["type"] == "acquire")
        acquire["payload"]["input"]["runId"] = "nobody"

    error = refused(changed(unknown_run), IntegrityError)
    assert error.requirement == "TRN-100"


def test_missing_companion_with_runtime_events_is_invalid_input() -> None:
    """TRN-103/TRN-104: runtime events without the runtime companion are invalid_input."""
    refused(changed(lambda doc: doc.update(companions={})), InvalidInputError)


def test_companion_without_runtime_events_is_invalid_input() -> None:
    """TRN-103/TRN-104: a runtime companion without runtime events is invalid_input."""
    store = MemoryStore()
    store.append("c1", [draft("p1"), draft("p2")])
    plain = canonical.decode(store.export_conversation("c1"))
    assert isinstance(plain, dict) and plain["companions"] == {}
    plain["companions"] = {"runtime": runtime_of(document())}
    refused(canonical.encode(plain), InvalidInputError)
    plain["companions"] = {"runtime": {"head": None, "runs": [], "admissions": [],
                                       "messages": []}}
    refused(canonical.encode(plain), InvalidInputError)


MISSHAPEN: dict[str, Callable[[Document], object]] = {
    "not an object": lambda doc: doc["companions"].update(runtime=[]),
    "missing runs": lambda doc: runtime_of(doc).pop("runs"),
    "extra member": lambda doc: runtime_of(doc).update(extra=1),
    "runs not an array": lambda doc: runtime_of(doc).update(runs={}),
    "run missing member": lambda doc: _run(doc, "r1").pop("placed"),
    "run unknown state": lambda doc: _run(doc, "r1").update(state="paused"),
    "run breaks invariant": lambda doc: _run(doc, "r1").update(owner="w"),
    "message unknown role": lambda doc: _message(doc, "in6").update(role="system"),
    "admission extra member": lambda doc: runtime_of(doc)["admissions"][0].update(x=1),
    "runs out of order": lambda doc: runtime_of(doc)["runs"].reverse(),
    "messages out of order": lambda doc: runtime_of(doc)["messages"].reverse(),
    "admissions out of order": lambda doc: runtime_of(doc)["admissions"].reverse(),
    "repeated run": lambda doc: runtime_of(doc)["runs"].append(_run(doc, "r1")),
    "foreign record": lambda doc: _run(doc, "r1").update(conversationId="c2"),
}


@pytest.mark.parametrize("edit", MISSHAPEN.values(), ids=MISSHAPEN.keys())
def test_misshapen_companion_is_invalid_input(edit: Callable[[Document], object]) -> None:
    """TRN-104: a companion not of the shape of TRN-103 (members, types, order) is invalid_input."""
    refused(changed(edit), InvalidInputError)


def test_inspect_archive_points_at_the_runtime_companion() -> None:
    """TRN-104/ARC-015: inspect_archive reports a companion problem at /companions/runtime."""
    archive, problems = inspect_archive(changed(LIES["run revision"]), default_registry())
    assert archive is None
    assert [(p.kind, p.where) for p in problems] == [("integrity", "/companions/runtime")]
    archive, problems = inspect_archive(ARCHIVE, default_registry())
    assert problems == [] and archive is not None and "runtime" in archive.companions


class LedgerOnlyStore(MemoryStore):
    """A memory store that declares the ledger only (no transitions)."""

    declared = frozenset({Capability.LEDGER})


def test_store_without_transitions_refuses_runtime_archive() -> None:
    """TRN-109/CAP-002: import of a runtime companion is not_supported and leaves nothing."""
    store = LedgerOnlyStore()
    with pytest.raises(NotSupportedError):
        store.import_conversation(ARCHIVE)
    assert store.head("c1") == 0 and store._ledgers == {} and store._runtime == {}
    with pytest.raises(NotFoundError):
        store.export_conversation("c1")
    plain = MemoryStore()
    plain.append("c9", [draft("q1")])
    store.import_conversation(plain.export_conversation("c9"))
    assert store.head("c9") == 1


def test_runtime_ids_listed_in_order() -> None:
    """TRN-103: the rich archive names the runs of RUN_IDS it made, by ordinal."""
    runs = [run["runId"] for run in runtime_of(document())["runs"]]
    assert runs == [r for r in RUN_IDS if r in runs] and len(runs) == 6
