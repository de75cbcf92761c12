"""Chapter LIM: the limits table kept equal to the spec, and the hostile inputs of issue 16.

Each defect issue 16 listed has a plain regression test here, against the
reference stores (memory, SQLite, PostgreSQL) and the wire server; the seeded
corpus of ``convledger_conformance.hostile`` runs against the in-process
stores at smoke (the conformance runs take it to ci).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from convledger import limits
from convledger.errors import InvalidInputError, LedgerError
from convledger.memory import MemoryStore
from convledger.runtime.operations import RecoveryCursor
from convledger.runtime.transitions import Accept, Acquire, Fence, Operation
from convledger.sqlite import SqliteStore
from convledger.store import Capability
from convledger.wire.server import PROTOCOL_VERSION, WireServer
from convledger_conformance import spec_values
from convledger_conformance.hostile.checks import digest, run_corpus
from convledger_conformance.hostile.operations import corpus, prepare
from convledger_conformance.support import STAMP, draft

ROOT = Path(__file__).resolve().parents[1]
STAMPED = {"event_id": "t-ev", "occurred_at": STAMP}


def _table_of_the_chapter() -> list[dict[str, Any]]:
    text = (ROOT / "spec" / "limits.md").read_text("utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \| ([^|]+) \| (LIM-\d{3}) \| (yes|no) \|$", text,
                      re.MULTILINE)
    return [{"name": name, "value": int(value), "unit": unit.strip(), "requirement": ident,
             "declare": declare == "yes"} for name, value, unit, ident, declare in rows]


def test_the_limits_table_is_one_table() -> None:
    """LIM-001 .. LIM-010: spec/limits.json, the chapter's table and convledger.limits agree."""
    shipped = json.loads((ROOT / "spec" / "limits.json").read_text("utf-8"))["limits"]
    reference = [{"name": item.name, "value": item.value, "unit": item.unit,
                  "requirement": item.requirement, "declare": item.declare}
                 for item in limits.LIMITS]
    oracle = [attrs.asdict(item) for item in spec_values.LIMITS]
    assert shipped == _table_of_the_chapter() == reference == oracle
    assert len(shipped) == 6


def test_each_limit_is_written_in_its_sentence() -> None:
    """The sentence of each limit's id states its value (a value lives in the spec's words)."""
    text = (ROOT / "spec" / "limits.md").read_text("utf-8")
    for item in limits.LIMITS:
        (sentence,) = re.findall(rf"^- \*\*{item.requirement}\*\* (.*)$", text, re.MULTILINE)
        assert str(item.value) in sentence, (item.requirement, item.value)
        assert ("declared a larger" in sentence) == item.declare, item.requirement


def _bounds_of_the_chapter() -> list[dict[str, Any]]:
    text = (ROOT / "spec" / "limits.md").read_text("utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (\d+|null) \| (\d+) \| ([^|]+) \| ([A-Z]+-\d{3}) \| "
                      r"`(\w+)` \|$", text, re.MULTILINE)
    return [{"name": name, "minimum": None if low == "null" else int(low), "maximum": int(high),
             "unit": unit.strip(), "requirement": ident, "operation": operation}
            for name, low, high, unit, ident, operation in rows]


def _sentences() -> dict[str, str]:
    found: dict[str, str] = {}
    for chapter in sorted((ROOT / "spec").glob("*.md")):
        for ident, sentence in re.findall(r"^- \*\*([A-Z]+-\d{3})\*\* (.*)$",
                                          chapter.read_text("utf-8"), re.MULTILINE):
            found[ident] = re.sub(r"(?<=\d)[ ,](?=\d{3})", "", sentence)  # 1 000 000 -> 1000000
    return found


NOT_AN_ARGUMENT_BOUND = {
    "PGS-063": "the stored length of a search lexeme, not a bound on any argument",
    "ENV-003": "schemaVersion up to 2**53 - 1: the integer range of LIM-007 (the hostile corpus)",
    "ENV-006": "seq up to 2**53 - 1: the integer range of LIM-007 (the hostile corpus)",
    "WIR-001": "the frame size of the wire, checked by the wire chapter's framing checks",
}
"""Sentences stating a number after 'at most' that are not bounds of an operation's argument."""


def test_the_bounds_table_is_one_table() -> None:
    """spec/limits.json's bounds, the chapter's second table and the suite's values agree."""
    shipped = json.loads((ROOT / "spec" / "limits.json").read_text("utf-8"))["bounds"]
    oracle = [attrs.asdict(item) for item in spec_values.BOUNDS]
    assert shipped == _bounds_of_the_chapter() == oracle
    assert len(shipped) == 12


def test_each_bound_is_written_in_its_sentence() -> None:
    """The sentence of each bound's id states its maximum, and its minimum when it has one."""
    sentences = _sentences()
    for item in spec_values.BOUNDS:
        sentence = sentences[item.requirement]
        assert re.search(rf"\b{item.maximum}\b", sentence), (item.name, item.maximum)
        if item.minimum is not None:
            ranged = f"from {item.minimum} to {item.maximum}" in sentence
            assert ranged or (item.minimum == 1 and "non-empty" in sentence), item.name


def _defaults_of_the_chapter() -> list[dict[str, Any]]:
    text = (ROOT / "spec" / "limits.md").read_text("utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \| `(\w+)` \| ([A-Z]+-\d{3}) \| `(\w+)` \|$", text,
                      re.MULTILINE)
    return [{"name": name, "value": int(value), "argument": argument, "requirement": ident,
             "operation": operation} for name, value, argument, ident, operation in rows]


def test_the_defaults_table_is_one_table() -> None:
    """spec/limits.json's defaults, the chapter's third table and the suite's values agree."""
    shipped = json.loads((ROOT / "spec" / "limits.json").read_text("utf-8"))["defaults"]
    oracle = [attrs.asdict(item) for item in spec_values.DEFAULTS]
    assert shipped == _defaults_of_the_chapter() == oracle
    assert len(shipped) == 5


def test_each_default_is_written_in_its_sentence() -> None:
    """The sentence of each default's id names the argument and its value as the default."""
    sentences = _sentences()
    for item in spec_values.DEFAULTS:
        sentence = sentences[item.requirement]
        assert f"`{item.argument}`" in sentence and "default" in sentence, item.name
        stated = rf"`{item.argument}` (?:MUST default )?to {item.value}\b|\(default {item.value}\b"
        assert re.search(stated, sentence), (item.name, item.value)


def test_every_stated_bound_is_in_a_table() -> None:
    """Every sentence of the spec bounding an argument by a number is a row of limits.json."""
    bound = re.compile(r"from 1 to \d+|at most \d+|more than \d+|up to \d+")
    tabled = {item.requirement for item in limits.LIMITS} | {
        item.requirement for item in spec_values.BOUNDS}
    stated = {ident for ident, sentence in _sentences().items() if bound.search(sentence)}
    assert stated - tabled - set(NOT_AN_ARGUMENT_BOUND) == set()
    assert set(NOT_AN_ARGUMENT_BOUND) <= stated


def test_the_corpus_is_seeded_and_sized_by_profile() -> None:
    """The corpus is the same every time, >= 1,000 cases at ci for any store, smaller at smoke."""
    ledger = frozenset({Capability.LEDGER})
    first, again = corpus("ci", ledger, {}), corpus("ci", ledger, {})
    assert [case.name for case in first] == [case.name for case in again]
    assert len(first) >= 1_000
    assert len(corpus("ci", MemoryStore.declared, {})) >= 1_000
    assert len(corpus("smoke", ledger, {})) < len(first)
    assert {case.operation for case in corpus("smoke", MemoryStore.declared, {})} >= {
        "append", "transition", "putSpill", "catchUp", "purge", "scanRecoverable"}


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    made: Any = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "h.db")
    yield made
    made.close()


def test_the_reference_stores_pass_the_corpus(store: Any) -> None:
    """LIM-011: smoke corpus: every case refused as expected, nothing changed, nothing untyped."""
    tally = run_corpus(store, "smoke")
    assert not tally.failures, [(case.name, why) for case, why in tally.failures]
    assert set(tally.outcomes) == {"invalid_input", "ok"}


def _refused(call: Callable[[], object], store: Any, requirement: str | None = None) -> None:
    before = digest(store)
    with pytest.raises(InvalidInputError) as caught:
        call()
    if requirement is not None:
        assert caught.value.requirement == requirement
    assert digest(store) == before


@pytest.mark.parametrize("field", ["idempotency_key", "input_id", "run_id",
                                   "assistant_message_id"])
def test_lone_surrogates_in_an_accept_are_refused(store: Any, field: str) -> None:
    """LIM-002: MemoryStore accepted them and could no longer export; SQLite raised untyped."""
    prepare(store)
    fields = {"idempotency_key": "k", "input_id": "i", "run_id": "r",
              "assistant_message_id": "a", field: "x\ud800"}
    accept = Accept(message={"text": "x"}, **fields)
    _refused(lambda: store.transition("h-rt", accept, **STAMPED), store)
    assert store.export_conversation("h-rt")


def test_lone_surrogates_in_owners_are_refused(store: Any) -> None:
    """LIM-002: the owner of an acquire and of an operation's fence (SQLite accepted the latter)."""
    prepare(store)
    _refused(lambda: store.transition("h-rt", Acquire("h-run", "o\udc00"), **STAMPED), store)
    fenced = Operation("h-run", Fence("o\udc00", 1, 1), {"op": "x"})
    _refused(lambda: store.transition("h-rt", fenced, **STAMPED), store)


@pytest.mark.parametrize("digits", [4_301, 10_000])
def test_integers_of_thousands_of_digits_are_invalid_input(store: Any, digits: int) -> None:
    """LIM-007: an untyped ValueError (int to text) before; refused as invalid_input now."""
    prepare(store)
    huge = 10 ** (digits - 1)
    _refused(lambda: store.append("h", [draft("h-n", huge)]), store)
    _refused(lambda: store.append("h", [draft("h-n")], expected_head=huge), store)
    _refused(lambda: store.read("h", limit=huge), store)
    assert store.read("h", from_seq=huge).items == ()  # a window past the head (LED-011)


@pytest.mark.parametrize("ordinal", [2**64, -(2**64), 2**53])
def test_recovery_cursor_ordinals_beyond_the_range(store: Any, ordinal: int) -> None:
    """LIM-007: SQLite raised OverflowError for 2**64 and -2**64."""
    prepare(store)
    cursor = RecoveryCursor("h", ordinal)
    _refused(lambda: store.scan_recoverable(after=cursor), store)


def test_oversized_values_are_refused_and_at_the_limit_accepted(store: Any) -> None:
    """LIM-001, LIM-004, LIM-005, LIM-006, LIM-008: one past each limit refused, the limit kept."""
    prepare(store)
    size = limits.MAX_IDENTIFIER_BYTES
    _refused(lambda: store.append("x" * (size + 1), [draft("o-1")]), store, "LIM-001")
    _refused(lambda: store.append("h", [draft("é" * (size // 2 + 1))]), store, "LIM-001")
    store.append("é" * (size // 2), [draft("e" * size)])
    big = {"v": "x" * (limits.MAX_PAYLOAD_BYTES - 7)}
    _refused(lambda: store.append("h", [draft("o-2", payload=big)]), store, "LIM-004")
    deep: Any = 0
    for _ in range(limits.MAX_DEPTH):
        deep = [deep]
    # the payload object around the value is one level: 128 + 1 refused, 127 + 1 accepted
    _refused(lambda: store.append("h", [draft("o-3", deep)]), store, "LIM-005")
    store.append("h", [draft("o-4", deep[0])])
    _refused(lambda: store.import_conversation(b" " * (limits.MAX_ARCHIVE_BYTES + 1)), store,
             "LIM-006")
    _refused(lambda: store.append("h", [draft("o-5", occurred_at=STAMP + " " * 64)]), store)


def test_nul_and_leap_seconds_are_accepted(store: Any) -> None:
    """LIM-003, LIM-009: NUL in ids round-trips; second 60 is kept as written, 61 refused."""
    prepare(store)
    (event,) = store.append("a\x00b", [draft("\x00", occurred_at="2016-12-31T23:59:60Z")])
    assert store.read("a\x00b").items == (event,)
    assert event.occurred_at == "2016-12-31T23:59:60Z"
    _refused(lambda: store.append("a\x00b", [draft("n", occurred_at="2016-12-31T23:59:61Z")]),
             store)


def _server_answers(*requests: dict[str, Any]) -> list[dict[str, Any]]:
    server = WireServer(MemoryStore)
    assert "ok" in server.answer({"id": 0, "op": "hello", "args": {"protocol": PROTOCOL_VERSION}})
    handle = server.answer({"id": 1, "op": "newStore"})["ok"]["store"]
    return [server.answer({**request, "args": {"store": handle, **request["args"]}})
            for request in requests]


def test_the_wire_server_answers_huge_integers_and_deep_payloads_as_invalid_input() -> None:
    """LIM-012: these were 39 `internal` replies (integers over 4,300 digits, nesting over 256)."""
    huge = 10**5_000
    deep: Any = 0
    for _ in range(300):
        deep = [deep]

    def appending(value: Any, **args: Any) -> dict[str, Any]:
        payload = {"name": "slot", "version": 1, "value": value, "actor": "conformance"}
        return {"id": 9, "op": "append", "args": {"conversationId": "c", **args, "drafts": [{
            "eventId": "e", "kind": "state/set", "occurredAt": STAMP, "payload": payload,
            "schemaVersion": 1, "ignorable": False}]}}

    replies = _server_answers(
        appending(huge), appending(deep), appending(1, expectedHead=huge),
        {"id": 2, "op": "read", "args": {"conversationId": "c", "limit": huge}},
        {"id": 3, "op": "read", "args": {"conversationId": "c", "toSeq": -huge}},
        {"id": 4, "op": "scanRecoverable", "args": {"after": {"conversationId": "c",
                                                               "ordinal": huge}}},
        {"id": 5, "op": "catchUp", "args": {"conversationId": "c", "maxEvents": huge,
                                            "definition": {"name": "n", "version": 1}}},
        {"id": 6, "op": "head", "args": {"conversationId": "x" * 2_000}},
    )
    assert [reply.get("error", {}).get("kind") for reply in replies] == ["invalid_input"] * 8


def test_refusals_name_no_huge_integer_as_text() -> None:
    """LIM-007: an error message never converts an integer of thousands of digits to text."""
    assert limits.shown(10**10_000) == "an integer of 33220 bits"
    with pytest.raises(LedgerError) as caught:
        MemoryStore().read("c", limit=-(10**10_000))
    assert "bits" in caught.value.message


def test_postgres_refuses_the_hostile_inputs(pg_dsn: str) -> None:
    """LIM-001, LIM-002, LIM-007: the same regressions against the PostgreSQL store.

    The whole corpus runs against it in tests/test_postgres_conformance.py (profile smoke).
    """
    from convledger.postgres import schema_store_factory

    store: Any = schema_store_factory(pg_dsn)()
    try:
        prepare(store)
        _refused(lambda: store.append("h", [draft("h-n", 10**9_999)]), store)
        _refused(lambda: store.scan_recoverable(after=RecoveryCursor("h", 2**64)), store)
        accept = Accept("k\ud800", "i", "r", "a", {"text": "x"})
        _refused(lambda: store.transition("h-rt", accept, **STAMPED), store)
        _refused(lambda: store.append("x" * 1_025, [draft("p-1")]), store, "LIM-001")
    finally:
        store.close()



def test_every_bound_has_its_generated_call() -> None:
    """The boundary checks call every bound of spec/limits.json (no bound is left unchecked)."""
    from convledger_conformance.hostile.boundaries import CALLS

    assert set(CALLS) == {item.name for item in spec_values.BOUNDS}
