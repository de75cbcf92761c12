"""Integers of 10^5 decimal digits anywhere: a typed refusal, never an untyped failure (issue 36).

Python refuses to convert an integer of more than 4,300 digits to decimal
text (``sys.int_info.str_digits_check_threshold``), so an error message that
formats such an integer with ``repr``, ``str`` or an f-string raises
``ValueError`` while the store is refusing the call: over the wire that was
an ``internal`` reply (WIR-049). Here every operation of the reference stores
(memory, SQLite, PostgreSQL) gets the integer in each argument position and
inside drafts, definitions and cursors, in process; each call must return or
raise a :class:`~convledger.errors.LedgerError` whose text can be formed. Over
the wire the check ``wire_huge_integers`` sends it to every request of the
reference servers and the Node server.
"""

from __future__ import annotations

import inspect
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from convledger.capabilities import OPERATIONS
from convledger.errors import LedgerError
from convledger.memory import MemoryStore
from convledger.projections.named import counting
from convledger.sqlite import new_file_store
from convledger_conformance.registry import all_checks
from convledger_conformance.runner import run_suite
from convledger_conformance.support import STAMP, draft
from convledger_conformance.wire.client import WireStoreFactory

HUGE = 10**100_000 - 1
DSN = os.environ.get("CONVLEDGER_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


def _postgres() -> Any:
    from convledger.postgres import new_schema_store

    return new_schema_store()


STORES: dict[str, Callable[[], Any]] = {
    "memory": MemoryStore, "sqlite": new_file_store, "postgres": _postgres,
}

SAMPLE: dict[str, dict[str, Any]] = {
    "conversation_id": {"conversation_id": "h"},
    "drafts": {"drafts": [draft("h-1", 1)]},
    "expected_head": {"expected_head": 0},
    "from_seq": {"from_seq": 1}, "to_seq": {"to_seq": 2}, "limit": {"limit": 10},
    "archive": {"archive": b"{}"}, "projections": {"projections": ()},
    "transition": {"transition": None}, "event_id": {"event_id": "h-e"},
    "occurred_at": {"occurred_at": STAMP}, "run_id": {"run_id": "r"},
    "after": {"after": None}, "definition": {"definition": counting()},
    "max_events": {"max_events": 10}, "name": {"name": "n"}, "data": {"data": b"x"},
    "media_type": {"media_type": "text/plain"}, "operation": {"operation": {}},
    "reference": {"reference": "r"}, "authorize": {"authorize": lambda _: True},
    "reason": {"reason": "deleted"}, "bundle": {"bundle": b"\xa0"},
}
"""A legal-looking value of each parameter name of the store interface."""

NESTED: list[list[Any]] = [
    [attrs.evolve(draft("h-2", 1), schema_version=HUGE)], [draft("h-3", HUGE)],
    [attrs.evolve(draft("h-4", 1), event_id=HUGE)], [HUGE],
]
"""Drafts holding HUGE in a member, and HUGE in place of a draft."""


def _calls(store: Any) -> Iterator[tuple[str, Callable[[], object]]]:
    """Each operation the store declares, with HUGE in each argument position in turn."""
    for capability, operations in OPERATIONS.items():
        if capability not in store.capabilities:
            continue
        for operation in operations:
            method = getattr(store, operation.method, None)
            if method is None:
                continue
            parameters = [p for p in inspect.signature(method).parameters.values()
                          if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if any(p.name not in SAMPLE for p in parameters):
                continue  # fact_rows' row objects: in-process only, built by the host
            base = {p.name: SAMPLE[p.name][p.name] for p in parameters}
            for target in parameters:
                values = [HUGE] + (NESTED if target.name == "drafts"
                                   else [])
                for value in values:
                    args = {**base, target.name: value}
                    positional = [args[p.name] for p in parameters
                                  if p.kind == p.POSITIONAL_OR_KEYWORD]
                    keywords = {p.name: args[p.name] for p in parameters
                                if p.kind == p.KEYWORD_ONLY}
                    yield (f"{operation.method}({target.name}=...)",
                           lambda m=method, a=positional, k=keywords: m(*a, **k))
    for label, call in (("definition version", lambda: store.catch_up(
            "h", attrs.evolve(counting(), version=2), max_events=HUGE)),):
        if hasattr(store, "catch_up"):
            yield label, call


@pytest.mark.parametrize("kind", sorted(STORES))
def test_every_operation_refuses_a_huge_integer_with_a_typed_error(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """Each call returns or raises a LedgerError whose text forms; nothing else escapes."""
    if kind == "postgres":
        os.environ["CONVLEDGER_PG_DSN"] = request.getfixturevalue("pg_dsn")
    store = STORES[kind]()
    outcomes: dict[str, str] = {}
    try:
        for label, call in _calls(store):
            try:
                call()
                outcomes[label] = "ok"
            except LedgerError as error:
                str(error)  # the message forms without the integer's decimal text
                outcomes[label] = error.kind
            except Exception as error:  # the bug this test exists for
                pytest.fail(f"{kind}: {label} raised {type(error).__name__}: "
                            f"{str(error)[:200]}")
    finally:
        store.close()
    assert len(outcomes) >= 40, outcomes
    assert "invalid_input" in outcomes.values()


SERVERS = {
    "memory": [sys.executable, "-m", "convledger", "serve-wire", "--store", "memory"],
    "sqlite": [sys.executable, "-m", "convledger", "serve-wire", "--store", "sqlite"],
    "postgres": [sys.executable, "-m", "convledger", "serve-wire", "--store", "postgres",
                 "--dsn", DSN],
    "node": ["node", "interop/node/server.js"],
}


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_no_wire_request_answers_internal_for_a_huge_integer(
    server: str, request: pytest.FixtureRequest
) -> None:
    """wire_huge_integers, hello's protocol, repeated keys and nesting pass on every server."""
    argv = SERVERS[server]
    if server == "postgres":
        argv = [*argv[:-1], request.getfixturevalue("pg_dsn")]
    if server == "node" and shutil.which("node") is None:
        pytest.skip("node is not on PATH")  # as tests/test_wire_node.py
    names = {"wire_huge_integers", "wire_hello_protocol", "wire_repeated_map_keys",
             "wire_nesting_cap", "wire_draft_members", "wire_request_members"}
    checks = [item for item in all_checks() if item.name in names]
    factory = WireStoreFactory(argv)
    try:
        report = run_suite(factory, profile="smoke", derandomize=True, checks=checks)
    finally:
        factory.close()
    assert report.ok, report.render()
