"""Fossil version 1 databases migrate to the same bytes forever (chapter sqlite.md, Fossils).

``tests/fossils/manifest.json`` names each fossil with its sha256, the clock
and id generator of the migration, and the archive each conversation must
export to. The test migrates a COPY; the fossil itself never changes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import draft
from convledger.memory import MemoryStore
from convledger.runtime import Accept, Operation, Outcome, Recover, Status
from convledger.sqlite import SqliteStore
from test_runtime_rules import Driver

FOSSILS = Path(__file__).resolve().parent / "fossils"
MANIFEST: dict[str, Any] = json.loads((FOSSILS / "manifest.json").read_text("utf-8"))


def _ids() -> Callable[[], str]:
    counter = itertools.count(1)
    prefix, digits = MANIFEST["eventIdPrefix"], MANIFEST["eventIdDigits"]
    return lambda: f"{prefix}{next(counter):0{digits}d}"


def _migrated_copy(fossil: dict[str, Any], tmp_path: Path) -> SqliteStore:
    copy = tmp_path / fossil["file"]
    shutil.copyfile(FOSSILS / fossil["file"], copy)
    return SqliteStore(copy, clock=lambda: MANIFEST["migratedAt"], new_event_id=_ids())


@pytest.mark.parametrize("fossil", MANIFEST["fossils"], ids=lambda fossil: fossil["file"])
def test_fossil_file_is_the_committed_one(fossil: dict[str, Any]) -> None:
    """Fossils are kept forever: the file still has the digest the manifest recorded."""
    digest = hashlib.sha256((FOSSILS / fossil["file"]).read_bytes()).hexdigest()
    assert digest == fossil["sha256"]


@pytest.mark.parametrize("fossil", MANIFEST["fossils"], ids=lambda fossil: fossil["file"])
def test_fossil_migrates_to_the_recorded_archives(
    fossil: dict[str, Any], tmp_path: Path
) -> None:
    """SQL-030 .. SQL-034: a copy migrates and each conversation exports byte for byte."""
    store = _migrated_copy(fossil, tmp_path)
    assert store.outcome == "migrated"
    assert store.migration is not None
    expected = [entry["conversationId"] for entry in fossil["conversations"]]
    assert list(store.migration.conversations) == expected
    for entry in fossil["conversations"]:
        archive = (FOSSILS / entry["archive"]).read_bytes()
        assert hashlib.sha256(archive).hexdigest() == entry["sha256"]
        assert store.export_conversation(entry["conversationId"]) == archive
    store.close()


@pytest.mark.parametrize("fossil", MANIFEST["fossils"], ids=lambda fossil: fossil["file"])
def test_migrated_fossil_continues_at_seq_2(fossil: dict[str, Any], tmp_path: Path) -> None:
    """SQL-031: after migration every fossil conversation takes its next event at seq 2."""
    store = _migrated_copy(fossil, tmp_path)
    for number, entry in enumerate(fossil["conversations"]):
        placed = store.append(entry["conversationId"], [draft(f"after-{number}")])
        assert placed[0].seq == 2
    reopened = store.reopen()
    assert reopened.outcome == "opened"  # type: ignore[attr-defined]
    reopened.close()


def test_migrated_fossil_archives_import_and_reexport_identically(tmp_path: Path) -> None:
    """ARC-004: every recorded archive imports into a new store and exports the same bytes."""
    target = SqliteStore(tmp_path / "target.sqlite")
    for fossil in MANIFEST["fossils"]:
        for entry in fossil["conversations"]:
            archive = (FOSSILS / entry["archive"]).read_bytes()
            target.import_conversation(archive)
            assert target.export_conversation(entry["conversationId"]) == archive
    target.close()


def test_transitions_continue_on_the_migrated_fossil(tmp_path: Path) -> None:
    """SQL-037, TRN-100: a migrated fossil answers transitions exactly as its archives do."""
    fossil = next(f for f in MANIFEST["fossils"] if f["conversations"])
    store = _migrated_copy(fossil, tmp_path)
    memory = MemoryStore()
    for entry in fossil["conversations"]:
        memory.import_conversation((FOSSILS / entry["archive"]).read_bytes())
    alpha, unicode = "conv-alpha", "ünïcødé/会話\x00nul"
    drivers = {
        c: (Driver(store, c), Driver(memory, c))  # type: ignore[arg-type]
        for c in (alpha, unicode, "head-only", "runs-only")
    }

    def both(conversation_id: str, step: Callable[[Driver], Outcome]) -> Outcome:
        on_file, in_memory = drivers[conversation_id]
        expected = step(in_memory)
        assert step(on_file) == expected
        return expected

    try:
        assert [run.run_id for run in store.scan_recoverable().runs] == ["r-a4"]
        for key, original in (("idem-a1", "r-a1"), ("idem-a3", "r-a3"), ("idem-a4", "r-a4")):
            repeated = both(alpha, lambda d, k=key: d(Accept(k, "x", "y", "z", {})))
            assert repeated.status is Status.DUPLICATE
            assert repeated.admitted is not None and repeated.admitted.run_id == original
        revision = store.load_run(alpha, "r-a4").revision  # type: ignore[union-attr]
        steps: list[tuple[str, Callable[[Driver], Outcome]]] = [
            (alpha, lambda d: d(Operation("r-a4", d.fence("r-a4"), {"tool": "fares"}))),
            (alpha, lambda d: d.accept(9)),
            (alpha, lambda d: d(Recover("r-a4", revision + 1, "requeue", {"replaySafe": True}))),
            (alpha, lambda d: d.acquire("r-a4", "worker-2")),
            (alpha, lambda d: d.finish("r-a4", absorb=("r9",))),
            (unicode, lambda d: d.acquire("r-ü2", "wörker")),
            (unicode, lambda d: d.finish("r-ü2", "timeout")),
            ("head-only", lambda d: d.accept(1)),
        ]
        for conversation_id, step in steps:
            assert both(conversation_id, step).status is Status.APPLIED
        assert store.scan_recoverable().runs == ()
        for conversation_id in drivers:
            archive = store.export_conversation(conversation_id)
            assert archive == memory.export_conversation(conversation_id)
            MemoryStore().import_conversation(archive)  # the ledger rebuilds the rows
    finally:
        store.close()
