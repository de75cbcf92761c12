"""Checks of chapter ERR: kinds of refusals, what a refusal leaves behind, raw exceptions."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from collections import deque
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import attrs
from hypothesis import strategies as st

import convledger_conformance
from convledger import canonical
from convledger.errors import ERROR_KINDS, ConflictError, LedgerError
from convledger.store import Capability, LedgerStore
from convledger_conformance.differences import first_difference
from convledger_conformance.ledger import strategies as gen
from convledger_conformance.ledger import strategies_archive as arc
from convledger_conformance.ledger.model import state_digest
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.requirements import active_ids
from convledger_conformance.support import (
    accepted,
    archive,
    draft,
    drafts,
    fail,
    refused,
    run_once,
    run_property,
    untyped,
    wires,
)


@attrs.frozen
class Scenario:
    """A call that a store holding :func:`_prepare`'s ledgers must refuse with ``kind``."""

    name: str
    kind: str
    call: Callable[[Any], object] = attrs.field(repr=False)


def _prepare(store: LedgerStore) -> None:
    """Conversation ``c`` with events ``c-1``, ``c-2``; ``i`` imported with ``i-1``."""
    store.append("c", drafts("c", 2))
    store.import_conversation(archive("i", wires("i", drafts("i", 1))))


UNKNOWN = {"schemaVersion": 1, "eventId": "u", "conversationId": "u", "seq": 1,
           "kind": gen.UNKNOWN_KIND, "occurredAt": "2024-01-01T00:00:00Z", "payload": None}

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("a wrong expected head", "conflict",
             lambda s: s.append("c", [draft("n")], expected_head=0)),
    Scenario("import into an occupied conversation", "conflict",
             lambda s: s.import_conversation(archive("c", wires("c", [draft("n")])))),
    Scenario("a stored eventId", "duplicate", lambda s: s.append("x", [draft("c-1")])),
    Scenario("a stored eventId after a fresh one", "duplicate",
             lambda s: s.append("c", [draft("n"), draft("m"), draft("c-2")])),
    Scenario("an eventId twice in one batch", "duplicate",
             lambda s: s.append("x", [draft("n"), draft("n")])),
    Scenario("an import of a stored eventId", "duplicate",
             lambda s: s.import_conversation(archive("x", wires("x", [draft("i-1")])))),
    Scenario("an export without events", "not_found", lambda s: s.export_conversation("x")),
    Scenario("a read limit of 0", "invalid_input", lambda s: s.read("c", limit=0)),
    Scenario("an empty batch", "invalid_input", lambda s: s.append("c", [])),
    Scenario("an unregistered kind", "invalid_input",
             lambda s: s.append("c", [draft("n", kind=gen.UNKNOWN_KIND)])),
    Scenario("archive bytes with a BOM", "invalid_input",
             lambda s: s.import_conversation(b"\xef\xbb\xbf" + archive("x", wires("x", [
                 draft("n")])))),
    Scenario("an unknown non-ignorable event", "replay_refused",
             lambda s: s.import_conversation(archive("u", [UNKNOWN]))),
    Scenario("an archive of formatVersion 2", "not_supported",
             lambda s: s.import_conversation(canonical.encode({
                 **arc.document_of("x", wires("x", [draft("n")])), "formatVersion": 2}))),
)
"""One refusal of each kind a ledger-core store can raise (ERR-001)."""


def _scenarios(store: LedgerStore) -> tuple[Scenario, ...]:
    """The scenarios, plus ``reopen`` when the store does not declare persistence (CAP-002)."""
    if Capability.PERSISTENCE in store.capabilities:
        return SCENARIOS
    return (*SCENARIOS, Scenario("reopen without persistence", "not_supported",
                                 lambda s: s.reopen()))


@check("ERR-001")
def check_refusal_kinds(ctx: CheckContext) -> None:
    """ERR-001: each refusal is the ledger error class of exactly the kind its chapter names."""

    def body(store: LedgerStore) -> None:
        _prepare(store)
        for scenario in _scenarios(store):
            error = refused(partial(scenario.call, store), scenario.kind, "ERR-001",
                            scenario.name)
            if type(error).kind != scenario.kind or not isinstance(
                error, ERROR_KINDS[scenario.kind]
            ):
                fail("ERR-001", f"{scenario.name}: {type(error).__name__} is not the class of "
                     f"kind {scenario.kind!r}")

    run_once(ctx, body)


NOT_JUDGING = frozenset(
    f"convledger_conformance.{name}"
    for name in (
        "runner", "report", "cli", "factories", "replay_command", "pytest_plugin", "testcase",
        "__main__", "bench_command",
    )
)
"""Modules that run checks or render reports (and ``__main__``, which runs on import)."""


@check("ERR-002")
def check_suite_compares_kinds_only(ctx: CheckContext) -> None:
    """ERR-002: no check of this suite reads an error's message, args or str() to decide."""
    offences: list[str] = []
    package = convledger_conformance.__path__
    for info in pkgutil.walk_packages(package, prefix="convledger_conformance."):
        if info.name in NOT_JUDGING:
            continue
        offences.extend(_message_reads(info.name, _source(info.name)))
    if offences:
        fail("ERR-002", f"checks read error text: {offences}")


def _source(module: str) -> str:
    """A module's source, read from its file without importing the module (the imports of the
    modules no check uses, the vectors' corpus and the skeleton writers among them, cost more
    than reading every file)."""
    spec = importlib.util.find_spec(module)  # imports the parent packages, which the walk did
    if spec is None or spec.origin is None:
        raise LookupError(f"no source file for {module}")
    return Path(spec.origin).read_text(encoding="utf-8")


_BLOCKS = (ast.stmt, ast.ExceptHandler, ast.match_case)
"""The nodes that hold statements: an expression holds none, so no except clause."""


def _handlers(tree: ast.AST) -> Iterator[ast.ExceptHandler]:
    """Every except clause of ``tree``, in the order of ``ast.walk`` (breadth first), walking
    statements only: the tenth of the nodes that can hold one (walking every node was most of
    the check's time)."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.ExceptHandler):
            yield node
        todo.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, _BLOCKS))


def _message_reads(module: str, source: str) -> list[str]:
    """Places in ``source`` that read the text of a caught exception."""
    found: list[str] = []
    if "except" not in source:  # no handler without the keyword: no parse (most modules)
        return found
    for handler in _handlers(ast.parse(source)):
        if handler.name is None:
            continue
        for node in ast.walk(handler):
            text_call = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("str", "format")
                and any(isinstance(a, ast.Name) and a.id == handler.name for a in node.args)
            )
            text_attribute = (
                isinstance(node, ast.Attribute)
                and node.attr in ("message", "args", "__str__")
                and isinstance(node.value, ast.Name)
                and node.value.id == handler.name
            )
            if text_call or text_attribute:
                found.append(f"{module}:{getattr(node, 'lineno', '?')}")
    return found


@check("ERR-003")
def check_errors_name_requirements(ctx: CheckContext) -> None:
    """ERR-003: each refusal names, in its ``requirement``, an id of this specification."""

    def body(store: LedgerStore) -> None:
        _prepare(store)
        known = active_ids()
        for scenario in _scenarios(store):
            try:
                scenario.call(store)
            except LedgerError as error:  # of any kind: a wrong kind is ERR-001's (issue 35)
                if getattr(error, "requirement", None) not in known:
                    fail("ERR-003", f"{scenario.name}: the error names no requirement id "
                         f"(refused as {error.kind!r} with requirement "
                         f"{getattr(error, 'requirement', None)!r})")
            # accepted, or raising what is no LedgerError: ERR-001 judges the refusal itself

    run_once(ctx, body)


@check("ERR-004")
def check_refusals_change_nothing(ctx: CheckContext) -> None:
    """ERR-004: after any refusal the ledgers read exactly as before."""

    def body(store: LedgerStore) -> None:
        _prepare(store)
        everything = ["c", "i", "x", "u"]
        for scenario in _scenarios(store):
            before = state_digest(store, everything)
            try:
                scenario.call(store)
            except LedgerError:
                pass
            else:
                continue  # ERR-001 fails a store that accepts these
            changed = first_difference(before, state_digest(store, everything))
            if changed is not None:
                fail("ERR-004", f"the refusal of {scenario.name} changed the ledger at {changed}")
        head = store.head("x")  # 0 unless the store accepted a call ERR-001 refuses
        placed = accepted(partial(store.append, "x", [draft("n")]), "ERR-004",
                          "append of an eventId only refused calls carried")
        if placed[0].seq != head + 1:
            fail("ERR-004", f"a refused call consumed a seq: the append after the refusals got "
                 f"seq {placed[0].seq} at head {head}, not {head + 1}")

    run_once(ctx, body)


@check("ERR-005")
def check_conflict_carries_head(ctx: CheckContext) -> None:
    """ERR-005: a conflict for an expected head carries the head the store holds."""

    def body(store: LedgerStore, head: int, wrong: int) -> None:
        if head:
            store.append("c", drafts("c", head))
        if wrong == head:
            return
        error = refused(partial(store.append, "c", [draft("n")], expected_head=wrong),
                        "conflict", "ERR-005", f"expected head {wrong} at {head}")
        if not isinstance(error, ConflictError) or error.actual != head:
            fail("ERR-005", f"conflict carries {getattr(error, 'actual', None)!r}, not {head}")

    run_property(ctx, body, st.integers(0, 5), st.integers(0, 8))


HOSTILE_CALLS: tuple[tuple[str, Callable[[Any], object]], ...] = (
    ("append to None", lambda s: s.append(None, [draft("n")])),
    ("append to bytes", lambda s: s.append(b"c", [draft("n")])),
    ("append None", lambda s: s.append("c", None)),
    ("append a generator", lambda s: s.append("c", (d for d in [draft("n")]))),
    ("append a wire dict", lambda s: s.append("c", [{"eventId": "n"}])),
    ("append a payload of 2**63", lambda s: s.append("c", [draft("n", 2**63)])),
    ("append a payload of -2**64", lambda s: s.append("c", [draft("n", -(2**64))])),
    ("append a payload with a self-reference", lambda s: s.append("c", [draft("n", _loop())])),
    ("append at expected head 2**64", lambda s: s.append("c", [draft("n")], expected_head=2**64)),
    ("append at expected head '0'", lambda s: s.append("c", [draft("n")], expected_head="0")),
    ("read from 2**64", lambda s: s.read("c", from_seq=2**64)),
    ("read to 2**70", lambda s: s.read("c", to_seq=2**70)),
    ("read limit 10**30", lambda s: s.read("c", limit=10**30)),
    ("read limit '5'", lambda s: s.read("c", limit="5")),
    ("read from None", lambda s: s.read("c", from_seq=None)),
    ("head of None", lambda s: s.head(None)),
    ("head of a lone surrogate", lambda s: s.head("\udfff")),
    ("export of 42", lambda s: s.export_conversation(42)),
    ("import of None", lambda s: s.import_conversation(None)),
    ("import of text", lambda s: s.import_conversation("{}")),
    ("import of a list", lambda s: s.import_conversation([1, 2])),
    ("import of seq 2**53-1", lambda s: s.import_conversation(archive("z", [
        {**wires("z", [draft("z")])[0], "seq": 2**53 - 1}]))),
    ("import of 10000 nested arrays", lambda s: s.import_conversation(
        archive("z", wires("z", [draft("z")])).replace(b'"value":null', b'"value":'
                                                       + b"[" * 10_000 + b"]" * 10_000))),
)
"""Calls with hostile arguments; each must succeed or raise a LedgerError (ERR-006)."""


def _loop() -> Any:
    """A list that contains itself: not a JSON value."""
    items: list[object] = []
    items.append(items)
    return items


@check("ERR-006")
def check_no_raw_exceptions(ctx: CheckContext) -> None:
    """ERR-006: hostile arguments get a typed ledger error (or a result), never a raw exception."""

    def body(store: LedgerStore) -> None:
        _prepare(store)
        loose = untyped(store)
        for name, call in HOSTILE_CALLS:
            try:
                call(loose)
            except LedgerError:
                continue
            except Exception as error:
                fail("ERR-006", f"{name}: a raw {error!r} reached the caller")
        empty = accepted(partial(store.read, "c", from_seq=2**64), "ERR-006", "read from 2**64")
        if empty.items or empty.next_seq is not None:
            fail("ERR-006", "a read far beyond the head was not an empty page")

    run_once(ctx, body)
