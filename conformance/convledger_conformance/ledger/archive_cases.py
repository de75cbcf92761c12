"""Archive vectors: valid archives with their exact bytes, invalid ones with their error kind.

Every case is one archive (base64 of its exact bytes) and what importing it
into a fresh, empty store must do: ``{"imported": true}`` (and a re-export
gives the same bytes, ARC-004) or ``{"error": KIND}``. The valid archives are
exports of the trace corpus (:mod:`convledger_conformance.vectors.corpus`), so
they hold runtime companions with drafts, compaction, absorption and
abandoned runs; the invalid ones are those archives with one thing broken.
Expectations are recorded from the reference in-memory store; ``python -m
convledger_conformance.ledger.archive_cases . --write`` rewrites
``spec/vectors/archives/cases.json`` and the copy this package ships.
"""

from __future__ import annotations

import argparse
import base64
import importlib.resources
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.memory import MemoryStore
from convledger.store import LedgerStore

FORMAT = "convledger.vectors.archives"
FORMAT_VERSION = 1
FILE = "cases.json"
PACKAGE_DIR = "vectors"

Document = dict[str, Any]


@attrs.frozen
class Case:
    """One archive and the requirement ids whose rules decide its fate."""

    name: str
    covers: tuple[str, ...]
    archive: bytes
    capabilities: tuple[str, ...] = ("ledger",)


def import_outcome(factory: Callable[[], LedgerStore], archive: bytes) -> dict[str, JsonValue]:
    """Import ``archive`` into a fresh store: imported and re-exported identically, or the kind."""
    store = factory()
    try:
        report = store.import_conversation(archive)
        again = store.export_conversation(report.conversation_id)
        return {"imported": True, "reexportIdentical": again == archive}
    except LedgerError as error:
        return {"error": error.kind}
    finally:
        store.close()


# -- the corpus ----------------------------------------------------------------------------------


def _exports() -> dict[str, bytes]:
    """The final export of each trace conversation that has one, by trace name."""
    from convledger_conformance.vectors.corpus import FILES

    found: dict[str, bytes] = {}
    from convledger_conformance.vectors.operations import perform

    for traces in FILES.values():
        for trace in traces:
            store = MemoryStore()
            for step in trace.steps:
                perform(store, step, MemoryStore)
            conversation = trace.steps[0]["conversationId"]
            try:
                found[trace.name] = store.export_conversation(conversation)
            except LedgerError:
                continue
    return found


def _edited(archive: bytes, change: Callable[[Document], None]) -> bytes:
    document = json.loads(archive)
    change(document)
    return canonical.encode(document)


def _runtime(document: Document) -> Document:
    runtime: Document = document["companions"]["runtime"]
    return runtime


def _drop_runtime(document: Document) -> None:
    del document["companions"]["runtime"]


def _bump_a_revision(document: Document) -> None:
    _runtime(document)["runs"][0]["revision"] += 1


def _alter_draft(document: Document) -> None:
    for message in _runtime(document)["messages"]:
        if message["status"] == "draft":
            message["content"]["parts"].append({"text": "injected"})
            return
    raise AssertionError("no draft in this archive")


def _reorder_runs(document: Document) -> None:
    _runtime(document)["runs"].reverse()


def _retarget_an_acquire(document: Document) -> None:
    for event in document["events"]:
        if event["kind"] == "runtime/transition" and event["payload"]["type"] == "acquire":
            event["payload"]["input"]["runId"] = "run-elsewhere"
            return
    raise AssertionError("no acquire in this archive")


def _gap(document: Document) -> None:
    document["events"][-1]["seq"] += 1


def _repeat_event_id(document: Document) -> None:
    document["events"][1]["eventId"] = document["events"][0]["eventId"]


def _unknown_kind(document: Document) -> None:
    document["events"][0]["kind"] = "vendor/unknown"


def _unknown_companion(document: Document) -> None:
    document["companions"]["vendor"] = {}


def _next_format_version(document: Document) -> None:
    document["formatVersion"] = 2


def _runtime_without_events(document: Document) -> None:
    document["companions"]["runtime"] = {"head": None, "runs": [], "admissions": [],
                                         "messages": []}


def _ledger_only() -> bytes:
    store = MemoryStore()
    conversation = "ledger/ü\x00only"
    from convledger.envelope import EventDraft

    store.append(conversation, [
        EventDraft(
            event_id="ledger-only/1", kind="state/set",
            occurred_at="2026-03-01T09:00:00.5-03:30",
            payload={"name": "mood", "version": 1, "value": 1.5, "actor": "user"},
        ),
        EventDraft(
            event_id="ledger-only/2", kind="state/set",
            occurred_at="2026-03-01T09:00:01Z",
            payload={"name": "\U0001f600", "version": 2, "value": [1e21, -0.0], "actor": "x"},
        ),
    ])
    return store.export_conversation(conversation)


def corpus() -> list[Case]:
    """Every archive case, valid ones first."""
    exports = _exports()
    ledger = _ledger_only()
    fenced = exports["fencing"]
    absorbed = exports["terminal-absorption"]
    cases = [Case("ledger-only", ("ARC-001", "ARC-004", "ARC-016"), ledger)]
    for name, archive in exports.items():
        cases.append(Case(f"runtime/{name}", ("TRN-103", "TRN-105", "TRN-106"), archive,
                          ("transitions",)))
    broken: list[tuple[str, tuple[str, ...], bytes, Callable[[Document], None], str]] = [
        ("ledger/seq-gap", ("ARC-007",), ledger, _gap, "ledger"),
        ("ledger/repeated-event-id", ("ARC-008",), ledger, _repeat_event_id, "ledger"),
        ("ledger/unknown-kind", ("ARC-012", "RPL-003"), ledger, _unknown_kind, "ledger"),
        ("ledger/unknown-companion", ("ARC-011",), ledger, _unknown_companion, "ledger"),
        ("ledger/format-version-2", ("ARC-002",), ledger, _next_format_version, "ledger"),
        ("ledger/runtime-without-events", ("TRN-104",), ledger, _runtime_without_events,
         "transitions"),
        ("runtime/missing-companion", ("TRN-104",), absorbed, _drop_runtime, "transitions"),
        ("runtime/companion-out-of-order", ("TRN-104",), absorbed, _reorder_runs,
         "transitions"),
        ("runtime/companion-disagrees", ("TRN-101", "TRN-104"), absorbed, _bump_a_revision,
         "transitions"),
        ("runtime/draft-does-not-hash", ("TRN-102", "TRN-104"), fenced, _alter_draft,
         "transitions"),
        ("runtime/transition-does-not-replay", ("TRN-100",), absorbed, _retarget_an_acquire,
         "transitions"),
    ]
    for name, covers, archive, change, capability in broken:
        cases.append(Case(name, covers, _edited(archive, change), (capability,)))
    cases.append(Case("ledger/not-canonical", ("ARC-003",), ledger.replace(b",", b", ", 1)))
    return cases


def document_bytes() -> bytes:
    """The canonical bytes of the case file, with expectations recorded from the reference."""
    return canonical.encode({
        "$comment": "Recorded from the reference store by "
        "`python -m convledger_conformance.ledger.archive_cases . --write`; "
        "see spec/vectors/README.md.",
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "cases": [
            {
                "name": case.name,
                "covers": list(case.covers),
                "capabilities": list(case.capabilities),
                "archiveBase64": base64.b64encode(case.archive).decode("ascii"),
                "expect": import_outcome(MemoryStore, case.archive),
            }
            for case in corpus()
        ],
    })


def shipped() -> Document:
    """The case file this package ships."""
    path = importlib.resources.files("convledger_conformance").joinpath(PACKAGE_DIR, "archives",
                                                                       FILE)
    document: Document = json.loads(path.read_bytes())
    return document


def replay(factory: Callable[[], LedgerStore], case: Document) -> str | None:
    """Import one case into a fresh store of ``factory``; the mismatch, or None."""
    observed = import_outcome(factory, base64.b64decode(case["archiveBase64"]))
    if canonical.encode(observed) != canonical.encode(case["expect"]):
        return f"{case['name']}: expected {case['expect']}, got {observed}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``--write``: record the cases into spec/vectors/archives and this package's copy."""
    parser = argparse.ArgumentParser(description="record the archive vectors")
    parser.add_argument("root", type=Path, help="the repository root")
    parser.add_argument("--write", action="store_true", help="write the files (else compare)")
    args = parser.parse_args(argv)
    data = document_bytes()
    stale = []
    for folder in (
        args.root / "spec" / "vectors" / "archives",
        args.root / "conformance" / "convledger_conformance" / PACKAGE_DIR / "archives",
    ):
        if args.write:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / FILE).write_bytes(data)
        elif not (folder / FILE).exists() or (folder / FILE).read_bytes() != data:
            stale.append(str(folder / FILE))
    for path in stale:
        print(f"stale: {path}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
