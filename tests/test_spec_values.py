"""The suite's oracle values come from the spec's table, never from the reference (issue 20).

Mutation testing (``docs/mutation.md``) found that the hostile corpus and the
boundary checks read every limit from :mod:`convledger.limits`, so a mutant of
that table changed the store and the oracle together and survived, and that the
wire client sent the reference's read default with every ``read``, so a
server's own default was never tested over the wire. The regression tests: the
package's copy of ``spec/limits.json`` is the spec's file; no module of the
suite imports a limit or a default from :mod:`convledger`; a store whose
defaults differ from the spec's fails the checks, in process and over the wire.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from convledger import canonical
from convledger.envelope import Envelope, EventDraft
from convledger.memory import MemoryStore
from convledger.projections.definition import Checkpoint, ProjectionDefinition
from convledger.store import Page
from convledger_conformance import spec_values
from convledger_conformance.hostile.checks import run_corpus
from convledger_conformance.registry import all_checks
from convledger_conformance.report import FAILED, PASSED
from convledger_conformance.runner import run_suite
from convledger_conformance.wire.client import WireStoreFactory

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "conformance" / "convledger_conformance"
TESTS = Path(__file__).resolve().parent

CONSTANT = re.compile(r"(MAX|MIN|DEFAULT)_[A-Z0-9_]+|LIMITS|BOUNDS|BY_NAME")
"""Names of the reference's limits and defaults (``MAX_SAFE_INTEGER``, ``DEFAULT_READ_LIMIT``)."""

NOT_AN_ORACLE = {
    ("wire/connection.py", "MAX_FRAME"): "the client's own framing (WIR-001): the largest reply "
                                         "frame it reads, not a value it expects of a store",
    ("diff/peers.py", "MAX_FRAME"): "diff's own framing (WIR-001): the largest frame it reads "
                                    "from either server, not a value it expects of a store",
}
"""Reference constants the suite may import, each with the reason it is no expected value."""


def test_the_package_copy_is_the_spec_table() -> None:
    """conformance/.../limits.json is spec/limits.json byte for byte (requirements --write)."""
    assert (SUITE / "limits.json").read_bytes() == (ROOT / "spec" / "limits.json").read_bytes()


def test_the_named_values_are_the_table_entries() -> None:
    """Each named value of spec_values is the entry of the table it names."""
    assert spec_values.MAX_SAFE_INTEGER == 2**53 - 1
    assert spec_values.MAX_READ_LIMIT == spec_values.BOUND["readLimit"].maximum == 10000
    assert spec_values.MAX_APPEND_DRAFTS == spec_values.BOUND["appendDrafts"].maximum == 10000
    assert spec_values.READ_LIMIT == 1000
    assert spec_values.CATCH_UP_MAX_EVENTS == 10000
    assert spec_values.SPILL_BYTES == 16 * 1024 * 1024


def _imports_of_reference_constants() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted(SUITE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if node.module.split(".")[0] != "convledger":
                continue
            where = path.relative_to(SUITE).as_posix()
            if node.module == "convledger.limits":
                found.add((where, "convledger.limits"))
            found.update((where, alias.name) for alias in node.names
                         if CONSTANT.fullmatch(alias.name))
    return found


def test_the_suite_imports_no_limit_or_default_of_the_reference() -> None:
    """No module of the suite takes a limit, bound or default from the reference it judges."""
    assert _imports_of_reference_constants() == set(NOT_AN_ORACLE)


class ReadsPagesOf999(MemoryStore):
    """LED-007: a read that names no limit returns at most 999 events, not 1000."""

    def read(self, conversation_id: str, *, from_seq: int = 1, to_seq: int | None = None,
             limit: int = 999) -> Page:
        return super().read(conversation_id, from_seq=from_seq, to_seq=to_seq, limit=limit)


class CatchesUpTo9999(MemoryStore):
    """PRJ-011: a catch-up that names no maxEvents folds at most 9999 events, not 10000."""

    def catch_up(self, conversation_id: str, definition: ProjectionDefinition, *,
                 max_events: int = 9_999) -> Checkpoint:
        return super().catch_up(conversation_id, definition, max_events=max_events)


BROKEN_DEFAULTS = {"ReadsPagesOf999": ("LED-007", ReadsPagesOf999),
                   "CatchesUpTo9999": ("PRJ-011", CatchesUpTo9999)}


def _statuses(factory: Any, ident: str) -> dict[str, str]:
    checks = [item for item in all_checks() if ident in item.ids]
    report = run_suite(factory, profile="smoke", checks=checks, derandomize=True)
    return {item.name: item.status for item in report.checks if ident in item.ids}


@pytest.mark.parametrize("name", sorted(BROKEN_DEFAULTS))
def test_a_wrong_default_fails_in_process(name: str) -> None:
    """A store whose default differs from spec/limits.json fails its id's checks."""
    ident, store = BROKEN_DEFAULTS[name]
    assert FAILED in _statuses(store, ident).values()
    clear = set(_statuses(MemoryStore, ident).values())
    assert PASSED in clear and FAILED not in clear


@pytest.mark.parametrize("name", sorted(BROKEN_DEFAULTS))
def test_a_wrong_default_fails_over_the_wire(name: str) -> None:
    """Over the wire a left-out argument is sent as no member, so the server's default is checked.

    Before, the client sent the reference's default with every call and the broken store passed.
    """
    ident, _ = BROKEN_DEFAULTS[name]
    command = [sys.executable, "-c",
               f"import sys; sys.path.insert(0, {str(TESTS)!r}); "
               "from convledger.cli import main; "
               f"sys.exit(main(['serve-wire', '--factory', 'test_spec_values:{name}']))"]
    factory = WireStoreFactory(command)
    try:
        assert FAILED in _statuses(factory, ident).values()
    finally:
        factory.close()


def test_a_read_sends_only_the_arguments_given() -> None:
    """WIR-013: WireStore.read() sends no fromSeq or limit member unless the caller gave one."""
    from convledger_conformance.wire.store import OMITTED, _given

    assert _given(fromSeq=OMITTED, limit=OMITTED) == {}
    assert _given(fromSeq=1, limit=OMITTED) == {"fromSeq": 1}


class AcceptsPayloadsOf17MiB(MemoryStore):
    """LIM-004: an append whose payload has 16 MiB + 1 to 17 MiB canonical bytes skips the checks.

    The limit mutant ``16`` -> ``17`` of ``limits.py``: it survived at smoke, where the corpus sent
    no oversized payload; the one payload of 16 MiB + 1 sent at smoke now finds it.
    """

    def append(self, conversation_id: str, drafts: Sequence[EventDraft], *,
               expected_head: int | None = None) -> tuple[Envelope, ...]:
        limit = spec_values.LIMIT["payloadBytes"].value
        for item in drafts:
            try:
                size = len(canonical.encode(item.payload))
            except Exception:
                continue
            if limit < size <= limit + 1024 * 1024:
                return self._append(conversation_id, tuple(drafts), expected_head)
        return super().append(conversation_id, drafts, expected_head=expected_head)


def test_a_larger_payload_limit_fails_the_corpus_at_smoke() -> None:
    """LIM-004: the smoke corpus sends one payload of 16 MiB + 1 and finds a store accepting it."""
    tally = run_corpus(AcceptsPayloadsOf17MiB(), "smoke")
    failed = {ident for case, _ in tally.failures for ident in case.ids}
    assert "LIM-004" in failed
    assert not run_corpus(MemoryStore(), "smoke").failures


class AcceptsOccurredAtOf65Bytes(MemoryStore):
    """LIM-008: an append whose occurredAt has exactly 65 bytes skips every check.

    The limit mutant ``64`` -> ``65`` of ``limits.py``: it survived at smoke, where the longest
    time sent had 81 bytes and the boundary check sent exactly 64 (accepted).
    """

    def append(self, conversation_id: str, drafts: Sequence[EventDraft], *,
               expected_head: int | None = None) -> tuple[Envelope, ...]:
        over = spec_values.LIMIT["occurredAtBytes"].value + 1
        if any(len(getattr(item, "occurred_at", "")) == over for item in drafts):
            return self._append(conversation_id, tuple(drafts), expected_head)
        return super().append(conversation_id, drafts, expected_head=expected_head)


def test_an_occurred_at_one_byte_too_long_fails_the_corpus_at_smoke() -> None:
    """LIM-008: the smoke corpus sends an occurredAt of exactly 65 bytes."""
    tally = run_corpus(AcceptsOccurredAtOf65Bytes(), "smoke")
    assert "LIM-008" in {ident for case, _ in tally.failures for ident in case.ids}
