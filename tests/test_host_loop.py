"""The step loop, its fakes and the PRV/FCT checks on both reference stores."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from convledger.host import (
    FakeProvider,
    FakeTimer,
    Host,
    ProviderFailure,
    ProviderTimeout,
    events_of,
)
from convledger.host.fakes import EPOCH
from convledger.host.messages import body_sha, ledger_form, message_sha
from convledger.host.rules import LEAVE_CHILDREN, STOP_CHILDREN
from convledger.memory import MemoryStore
from convledger.runtime.records import REASON_STATE
from convledger.sqlite import SqliteStore
from convledger_conformance.facts.checks_facts import host_for
from convledger_conformance.facts.invariants import drive, provider_problems
from convledger_conformance.registry import all_checks
from convledger_conformance.report import PASSED
from convledger_conformance.runner import run_suite

CHAPTER_CHECKS = [item for item in all_checks()
                  if any(i.startswith(("PRV-", "FCT-")) for i in item.ids)]


def test_body_hash_is_instructions_then_joined_message_hashes() -> None:
    """bodySha256 hashes the instructions hash followed by the message hashes joined by ','."""
    text = "a" * 64 + "b" * 64 + "," + "c" * 64
    assert body_sha("a" * 64, ["b" * 64, "c" * 64]) == hashlib.sha256(text.encode()).hexdigest()


def test_binary_parts_become_stubs_and_hash_stably() -> None:
    """A bytes value is replaced by {binary, sha256, bytes}; the hash ignores key order."""
    form = ledger_form({"role": "user", "content": [b"xy", {"k": 1}]})
    stub = {"binary": True, "sha256": hashlib.sha256(b"xy").hexdigest(), "bytes": 2}
    assert form == {"role": "user", "content": [stub, {"k": 1}]}
    assert message_sha(form) == message_sha({"content": [stub, {"k": 1}], "role": "user"})


def test_fake_provider_follows_script_then_seed() -> None:
    """The script comes first; a seed then repeats the same outcomes; unknown outcomes refused."""
    provider = FakeProvider(["fail", "timeout", "tool", "ok"])
    with pytest.raises(ProviderFailure):
        provider.call("m", "i", [])
    with pytest.raises(ProviderTimeout):
        provider.call("m", "i", [])
    assert provider.call("m", "i", []).tool_calls
    assert not provider.call("m", "i", []).tool_calls

    def outcomes(seed: int) -> list[str]:
        seeded = FakeProvider(seed=seed)
        seen = []
        for _ in range(20):
            try:
                seen.append("tool" if seeded.call("m", "i", []).tool_calls else "ok")
            except ProviderFailure as failure:
                seen.append(failure.reason)
        return seen

    assert outcomes(3) == outcomes(3)
    with pytest.raises(ValueError):
        FakeProvider(["maybe"])


def test_fake_timer_reports_due_schedules_in_time_order() -> None:
    """Due schedules come out by placed time and only once."""
    from datetime import timedelta

    timer = FakeTimer()
    timer.place("b", EPOCH + timedelta(seconds=2))
    timer.place("a", EPOCH + timedelta(seconds=3))
    timer.place("c", EPOCH + timedelta(seconds=9))
    assert [key for key, _ in timer.due(EPOCH + timedelta(seconds=5))] == ["b", "a"]
    assert timer.due(EPOCH + timedelta(seconds=5)) == ()


def test_fate_table_covers_every_terminal_reason() -> None:
    """The stop and leave sets partition every reason of the TRN reason table."""
    assert set(REASON_STATE) == STOP_CHILDREN | LEAVE_CHILDREN
    assert not STOP_CHILDREN & LEAVE_CHILDREN


def test_exhausted_attempts_and_failure_after_a_tool_end_the_run() -> None:
    """Three failures end with provider_failure; a failure after a tool is not retried."""
    store = MemoryStore()
    host = host_for(Host, store)
    host.provider = FakeProvider(["fail", "timeout", "fail", "fail_after_tool"])
    assert host.run("c", host.accept("c", "one")) == "provider_failure"
    assert host.run("c", host.accept("c", "two")) == "provider_failure"
    attempts = [event.payload["attempt"] for event in events_of(store, "c")
                if event.kind == "provider/request" and isinstance(event.payload, dict)]
    assert attempts == [1, 2, 3, 1]


def test_successor_input_never_reaches_the_predecessor() -> None:
    """An input sent during the predecessor's call is only in the successor's later requests."""
    store = MemoryStore()
    driven = drive(Host, store, seed=None, turns=2, script=["tool", "ok", "ok"])
    assert provider_problems(driven) == []
    run_of = {text: run for text, run in driven.inputs.items()}
    assert run_of["input 1"] != run_of["input 2"]
    bodies = {event.payload["sha256"]: event.payload["message"] for event in driven.events
              if event.kind == "provider/message" and isinstance(event.payload, dict)}
    for event in driven.events:
        payload = event.payload
        if event.kind == "provider/request" and isinstance(payload, dict):
            sent = str([bodies[sha] for sha in payload["messageShas"]])  # type: ignore[union-attr]
            assert ("input 2" in sent) == (payload["runId"] == run_of["input 2"])


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_chapter_checks_pass_on_both_reference_stores(kind: str, tmp_path: Path) -> None:
    """Every PRV and FCT check passes on the in-memory and the SQLite store at ci."""
    counter = iter(range(10**6))

    def sqlite_factory() -> SqliteStore:
        directory = tmp_path / f"s{next(counter)}"
        directory.mkdir()
        return SqliteStore(directory / "ledger.sqlite")

    factory = MemoryStore if kind == "memory" else sqlite_factory
    report = run_suite(factory, profile="ci", checks=CHAPTER_CHECKS, derandomize=True)  # type: ignore[arg-type]
    statuses = {result.name: result.status for result in report.checks}
    assert statuses and set(statuses.values()) == {PASSED}, statuses
